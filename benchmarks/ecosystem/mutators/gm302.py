"""GM302: the trained model wrapped in DistributedDataParallel in a run that never sets up a
process group."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before
from benchmarks.ecosystem.mutators.structure import (assignable, in_body, optimizer_builds,
                                                     torch_bound)


def ddp_single_process(src: Source) -> Iterator[Edit]:
    if not torch_bound(src) or "init_process_group" in src.text:
        return
    for stmt, _, model in optimizer_builds(src):
        if in_body(src, stmt) and assignable(model):
            name = src.code(model)
            yield Edit(insert_before(stmt, f"{name} = torch.nn.parallel.DistributedDataParallel({name})"),
                       f"`{name}` wrapped in DDP without a process group")


OPERATORS = [Operator("gm302.ddp-single-process", "GM302", ddp_single_process, ("optim",))]
