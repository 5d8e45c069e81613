"""A tiny name -> callable registry used for steps, losses and graph transforms."""
REGISTRY = {}


def register(name):
    def deco(obj):
        if name in REGISTRY:
            raise KeyError(f"duplicate registry entry {name!r}")
        REGISTRY[name] = obj
        return obj
    return deco


def lookup(name):
    return REGISTRY[name]
