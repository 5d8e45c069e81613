"""GM202: an extra forward in train mode, without gradients, between optimizer steps: it moves
the BatchNorm running statistics outside the normal forward."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import forward_sites, in_body, torch_bound


def extra_forward(src: Source) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for tl, call, _ in forward_sites(src):
        for step in tl.steps[:1]:
            stmt = src.statement(step)
            if in_body(src, stmt):
                yield Edit(insert_after(stmt, f"with torch.no_grad():\n    {src.code(call)}"),
                           f"extra no-grad forward `{src.code(call.func)}(...)` after the step")


OPERATORS = [Operator("gm202.extra-no-grad-forward", "GM202", extra_forward, (".backward(",))]
