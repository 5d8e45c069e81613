"""GM501: an extra ``dgl.add_self_loop`` on the graph a training forward reads, or a second
``add_self_loop`` on a graph that already got one; benign twin, the loops removed first."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after, insert_before
from benchmarks.ecosystem.mutators.structure import forward_sites, in_body, method_calls, used_names


def _self_loop_statements(src: Source) -> Iterator[tuple[cst.CSTNode, cst.Call]]:
    """``G = ....add_self_loop(G ...)`` statements: dgl's function or the graph method, whose
    target is the graph it reads (run twice, the second reads the first's loops)."""
    for call in method_calls(src.module, "add_self_loop"):
        stmt = src.statement(call)
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign) \
                and stmt.body[0].value is call and in_body(src, stmt):
            target = stmt.body[0].targets[0].target
            if isinstance(target, cst.Name) and target.value in used_names(call):
                yield stmt, call


def second_self_loop(src: Source) -> Iterator[Edit]:
    for stmt, _ in _self_loop_statements(src):
        code = src.code(stmt).strip()
        if "remove_self_loop" in code:
            continue  # `g.remove_self_loop().add_self_loop()` twice is the same graph: no bug
        # the copy is marked so that the diff knows it from the original: the rule reports the
        # second (redundant) add, which must be the changed line
        yield Edit(insert_after(stmt, f"{code.split('#')[0].rstrip()}  # again"),
                   "`add_self_loop` applied a second time")


def self_loop_before_forward(src: Source) -> Iterator[Edit]:
    """``g = dgl.add_self_loop(g)`` before each training forward whose first argument is a name
    (DGL models take the graph first)."""
    dgl = {full: name for name, full in src.imports.items()}.get("dgl")
    for _, call, stmt in forward_sites(src):
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        if isinstance(first, cst.Name) and first.value not in ("None", "True", "False") \
                and not call.args[0].star:
            g = first.value
            imports = () if dgl else ("import dgl",)
            yield Edit(insert_before(stmt, *imports, f"{g} = {dgl or 'dgl'}.add_self_loop({g})"),
                       f"`add_self_loop` on `{g}` before `{src.code(call.func)}(...)`")


def remove_then_add(src: Source) -> Iterator[Edit]:
    for stmt, call in _self_loop_statements(src):
        remove = src.code(stmt).strip().replace("add_self_loop", "remove_self_loop", 1)
        yield Edit(insert_after(stmt, remove, src.code(stmt).strip()),
                   "self loops removed before a second `add_self_loop`")


OPERATORS = [
    Operator("gm501.second-self-loop", "GM501", second_self_loop, ("add_self_loop",)),
    Operator("gm501.self-loop-before-forward", "GM501", self_loop_before_forward,
             (".backward(", "training_step")),
    Operator("gm501.remove-then-add", "GM501", remove_then_add, ("add_self_loop",), benign=True),
]
