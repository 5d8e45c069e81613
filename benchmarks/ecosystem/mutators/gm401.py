"""GM401: a loss switched from mean to sum reduction: ``reduction='sum'`` on a torch loss, or a
``.mean()`` of a function computing a loss turned into ``.sum()``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import (assigned_names, kwarg, loss_calls, method_calls,
                                                     scope_of)

_SUM = cst.SimpleString('"sum"')


def mean_to_sum(src: Source) -> Iterator[Edit]:
    for call in loss_calls(src):
        given = kwarg(call, "reduction")
        if given is None:
            new = call.with_changes(args=[*call.args, cst.Arg(_SUM, keyword=cst.Name("reduction"))])
        elif isinstance(given.value, cst.SimpleString) and "mean" in given.value.value:
            new = call.deep_replace(given.value, _SUM)
        else:
            continue
        yield Edit({call: new}, f"`{src.code(call.func)}` reduction mean -> sum")


def mean_method_to_sum(src: Source) -> Iterator[Edit]:
    """``.mean()`` (no arguments: the whole reduction) in a function whose name says it computes
    a loss, or in a statement binding a name that says so, becomes ``.sum()``."""
    for call in method_calls(src.module, "mean"):
        if call.args:
            continue
        scope = scope_of(src, call)
        stmt = src.statement(call)
        named = isinstance(scope, cst.FunctionDef) and "loss" in scope.name.value.lower() \
            or any("loss" in n.lower() for n in assigned_names(stmt))
        if named:
            yield Edit({call.func.attr: cst.Name("sum")}, f"`{src.code(call)}` -> `.sum()`")


OPERATORS = [
    Operator("gm401.mean-to-sum", "GM401", mean_to_sum, ("loss", "Loss")),
    Operator("gm401.mean-method-to-sum", "GM401", mean_method_to_sum, ("loss",)),
]
