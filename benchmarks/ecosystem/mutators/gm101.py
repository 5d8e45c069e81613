"""GM101: a stop-gradient on the loss path (``.detach()`` on a module output or the prediction),
and its benign twin, the detached target."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import forward_sites, loss_calls


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    for _, call, _ in forward_sites(src):
        yield Edit({call: _detached(call)}, f"`.detach()` on `{src.code(call.func)}(...)` on the loss path")


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
