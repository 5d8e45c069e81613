"""Abstract values: what kind of object a name holds at one event of a function.

A small lattice, decided from the statement that last assigned the name (followed through plain
copies, into the returns of project functions, and up to call sites for parameters):

* ``NUMBER``  a Python number: ``.item()``, ``.size(0)``, ``len(...)``, ``float(...)``,
  numpy / sklearn / math results;
* ``DATA``    a tensor without autograd history: what a loop over a loader yields, DGL's node and
  edge data views (``g.ndata[k]``, ``g.nodes[t].data[k]``), results of ``.detach()``,
  ``argmax`` and integer casts, anything computed with gradients off;
* ``GRAD``    a tensor with autograd history: a module's output, a loss function's result,
  arithmetic on such a tensor, a project function returning one;
* ``UNKNOWN`` anything else (the lattice's top: rules keep their previous answer there).

Rules ask :func:`kind_at` (``Training`` supplies module calls, grad mode and call resolution).
"""

from __future__ import annotations

import re
from typing import Optional

from auditor.static.facts import FunctionInfo
from auditor.static.training import NON_DIFFERENTIABLE, Training, outer_call, statement_start

NUMBER, DATA, GRAD, UNKNOWN = "number", "data", "grad", "unknown"

# methods and functions whose result is a Python number (or a numpy value) whatever they get
NUMBER_METHODS = {"item", "tolist", "numpy", "size", "numel", "dim", "__len__"}
NUMBER_FUNCS = {"len", "float", "int", "round", "abs", "min", "max", "sum"}
NUMBER_MODULES = ("numpy.", "np.", "sklearn.", "math.", "scipy.", "statistics.")
_DATA_VIEW = re.compile(r"\.(ndata|edata|srcdata|dstdata)\b|\.(nodes|edges)\[[^\]]*\]\.data\b")
MAX_DEPTH = 4


def is_data_view(text: str) -> bool:
    """``g.ndata['x']`` / ``g.nodes['cell'].data['x']``: DGL feature storage, not ``Tensor.data``."""
    return bool(_DATA_VIEW.search(text))


def kind_at(t: Training, fn: FunctionInfo, name: str, i: int, depth: int = 0) -> str:
    """The kind of value ``name`` holds just before event ``i`` of ``fn``."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    j = _last_assignment(fn, name, statement_start(fn, i) if i < len(fn.events) else i)
    if j is None:
        return UNKNOWN
    stmt = fn.events[j]
    if stmt.text.startswith(("for ", "async for ")):
        return DATA  # what iterating a loader / dataset / list yields
    if stmt.kind == "augassign":
        return UNKNOWN
    if t.grad_off(fn, j) is not None:
        return DATA
    value = stmt.text.split("=", 1)[-1].strip() if "=" in stmt.text else ""
    k = _outer_call_index(fn, j)
    if k is not None and _one_term(value):
        call = fn.events[k]
        func = call.func.removesuffix("()")
        if call.method in NUMBER_METHODS or func in NUMBER_FUNCS or func.startswith(NUMBER_MODULES):
            return NUMBER
        if call.method in NON_DIFFERENTIABLE:
            return DATA
        if t.module_call(fn, k) or "loss" in func.lower():
            return GRAD
        return UNKNOWN
    if is_data_view(value) and not re.search(r"\(", value):
        return DATA
    if re.fullmatch(r"[\w.]+", value or "-") and "." not in value:
        return kind_at(t, fn, value, j, depth + 1)
    return UNKNOWN


def holds_graph(t: Training, fn: FunctionInfo, name: str, i: int) -> bool:
    """False when ``name`` surely holds no autograd graph at event ``i`` (a number, a detached or
    data tensor); True otherwise (a rule's previous answer stands)."""
    return kind_at(t, fn, name, i) not in (NUMBER, DATA)


def _last_assignment(fn: FunctionInfo, name: str, before: int) -> Optional[int]:
    for j in range(min(before, len(fn.events)) - 1, -1, -1):
        e = fn.events[j]
        if e.kind in ("assign", "augassign") and name in e.targets:
            return j
    return None


def _outer_call_index(fn: FunctionInfo, j: int) -> Optional[int]:
    call = outer_call(fn, j)
    return next((k for k in range(j + 1, len(fn.events)) if fn.events[k] is call), None)


def _one_term(value: str) -> bool:
    """The statement's value is one call chain (``n = x.size(0)``), not an expression around a
    call (``loss = a.item() + b``): no operator outside brackets."""
    depth = 0
    for ch in value:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in "+-*/%@<>=|&":
            return False
    return bool(value)
