"""GM106: the loss tensor, with its graph, accumulated across steps."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after, insert_before
from benchmarks.ecosystem.mutators.structure import in_body, train_loops, used_names, walk


def item_to_tensor(src: Source) -> Iterator[Edit]:
    """``total += loss.item()`` (or ``float(loss)``) becomes ``total += loss``."""
    for tl in train_loops(src):
        if not isinstance(tl.loss, cst.Name):
            continue
        for aug in (n for n in walk(tl.loop.body) if isinstance(n, cst.AugAssign)):
            value = aug.value
            scalar = isinstance(value, cst.Call) and (
                isinstance(value.func, cst.Attribute) and value.func.attr.value == "item"
                or src.code(value.func) == "float")
            if isinstance(aug.operator, cst.AddAssign) and scalar and tl.loss.value in used_names(value):
                yield Edit({value: tl.loss}, f"`{src.code(aug)}` keeps the loss tensor")


def running_total(src: Source) -> Iterator[Edit]:
    """A new running total of the loss tensor across the loop."""
    for tl in train_loops(src):
        back = src.statement(tl.backward)
        if tl.loss is None or not in_body(src, back) or not in_body(src, tl.loop):
            continue
        loss = src.code(tl.loss)
        yield Edit({**insert_before(tl.loop, "running_total = 0"),
                    **insert_after(back, f"running_total += {loss}")},
                   f"`running_total += {loss}` keeps every step's graph")


OPERATORS = [
    Operator("gm106.item-to-tensor", "GM106", item_to_tensor, (".backward(",)),
    Operator("gm106.running-total", "GM106", running_total, (".backward(",)),
]
