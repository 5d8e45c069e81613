"""GM301: low-precision training done wrong: the trained model cast to half/bfloat16, or the
forward under fp16 autocast with no GradScaler."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before, wrap_with
from benchmarks.ecosystem.mutators.structure import forward_sites, in_body, optimizer_builds, torch_bound


def _cast(src: Source, method: str) -> Iterator[Edit]:
    for stmt, _, model in optimizer_builds(src):
        if in_body(src, stmt):
            name = src.code(model)
            yield Edit(insert_before(stmt, f"{name}.{method}()"), f"`{name}.{method}()` before training")


def half_model(src: Source) -> Iterator[Edit]:
    return _cast(src, "half")


def bfloat16_model(src: Source) -> Iterator[Edit]:
    return _cast(src, "bfloat16")


def fp16_autocast(src: Source) -> Iterator[Edit]:
    if not torch_bound(src) or "GradScaler" in src.text:
        return
    for _, call, stmt in forward_sites(src):
        yield Edit(wrap_with(stmt, 'torch.autocast("cuda", dtype=torch.float16)'),
                   f"fp16 autocast around `{src.code(call.func)}(...)` without a GradScaler")


OPERATORS = [
    Operator("gm301.half-model", "GM301", half_model, ("optim",)),
    Operator("gm301.bfloat16-model", "GM301", bfloat16_model, ("optim",)),
    Operator("gm301.fp16-autocast", "GM301", fp16_autocast, (".backward(", "training_step")),
]
