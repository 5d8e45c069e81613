"""Reading expressions from their source text, as the program model's events keep it: the items
of a tuple or call, the entries of a dict display, the container entries an expression reads."""

from __future__ import annotations

import re


def string_literal(text: str) -> str:
    """The identifier a string literal spells (``"on_epoch_end"``), else ""."""
    return text[1:-1] if re.fullmatch(r"""(['"])\w+\1""", text) else ""


def top_level_items(value: str) -> list[str]:
    """``a, (b, c), f(d, e)`` -> its comma-separated items outside brackets."""
    items, depth, start = [], 0, 0
    for k, ch in enumerate(value):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(value[start:k])
            start = k + 1
    return [*items, value[start:]]


# `metrics["loss"]`, `out['recon']`: one entry of a container, by a literal key
_KEYED = re.compile(r"""(?<![\w.])([A-Za-z_][\w.]*)\[\s*(['"])(\w+)\2\s*\]""")
_DICT_ITEM = re.compile(r"""^\s*(['"])(\w+)\1\s*:(.*)$""", re.S)


def entry(name: str, key: str) -> str:
    """The name of one entry of a container, as :func:`entries_read` and :func:`dict_entries`
    spell it: ``metrics["loss"]``."""
    return f'{name}["{key}"]'


def entries_read(text: str) -> list[str]:
    """The container entries ``text`` reads by a literal key (``history.append(m["loss"])``)."""
    return [entry(m.group(1), m.group(3)) for m in _KEYED.finditer(text)]


def dict_entries(value: str) -> dict[str, str]:
    """The literal keys of a dict display (``{"loss": loss, **parts}``) or of ``dict(k=v)``, each
    with the expression stored there; empty for anything else."""
    value = value.strip()
    if value.startswith("{") and value.endswith("}"):
        found = (_DICT_ITEM.match(item) for item in top_level_items(value[1:-1]))
        return {m.group(2): m.group(3).strip() for m in found if m is not None}
    if value.startswith("dict(") and value.endswith(")"):
        pairs = (item.split("=", 1) for item in top_level_items(value[5:-1]) if "=" in item)
        return {k.strip(): v.strip() for k, v in pairs if re.fullmatch(r"\s*\w+\s*", k)
                and not v.startswith("=")}
    return {}


def container_items(value: str) -> list[str]:
    """What a dict display's values, or a list, tuple or set display's items, are written as
    (``{"sce": sce_loss, "mse": mse_loss}``: ``sce_loss``, ``mse_loss``); empty otherwise."""
    value = value.strip()
    if value[:1] + value[-1:] in ("[]", "()") or (value[:1] + value[-1:] == "{}" and ":" not in value):
        return [x.strip() for x in top_level_items(value[1:-1]) if x.strip()]
    return list(dict_entries(value).values())


_FOR_HEADER = re.compile(r"(?:async\s+)?for\s+.+?\s+in\s+(.+?):\s*(?:#.*)?$")


def loop_iterable(text: str) -> str:
    """What a ``for`` statement walks, from its text (its header is the first line): ``cfg.items``
    of ``for k in cfg.items:``; "" for any other statement."""
    header = _FOR_HEADER.match(text.split("\n", 1)[0])
    return header.group(1).strip() if header else ""


def outside_brackets(text: str) -> str:
    """The characters of ``text`` at bracket depth 0 (``f(a, b).x[i]`` -> ``f.x``); a closing
    bracket too many leaves the depth at 0."""
    depth, out = 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif not depth:
            out.append(ch)
    return "".join(out)
