"""GM105: the model rebuilt (or deep-copied) after its optimizer was built over it."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, assignable, in_body,
                                                     optimizer_builds, scope_of, statements)


def mentions(text: str, name: str) -> bool:
    """``name`` occurs in ``text`` as a whole name (``x`` in ``f(x)``, not in ``xs`` or ``a.x``)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _construction(src: Source, opt_stmt: cst.CSTNode, model: str) -> Optional[cst.CSTNode]:
    """The last ``MODEL = call(...)`` before the optimizer, in the same function."""
    found = None
    for stmt in statements(scope_of(src, opt_stmt)):
        if src.line(stmt) >= src.line(opt_stmt):
            break
        value = assign_value(stmt)
        target = stmt.body[0].targets if isinstance(value, cst.Call) and isinstance(
            stmt.body[0], cst.Assign) else ()
        # `model = model.to(device)` moves the instance; only a fresh construction rebuilds it.
        # One that reads the name it binds (`self.model = build_model(self.model)...`, a name
        # string then) builds from something else once repeated: no copy of it is a rebuild
        if len(target) == 1 and src.code(target[0].target) == model and \
                not mentions(src.code(value), model):
            found = stmt
    return found


def rebuild_after_optimizer(src: Source) -> Iterator[Edit]:
    for stmt, _, model in optimizer_builds(src):
        built = _construction(src, stmt, src.code(model)) if in_body(src, stmt) else None
        if built is not None:
            yield Edit(insert_after(stmt, src.code(built).strip()),
                       f"`{src.code(model)}` built again after its optimizer", anchors=(stmt,))


def _read_after(src: Source, stmt: cst.CSTNode, name: str) -> bool:
    """Some later statement of ``stmt``'s function reads ``name`` (else a copy bound to it is
    dead: ``self = copy.deepcopy(self)`` before ``return optimizer`` trains nothing new)."""
    return any(src.line(s) > src.line(stmt) and mentions(src.code(s), name)
               for s in statements(scope_of(src, stmt)))


def deepcopy_after_optimizer(src: Source) -> Iterator[Edit]:
    for stmt, _, model in optimizer_builds(src):
        name = src.code(model)
        if in_body(src, stmt) and assignable(model) and name != "self" and _read_after(src, stmt, name):
            yield Edit(insert_after(stmt, "import copy", f"{name} = copy.deepcopy({name})"),
                       f"`{name}` deep-copied after its optimizer", anchors=(stmt,))


OPERATORS = [
    Operator("gm105.rebuild-after-optimizer", "GM105", rebuild_after_optimizer, ("optim",)),
    Operator("gm105.deepcopy-after-optimizer", "GM105", deepcopy_after_optimizer, ("optim",)),
]
