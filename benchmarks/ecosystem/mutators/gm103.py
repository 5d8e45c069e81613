"""GM103: the parameters of the model an optimizer trains frozen after it is built."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import in_body, optimizer_builds


def _freeze(src: Source, *code: str) -> Iterator[Edit]:
    for stmt, _, model in optimizer_builds(src):
        if in_body(src, stmt):
            name = src.code(model)
            yield Edit(insert_after(stmt, *(c.format(m=name) for c in code)),
                       f"parameters of `{name}` frozen after its optimizer is built")


def freeze_method(src: Source) -> Iterator[Edit]:
    return _freeze(src, "{m}.requires_grad_(False)")


def freeze_loop(src: Source) -> Iterator[Edit]:
    return _freeze(src, "for frozen in {m}.parameters():\n    frozen.requires_grad = False")


OPERATORS = [
    Operator("gm103.requires-grad-method", "GM103", freeze_method, ("torch.optim", "optim.")),
    Operator("gm103.requires-grad-loop", "GM103", freeze_loop, ("torch.optim", "optim.")),
]
