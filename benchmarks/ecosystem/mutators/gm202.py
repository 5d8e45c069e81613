"""GM202: BatchNorm running statistics touched outside the normal forward: an extra forward
without gradients after the optimizer step, the statistics reset after it, or a BatchNorm built
with ``momentum=None`` (a cumulative average instead of the running one). Placed wherever the
syntax allows: in a model without BatchNorm the oracle finds nothing moved."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.gm201 import model_of
from benchmarks.ecosystem.mutators.structure import calls, forward_sites, in_body, kwarg, torch_bound, train_loops

_NONE = cst.Arg(cst.Name("None"), keyword=cst.Name("momentum"))


def extra_forward(src: Source) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for tl, call, _ in forward_sites(src):
        for step in tl.steps[:1] if tl is not None else ():
            stmt = src.statement(step)
            if in_body(src, stmt):
                yield Edit(insert_after(stmt, f"with torch.no_grad():\n    {src.code(call)}"),
                           f"extra no-grad forward `{src.code(call.func)}(...)` after the step")


def reset_after_step(src: Source) -> Iterator[Edit]:
    for tl in train_loops(src):
        model = model_of(src, tl)
        for step in tl.steps[:1] if model else ():
            stmt = src.statement(step)
            if in_body(src, stmt):
                yield Edit(insert_after(stmt, f"for layer in {model}.modules():\n"
                                              f"    if hasattr(layer, 'reset_running_stats'):\n"
                                              f"        layer.reset_running_stats()"),
                           f"running statistics of `{model}` reset after the step")


def momentum_none(src: Source) -> Iterator[Edit]:
    for call in calls(src.module):
        if not src.code(call.func).rsplit(".", 1)[-1].startswith("BatchNorm"):
            continue
        given = kwarg(call, "momentum")
        args = [a for a in call.args if a is not given]
        yield Edit({call: call.with_changes(args=[*args, _NONE])},
                   f"`{src.code(call.func)}` built with momentum=None")


OPERATORS = [
    Operator("gm202.extra-no-grad-forward", "GM202", extra_forward, (".backward(",)),
    Operator("gm202.reset-after-step", "GM202", reset_after_step, (".backward(",)),
    Operator("gm202.momentum-none", "GM202", momentum_none, ("BatchNorm",)),
]
