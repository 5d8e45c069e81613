"""A tiny name -> factory registry shared by losses, encoders and optimisers."""
from collections import defaultdict

_TABLES = defaultdict(dict)


def register(kind, name):
    def deco(obj):
        if name in _TABLES[kind]:
            raise KeyError(f"{kind}:{name} registered twice")
        _TABLES[kind][name] = obj
        return obj
    return deco


def lookup(kind, name):
    try:
        return _TABLES[kind][name]
    except KeyError:
        raise KeyError(f"unknown {kind} '{name}', have {sorted(_TABLES[kind])}")


def build(kind, name, *args, **kwargs):
    return lookup(kind, name)(*args, **kwargs)
