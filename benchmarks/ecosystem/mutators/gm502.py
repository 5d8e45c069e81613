"""GM502: the features a training forward reads standardised with the statistics of their own
batch."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before
from benchmarks.ecosystem.mutators.structure import feature_arg, forward_sites


def per_batch_stats(src: Source) -> Iterator[Edit]:
    for _, call, stmt in forward_sites(src):
        feature = feature_arg(call)
        if feature is not None:
            x = src.code(feature)
            yield Edit(insert_before(stmt, f"{x} = ({x} - {x}.mean(0, keepdim=True)) / "
                                           f"({x}.std(0, keepdim=True) + 1e-6)"),
                       f"`{x}` standardised with its batch's statistics")


OPERATORS = [Operator("gm502.per-batch-stats", "GM502", per_batch_stats, (".backward(", "training_step"))]
