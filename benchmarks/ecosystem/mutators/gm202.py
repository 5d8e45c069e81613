"""GM202: an extra forward in train mode, without gradients, between optimizer steps: it moves
the BatchNorm running statistics outside the normal forward. Only in a model that holds a
BatchNorm: the same forward of a linear probe's head changes nothing."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.program import call_event
from benchmarks.ecosystem.mutators.structure import forward_sites, in_body, torch_bound
from auditor.rules.gm202_batchnorm_stats_touched import holds_batchnorm


def _holds_batchnorm(src: Source, call: cst.Call) -> bool:
    """gm-audit's program model says the module ``call`` runs was built with a BatchNorm."""
    def ask(project) -> bool:
        found = call_event(project, src.path, src.line(call), src.code(call.func))
        return found is not None and holds_batchnorm(project, *found)
    return src.program is not None and src.program.ask(ask)


def extra_forward(src: Source) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for tl, call, _ in forward_sites(src):
        for step in tl.steps[:1]:
            stmt = src.statement(step)
            if in_body(src, stmt) and _holds_batchnorm(src, call):
                yield Edit(insert_after(stmt, f"with torch.no_grad():\n    {src.code(call)}"),
                           f"extra no-grad forward `{src.code(call.func)}(...)` after the step")


OPERATORS = [Operator("gm202.extra-no-grad-forward", "GM202", extra_forward, (".backward(",),
                      reads=("GM202",))]
