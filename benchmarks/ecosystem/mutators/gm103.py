"""GM103: trained parameters frozen: after the optimizer is built over a model, or right after a
module-looking object is constructed (``enc = Encoder(...)``, ``self.fc = nn.Linear(...)``)."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, in_body, modules,
                                                     optimizer_builds, statements)


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


def _module_like(src: Source, value: cst.Call, target: str) -> bool:
    """A construction of an ``nn.Module``-looking object: a class of ``torch.nn``/``dgl.nn``, or
    a capitalised call bound to a name the file uses as a module (``model.parameters()``)."""
    name = src.qualify(value.func)
    if name.startswith(("torch.nn.", "dgl.nn.")) and name.rsplit(".", 1)[-1][:1].isupper():
        return True
    last = src.code(value.func).rsplit(".", 1)[-1]
    return last[:1].isupper() and target in modules(src)


def freeze_after_construction(src: Source) -> Iterator[Edit]:
    for stmt in statements(src.module):
        value = assign_value(stmt)
        if not (isinstance(value, cst.Call) and isinstance(stmt.body[0], cst.Assign)
                and len(stmt.body[0].targets) == 1 and in_body(src, stmt)):
            continue
        target = src.code(stmt.body[0].targets[0].target)
        if _module_like(src, value, target) and all(p.isidentifier() for p in target.split(".")):
            yield Edit(insert_after(stmt, f"{target}.requires_grad_(False)"),
                       f"`{target}` frozen where it is built")


OPERATORS = [
    Operator("gm103.requires-grad-method", "GM103", freeze_method, ("torch.optim", "optim.")),
    Operator("gm103.requires-grad-loop", "GM103", freeze_loop, ("torch.optim", "optim.")),
    Operator("gm103.freeze-after-construction", "GM103", freeze_after_construction, ("nn.", "Module")),
]
