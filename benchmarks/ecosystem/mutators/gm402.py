"""GM402: loss weights gone wrong: a term of a summed loss weighted by zero or dropped, or an
extra loss term with a weight that swamps the others."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import (assign_value, calls, is_loss_call,
                                                     loss_path, statements, train_loops)


def _loss_sums(src: Source) -> Iterator[cst.BinaryOperation]:
    """Sums that make a loss: on a loop's loss path, or with a torch loss call in a term."""
    on_path = {id(s) for tl in train_loops(src) for s in loss_path(src, tl)}
    for stmt in statements(src.module):
        value = assign_value(stmt)
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and (
                id(stmt) in on_path or any(is_loss_call(src, c) for c in calls(value))):
            yield value


def zero_weight(src: Source) -> Iterator[Edit]:
    for total in _loss_sums(src):
        term = total.right
        zeroed = cst.BinaryOperation(cst.Float("0.0"), cst.Multiply(),
                                     term if isinstance(term, (cst.Name, cst.Call, cst.Attribute))
                                     else term.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        yield Edit({term: zeroed}, f"a zero weight on `{src.code(term)}`")


def drop_term(src: Source) -> Iterator[Edit]:
    """``a + b`` of a loss sum becomes ``a``."""
    for total in _loss_sums(src):
        yield Edit({total: total.left}, f"the term `{src.code(total.right)}` dropped from the loss")


def extra_term(src: Source) -> Iterator[Edit]:
    """A functional loss term added under another loss with a weight that swamps it (GM402's
    class; an extra term of weight 1 is an ordinary regulariser, which the rule never reports)."""
    for call in (c for c in calls(src.module) if is_loss_call(src, c)):
        if not isinstance(call.func, cst.Attribute) or not src.qualify(call.func).startswith("torch.nn.functional."):
            continue
        other = "l1_loss" if call.func.attr.value != "l1_loss" else "mse_loss"
        positional = [a for a in call.args if a.keyword is None][:2]
        if len(positional) == 2:
            extra = call.with_changes(func=call.func.with_changes(attr=cst.Name(other)), args=positional)
            weighted = cst.BinaryOperation(cst.Integer("100"), cst.Multiply(), extra)
            yield Edit({call: cst.BinaryOperation(call, cst.Add(), weighted)},
                       f"a `100 * {other}` term added to `{src.code(call.func)}`")


OPERATORS = [
    Operator("gm402.zero-weight", "GM402", zero_weight, (" + ",)),
    Operator("gm402.drop-term", "GM402", drop_term, (" + ",)),
    Operator("gm402.extra-term", "GM402", extra_term, ("_loss(",)),
]
