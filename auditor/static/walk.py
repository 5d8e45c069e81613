"""One read-only, pre-order traversal of a libcst tree, dispatching to every visitor.

libcst's own ``visit`` rebuilds every node on the way back up (it is built for transformers):
that reconstruction cost about three times the parse. Linting never replaces nodes, so this walk
only reads. Children are visited in libcst's own order (read from each node class's
``_visit_and_replace_children``), so pre-order is source order, as the positions mapping and
the events' order need; whitespace and punctuation nodes are skipped (no rule looks at them).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Callable, Iterable, Iterator

import libcst as cst

from auditor.static.visitor import Visitor

_VISIT_CALL = re.compile(
    r"visit_(?:required|optional|sequence|sentinel|body_sequence|iterable)\(\s*self,\s*\"(\w+)\""
)
# tokens and formatting: never an expression inside
_TRIVIA = frozenset({"lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma",
                     "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
                     "colon", "equal", "dot", "first_colon", "second_colon", "operator",
                     "asynchronous", "star", "posonly_ind", "relative", "trailing_comma"})
_ORDER: dict[type, tuple[str, ...]] = {}


def _is_trivia(name: str) -> bool:
    return name in _TRIVIA or "whitespace" in name


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields holding child nodes, in the order libcst itself visits them."""
    order = _ORDER.get(node_type)
    if order is None:
        names = [f.name for f in dataclasses.fields(node_type)]
        method = node_type.__dict__.get("_visit_and_replace_children")
        if method is not None:
            try:
                seen = list(dict.fromkeys(_VISIT_CALL.findall(inspect.getsource(method))))
            except (OSError, TypeError):
                seen = []
            names = seen + [n for n in names if n not in seen]
        order = tuple(n for n in names if not _is_trivia(n))
        _ORDER[node_type] = order
    return order


def is_node(value: object) -> bool:
    """``isinstance(value, cst.CSTNode)``, answered per type from a table: libcst's node classes
    are abstract base classes, whose isinstance checks take the slow path (millions a tree)."""
    t = type(value)
    known = _IS_NODE.get(t)
    if known is None:
        known = _IS_NODE[t] = isinstance(value, cst.CSTNode)
    return known


_IS_NODE: dict[type, bool] = {}


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes below ``node``, in the order :func:`walk` visits them."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        here = stack.pop()
        if here is not node:
            yield here
        below: list[cst.CSTNode] = []
        for name in child_fields(type(here)):
            value = getattr(here, name)
            if is_node(value):
                below.append(value)
            elif isinstance(value, (tuple, list)):
                below += [item for item in value if is_node(item)]
        stack += reversed(below)


Handlers = tuple[list[Callable], list[Callable], dict[str, tuple[list[Callable], list[Callable]]]]


def walk(module: cst.Module, visitors: Iterable[Visitor]) -> None:
    """Call each visitor's ``visit_<Type>`` before a node's children and ``leave_<Type>`` after,
    in the order the visitors are given (the engine's collector first); libcst's attribute
    visitors too (``visit_<Type>_<field>`` / ``leave_<Type>_<field>`` around that field)."""
    visits: dict[str, list[Callable]] = {}
    for v in visitors:
        for name, method in v.get_visitors().items():
            visits.setdefault(name, []).append(method)
    table: dict[type, Handlers] = {}

    def handlers(t: type) -> Handlers:
        found = table.get(t)
        if found is None:
            fields = {name: (visits.get(f"visit_{t.__name__}_{name}", []),
                             visits.get(f"leave_{t.__name__}_{name}", []))
                      for name in child_fields(t)}
            found = table[t] = (visits.get(f"visit_{t.__name__}", []), visits.get(f"leave_{t.__name__}", []),
                                {name: pair for name, pair in fields.items() if pair[0] or pair[1]})
        return found

    def go(node: cst.CSTNode) -> None:
        t = type(node)
        enter, leave, around = handlers(t)
        for fn in enter:
            fn(node)
        for name in child_fields(t):
            value = getattr(node, name)
            pair = around.get(name) if around else None
            for fn in pair[0] if pair else ():
                fn(node)
            if is_node(value):
                go(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if is_node(item):
                        go(item)
            for fn in pair[1] if pair else ():
                fn(node)
        for fn in leave:
            fn(node)

    go(module)
