"""GM401: a reconstruction loss switched from mean to sum reduction, where the number of rows
it sums depends on the data (rows selected by a mask or an index: ``loss(x[mask], y[mask])``).
A sum over a batch of fixed size only rescales the learning rate, which is not the rule's bug."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import calls, kwarg, loss_calls, scope_of

_SUM = cst.SimpleString('"sum"')


def _selected(call: cst.Call) -> bool:
    return any(isinstance(a.value, cst.Subscript) for a in call.args if a.keyword is None)


def _sums_selected_rows(src: Source, call: cst.Call) -> bool:
    """The loss is applied to selected rows: a functional loss called on them, or a loss
    module whose name is called on them in this file."""
    if _selected(call):
        return True
    stmt = src.statement(call)
    body = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if not isinstance(body, cst.Assign) or len(body.targets) != 1 or body.value is not call:
        return False
    name = src.code(body.targets[0].target)
    # the module's calls in its own function; where that function only passes it on
    # (`train(..., criterion)`), the calls of the name elsewhere in the file
    local = [c for c in calls(scope_of(src, stmt)) if src.code(c.func) == name]
    uses = local or [c for c in calls(src.module) if src.code(c.func) == name]
    return any(_selected(c) for c in uses)


def mean_to_sum(src: Source) -> Iterator[Edit]:
    for call in loss_calls(src):
        if not _sums_selected_rows(src, call):
            continue
        given = kwarg(call, "reduction")
        if given is None:
            new = call.with_changes(args=[*call.args, cst.Arg(_SUM, keyword=cst.Name("reduction"))])
        elif isinstance(given.value, cst.SimpleString) and "mean" in given.value.value:
            new = call.deep_replace(given.value, _SUM)
        else:
            continue
        yield Edit({call: new}, f"`{src.code(call.func)}` reduction mean -> sum")


OPERATORS = [Operator("gm401.mean-to-sum", "GM401", mean_to_sum, ("loss", "Loss"))]
