"""GM104: the training loop's ``zero_grad`` dropped, or moved between backward and step."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after, neutralise
from benchmarks.ecosystem.mutators.structure import in_body, train_loops


def drop_zero_grad(src: Source) -> Iterator[Edit]:
    for tl in train_loops(src):
        for zero in tl.zero_grads:
            stmt = src.statement(zero)
            if in_body(src, stmt):
                # the rule reports where the missing call bites: the backward or the step
                yield Edit(neutralise(stmt), f"`{src.code(zero)}` removed from the loop",
                           anchors=(tl.backward, *tl.steps))


def misplace_zero_grad(src: Source) -> Iterator[Edit]:
    for tl in train_loops(src):
        back = src.statement(tl.backward)
        if not tl.steps or not in_body(src, back):
            continue
        for zero in tl.zero_grads:
            stmt = src.statement(zero)
            if in_body(src, stmt) and src.line(stmt) < src.line(back):
                yield Edit({**neutralise(stmt), **insert_after(back, src.code(zero))},
                           f"`{src.code(zero)}` moved between backward and step")


OPERATORS = [
    Operator("gm104.drop-zero-grad", "GM104", drop_zero_grad, ("zero_grad",)),
    Operator("gm104.misplace-zero-grad", "GM104", misplace_zero_grad, ("zero_grad",)),
]
