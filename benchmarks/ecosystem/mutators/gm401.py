"""GM401: a reconstruction loss switched from mean to sum reduction."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import kwarg, loss_calls

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


OPERATORS = [Operator("gm401.mean-to-sum", "GM401", mean_to_sum, ("loss", "Loss"))]
