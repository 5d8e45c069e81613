"""Abstract values: what kind of object a name holds at one event of a function.

A small lattice, decided from the statement that last assigned the name (followed through plain
copies ``a = b``); instances of project classes are :meth:`Training.origins`' answer, with the
factory call sites that made them and one level of call-site context for parameters:

* ``NUMBER``  a Python number: ``.item()``, ``.size(0)``, ``len(...)``, ``float(...)``,
  numpy / sklearn / math results;
* ``DATA``    a tensor without autograd history: what a loop over a loader yields, DGL's node and
  edge data views (``g.ndata[k]``, ``g.nodes[t].data[k]``), results of ``.detach()``,
  ``argmax`` and integer casts, anything computed with gradients off;
* ``GRAD``    a tensor with autograd history: a module's output, a loss function's result,
  arithmetic on such a tensor, a project function returning one;
* ``UNKNOWN`` anything else (the lattice's top: rules keep their previous answer there).

Rules ask :func:`kind_at` (``Training`` supplies module calls, grad mode and call resolution).

Constants flow through configuration with :class:`Constants`, which a rule's per-file visitor
feeds as it walks (dict literals, ``dict(BASE, k=v)``, ``cfg.get("k", default)``).
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

import libcst as cst

from auditor.static.dataflow import definitions
from auditor.static.facts import FunctionInfo
from auditor.static.training import NON_DIFFERENTIABLE, Training, outer_call, statement_start

NUMBER, DATA, GRAD, UNKNOWN = "number", "data", "grad", "unknown"
UNKNOWN_VALUE = object()  # what :class:`Constants` answers for a value it cannot know

# methods and functions whose result is a Python number (or a numpy value) whatever they get
NUMBER_METHODS = {"item", "tolist", "numpy", "size", "numel", "dim", "__len__"}
NUMBER_FUNCS = {"len", "float", "int", "bool"}  # (`sum`, `abs`, `max` of tensors are tensors)
NUMBER_MODULES = ("numpy.", "np.", "sklearn.", "math.", "scipy.", "statistics.")
_DATA_VIEW = re.compile(r"\.(ndata|edata|srcdata|dstdata)\b|\.(nodes|edges)\[[^\]]*\]\.data\b")
MAX_DEPTH = 4


# a product over the node dimension (`z.T @ z`, `torch.mm(z1.T, z2)`): a feature x feature matrix,
# the same size whatever the batch; an identity matrix
_FIXED_SIZE = re.compile(
    r"(\.T|\.t\(\)|\.transpose\(\s*0\s*,\s*1\s*\))\s*@|"
    r"\b(mm|matmul)\(\s*[\w.]+(\.T|\.t\(\))\s*,|\.eye\(")
# `c = c / n`, `c = c.to(device)`: the same size as the tensor it rescales or moves
_SAME_SIZE = re.compile(r"^\s*([\w.]+)\s*([/*]\s*[\w.()\[\]]+|\.to\([^()]*\))\s*$")


def fixed_size(text: str) -> bool:
    """An expression whose size does not grow with the number of nodes in the batch (a Gram /
    cross-correlation matrix, an identity)."""
    return bool(_FIXED_SIZE.search(text))


def fixed_size_name(fn: FunctionInfo, name: str, index: int, depth: int = 0) -> bool:
    """Every value ``name`` may hold at statement ``index`` is :func:`fixed_size`, directly or
    rescaled (``c = torch.mm(z.T, z)`` then ``c = c / n``)."""
    found = definitions(fn, name, index)
    if not found or depth > MAX_DEPTH:
        return False
    for stmt in found:
        value = stmt.text.split("=", 1)[-1]
        same = _SAME_SIZE.match(value)
        if not (fixed_size(value) or same is not None
                and fixed_size_name(fn, same.group(1), stmt.index, depth + 1)):
            return False
    return True


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


class Constants:
    """Constants of one file as a rule's visitor meets them (source order): module-level and
    local ``NAME = <constant>`` (parameters shadow them: a call decides). Values are
    literals, dict literals, ``dict(BASE, k=v)``; expressions ``X["k"]``, ``X.get("k", d)``,
    ``-x`` evaluate through them. ``evaluate`` answers :data:`UNKNOWN_VALUE` when it cannot."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = [{}]
        self.fallback = False

    # -- fed by a visitor, in source order -----------------------------------------------------
    def enter_function(self, node: cst.FunctionDef) -> None:
        # a parameter holds what each call passes: its default is no constant of the body
        params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        self.scopes.append({p.name.value: UNKNOWN_VALUE for p in params})

    def leave_function(self) -> None:
        self.scopes.pop()

    def assigned(self, node: Union[cst.Assign, cst.AugAssign]) -> None:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Name):
                if isinstance(node, cst.Assign):
                    self.bind(target.value, node.value)
                else:
                    self.forget(target.value)

    def bind(self, name: str, node: cst.BaseExpression) -> None:
        value = self.evaluate(node)
        if value is UNKNOWN_VALUE:
            self.forget(name)
        else:
            self.scopes[-1][name] = value

    def forget(self, name: str) -> None:
        """``name`` changed in a way not followed (``w += step``): no constant any more."""
        for scope in self.scopes:
            scope.pop(name, None)

    def evaluate(self, node: cst.BaseExpression, fallback: bool = False) -> Any:
        """``fallback``: ``m.get("k", d)`` on a mapping not known here answers its default ``d``
        (what the run uses unless its configuration sets ``k``)."""
        self.fallback = fallback
        return self._value(node)

    def _value(self, node: cst.BaseExpression) -> Any:
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                return float(node.value)
            except ValueError:
                return UNKNOWN_VALUE
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._value(node.expression)
            return -inner if isinstance(inner, float) else UNKNOWN_VALUE
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            for scope in reversed(self.scopes):
                if node.value in scope:
                    return scope[node.value]
            return UNKNOWN_VALUE
        if isinstance(node, cst.Dict):
            out: dict[Any, Any] = {}
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    return UNKNOWN_VALUE  # `**other`: keys unknown
                key = self._value(element.key)
                if key is UNKNOWN_VALUE:
                    return UNKNOWN_VALUE
                out[key] = self._value(element.value)
            return out
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index):
            base = self._value(node.value)
            key = self._value(node.slice[0].slice.value)
            return base.get(key, UNKNOWN_VALUE) if isinstance(base, dict) else UNKNOWN_VALUE
        if isinstance(node, cst.Call):
            return self._call(node)
        return UNKNOWN_VALUE

    def _call(self, node: cst.Call) -> Any:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "dict":
            out: dict[Any, Any] = {}
            for arg in node.args:
                if arg.keyword is not None:
                    out[arg.keyword.value] = self._value(arg.value)
                    continue
                base = self._value(arg.value)
                if not isinstance(base, dict):
                    return UNKNOWN_VALUE
                out.update(base)
            return out
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and node.args:
            base = self._value(func.value)
            key = self._value(node.args[0].value)
            default = self._value(node.args[1].value) if len(node.args) > 1 else None
            if isinstance(base, dict) and key is not UNKNOWN_VALUE:
                return base.get(key, default)
            if self.fallback and base is UNKNOWN_VALUE and len(node.args) > 1:
                return default
        return UNKNOWN_VALUE
