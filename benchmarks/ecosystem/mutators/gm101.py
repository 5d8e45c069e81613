"""GM101: a stop-gradient on the loss path (``.detach()`` on a module output or the prediction),
and its benign twin, the detached target."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, assigned_names, forward_sites,
                                                     grad_survives_detach, loss_calls)


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    """Only where another module's gradient still reaches the loss: detaching the loss's only
    source (``loss = model(g, x)``) makes ``backward`` raise instead of training silently."""
    for tl, call, stmt in forward_sites(src):
        what = f"`.detach()` on `{src.code(call.func)}(...)` on the loss path"
        first = _first_unpacked(stmt, call)
        whole = isinstance(stmt, cst.SimpleStatementLine) and assign_value(stmt) is call
        detached = {first} if first else assigned_names(stmt) if whole else set()
        if not grad_survives_detach(src, tl, call, detached):
            continue
        if first is None:
            yield Edit({call: _detached(call)}, what)
        else:  # a tuple has no .detach(): detach the first output after unpacking
            yield Edit(insert_after(stmt, f"{first} = {first}.detach()"), what)


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
    Operator("gm101.detach-module-output", "GM101", detach_module_output, (".backward(",)),
    Operator("gm101.detach-prediction", "GM101", detach_prediction, ("loss",)),
    Operator("gm101.detach-target", "GM101", detach_target, ("loss",), benign=True),
]
