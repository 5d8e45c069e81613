"""GM601: a partial checkpoint loaded with ``strict=False``; benign twin, the full checkpoint
with ``strict=False``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source
from benchmarks.ecosystem.mutators.structure import method_calls

_NOT_STRICT = cst.Arg(cst.Name("False"), keyword=cst.Name("strict"))


def _loads(src: Source) -> Iterator[tuple[cst.Call, cst.BaseExpression]]:
    for call in method_calls(src.module, "load_state_dict"):
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) == 1 and len(call.args) == 1:
            yield call, positional[0].value


def partial_checkpoint(src: Source) -> Iterator[Edit]:
    for call, state in _loads(src):
        part = cst.parse_expression(f'{{k: v for k, v in ({src.code(state)}).items() if not k.endswith("bias")}}')
        yield Edit({call: call.with_changes(args=[cst.Arg(part), _NOT_STRICT])},
                   "a partial checkpoint loaded with strict=False")


def full_not_strict(src: Source) -> Iterator[Edit]:
    for call, state in _loads(src):
        yield Edit({call: call.with_changes(args=[*call.args, _NOT_STRICT])},
                   "the full checkpoint loaded with strict=False")


OPERATORS = [
    Operator("gm601.partial-strict-false", "GM601", partial_checkpoint, ("load_state_dict",)),
    Operator("gm601.full-strict-false", "GM601", full_not_strict, ("load_state_dict",), benign=True),
]
