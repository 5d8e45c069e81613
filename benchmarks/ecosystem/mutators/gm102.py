"""GM102: the training forward run with gradient mode off."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, wrap_with
from benchmarks.ecosystem.mutators.structure import forward_sites, torch_bound


def no_grad_forward(src: Source) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for _, call, stmt in forward_sites(src):
        yield Edit(wrap_with(stmt, "torch.no_grad()"),
                   f"`torch.no_grad()` around the forward `{src.code(call.func)}(...)`")


OPERATORS = [Operator("gm102.no-grad-forward", "GM102", no_grad_forward, (".backward(",))]
