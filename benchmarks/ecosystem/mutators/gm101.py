"""GM101: a stop-gradient on the way to the loss: ``.detach()`` on the output of a module call of
a training step or of a module's forward, or on the prediction of a loss; benign twin, the
detached target. Placed wherever the syntax allows: a detach that cuts nothing (a value only
printed), or cuts the loss's only graph (a crash), is the oracle's to tell."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, assigned_names, forward_methods,
                                                     forward_sites, in_body, loss_calls, statements,
                                                     submodule_call)


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    """Each module call of a training step: its output detached where it is made."""
    for _, call, stmt in forward_sites(src):
        what = f"`.detach()` on `{src.code(call.func)}(...)` in the training step"
        first = _first_unpacked(stmt, call)
        if first is not None:  # a tuple has no .detach(): detach the first output after unpacking
            yield Edit(insert_after(stmt, f"{first} = {first}.detach()"), what)
        else:
            yield Edit({call: _detached(call)}, what)


def detach_submodule_output(src: Source) -> Iterator[Edit]:
    """Inside what a module's forward runs (``forward`` and the methods it calls on ``self``):
    each ``h = self.layer(...)`` followed by ``h = h.detach()``."""
    for method, methods in forward_methods(src):
        for stmt in statements(method.body):
            value, names = assign_value(stmt), assigned_names(stmt)
            if isinstance(value, cst.Call) and submodule_call(value, methods) and len(names) == 1 \
                    and isinstance(stmt.body[0], cst.Assign) and in_body(src, stmt):
                (name,) = names
                yield Edit(insert_after(stmt, f"{name} = {name}.detach()"),
                           f"`.detach()` on `{src.code(value.func)}(...)` in `{method.name.value}`")


def _first_unpacked(stmt: cst.CSTNode, call: cst.Call) -> Optional[str]:
    """``a`` when ``stmt`` is ``a, b = call``."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if isinstance(small, cst.Assign) and small.value is call and isinstance(small.targets[0].target, cst.Tuple):
        first = small.targets[0].target.elements[0].value
        return first.value if isinstance(first, cst.Name) else None
    return None


def _detach_loss_argument(src: Source, index: int, what: str) -> Iterator[Edit]:
    for call in loss_calls(src):
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) >= 2:
            arg = positional[index]
            yield Edit({arg.value: _detached(arg.value)},
                       f"`.detach()` on the {what} of `{src.code(call.func)}`")


def detach_prediction(src: Source) -> Iterator[Edit]:
    return _detach_loss_argument(src, 0, "prediction")


def detach_target(src: Source) -> Iterator[Edit]:
    return _detach_loss_argument(src, 1, "target")


OPERATORS = [
    Operator("gm101.detach-module-output", "GM101", detach_module_output, (".backward(", "training_step")),
    Operator("gm101.detach-submodule-output", "GM101", detach_submodule_output, ("def forward",)),
    Operator("gm101.detach-prediction", "GM101", detach_prediction, ("loss",)),
    Operator("gm101.detach-target", "GM101", detach_target, ("loss",), benign=True),
]
