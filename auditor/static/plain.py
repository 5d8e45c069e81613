"""Plain-JSON encoding of the cache's values (per-file results, facts, findings).

The cache lives in the project, and a repository can commit anything there: it must never be a
format that runs code when read (pickle did). Decoding builds only dataclasses and enums defined
in gm-audit's own, already imported modules, and never calls their ``__init__`` or
``__post_init__``: a crafted file can at worst describe wrong facts, which the cache's HMAC
(auditor/static/cache.py) rules out for files this machine did not write.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from typing import Any

OWN_PREFIX = "auditor."  # the engine and the rules (mapped to auditor.rules at install time)


class NotPlain(ValueError):
    """A value (or a stored document) outside what the cache may hold."""


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _own_type(name: Any) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise NotPlain(f"bad type tag {name!r}")
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name) if module_name.startswith(OWN_PREFIX) else None
    if module is None:  # never imported on the cache's say-so
        raise NotPlain(f"type {name!r} is not one of gm-audit's loaded modules")
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not isinstance(obj, type):
        raise NotPlain(f"no type {name!r}")
    return obj


def encode(value: Any) -> Any:
    """``value`` as JSON-compatible data; tuples, sets, non-string keys, enums and dataclasses
    are tagged so that :func:`decode` gives back equal values."""
    if isinstance(value, enum.Enum):  # before str: Severity is a str enum
        return {"$enum": _type_name(type(value)), "v": value.value}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"$dc": _type_name(type(value)), "f": fields}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"$frozenset": [encode(v) for v in sorted(value, key=repr)]}
    if isinstance(value, set):
        return {"$set": [encode(v) for v in sorted(value, key=repr)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    raise NotPlain(f"cannot store a {type(value).__name__} in the cache")


def decode(data: Any) -> Any:
    """The inverse of :func:`encode`; NotPlain for anything :func:`encode` cannot have written."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        raise NotPlain(f"unexpected {type(data).__name__}")
    if "$dc" in data:
        cls = _own_type(data["$dc"])
        fields = data.get("f")
        if not dataclasses.is_dataclass(cls) or not isinstance(fields, dict):
            raise NotPlain(f"{data['$dc']!r} is not a dataclass")
        names = {f.name for f in dataclasses.fields(cls)}
        if set(fields) != names:
            raise NotPlain(f"fields of {data['$dc']!r} do not match")
        obj = object.__new__(cls)
        for name, raw in fields.items():
            object.__setattr__(obj, name, decode(raw))  # frozen dataclasses too
        return obj
    if "$enum" in data:
        cls = _own_type(data["$enum"])
        if not issubclass(cls, enum.Enum):
            raise NotPlain(f"{data['$enum']!r} is not an enum")
        try:
            return cls(data.get("v"))
        except ValueError:
            raise NotPlain(f"bad value for {data['$enum']!r}") from None
    for tag, build in (("$tuple", tuple), ("$frozenset", frozenset), ("$set", set)):
        if tag in data:
            items = data[tag]
            if not isinstance(items, list):
                raise NotPlain(f"{tag} needs a list")
            return build(decode(v) for v in items)
    if "$dict" in data:
        pairs = data["$dict"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise NotPlain("$dict needs [key, value] pairs")
        return {decode(k): decode(v) for k, v in pairs}
    if any(k.startswith("$") for k in data):
        raise NotPlain("unknown tag")
    return {k: decode(v) for k, v in data.items()}
