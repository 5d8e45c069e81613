"""GM602: ``torch.load`` of a pickle without ``weights_only=True``: the flag dropped where it was
given, or a saved checkpoint loaded back; benign twin, loaded back with the flag."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import calls, in_body, kwarg


def drop_weights_only(src: Source) -> Iterator[Edit]:
    for call in calls(src.module):
        flag = kwarg(call, "weights_only")
        if src.qualify(call.func) == "torch.load" and flag is not None:
            yield Edit({call: call.with_changes(args=[a for a in call.args if a is not flag])},
                       "`weights_only` dropped from `torch.load`")


def _reload(src: Source, extra: str, what: str) -> Iterator[Edit]:
    for call in calls(src.module):
        positional = [a for a in call.args if a.keyword is None]
        stmt = src.statement(call)
        if src.qualify(call.func) == "torch.save" and len(positional) >= 2 and in_body(src, stmt):
            load = src.code(call.func)[: -len("save")] + "load"
            yield Edit(insert_after(stmt, f"reloaded = {load}({src.code(positional[1].value)}{extra})"),
                       what)


def reload_checkpoint(src: Source) -> Iterator[Edit]:
    return _reload(src, "", "the saved checkpoint loaded back without weights_only")


def reload_weights_only(src: Source) -> Iterator[Edit]:
    return _reload(src, ", weights_only=True", "the saved checkpoint loaded back with weights_only=True")


OPERATORS = [
    Operator("gm602.drop-weights-only", "GM602", drop_weights_only, ("weights_only",)),
    Operator("gm602.reload-checkpoint", "GM602", reload_checkpoint, ("save(",)),
    Operator("gm602.reload-weights-only", "GM602", reload_weights_only, ("save(",), benign=True),
]
