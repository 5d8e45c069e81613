"""GM201: the model left in eval mode for training: the ``.train()`` after an evaluation
removed, or an ``.eval()`` added before the loop; benign twin, eval then train."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before, neutralise
from benchmarks.ecosystem.mutators.structure import (TrainLoop, calls, forward_sites, in_body,
                                                     method_calls, modules, scope_of, train_loops,
                                                     walk)


def _eval_runs_before(src: Source, train: cst.Call, evals: list[cst.Call]) -> bool:
    """One of ``evals`` may run before ``train`` runs (again): earlier in its scope, in a loop
    around it, or in a function called inside such a loop. Otherwise removing the ``.train()``
    changes nothing: a module starts in training mode (an equivalent mutant)."""
    scope = scope_of(src, train)
    loops = [a for a in src.ancestors(train) if isinstance(a, (cst.For, cst.While))
             and scope_of(src, a) is scope]
    if isinstance(scope, cst.FunctionDef):  # loops that call the train's function again
        loops += [n for n in walk(src.module, into_scopes=True) if isinstance(n, (cst.For, cst.While))
                  and scope.name.value in _called(src, n)]
    in_loop = {id(n) for loop in loops for n in walk(loop, into_scopes=True)}
    for ev in evals:
        home = scope_of(src, ev)
        if (home is scope and src.line(ev) < src.line(train)) or id(ev) in in_loop:
            return True
        if isinstance(home, cst.FunctionDef) and any(home.name.value in _called(src, loop)
                                                     for loop in loops):
            return True
    return False


def _called(src: Source, node: cst.CSTNode) -> set[str]:
    """Names of the functions and methods called in ``node`` (``f(...)``, ``x.f(...)``)."""
    return {src.code(c.func).rsplit(".", 1)[-1] for c in calls(node)
            if isinstance(c.func, (cst.Name, cst.Attribute))}


def drop_train(src: Source) -> Iterator[Edit]:
    training = {id(tl.scope) for tl in train_loops(src)}
    for call in method_calls(src.module, "train"):
        model = call.func.value
        stmt = src.statement(call)
        if call.args or id(scope_of(src, call)) not in training or not in_body(src, stmt):
            continue
        evals = [e for e in method_calls(src.module, "eval") if src.code(e.func.value) == src.code(model)]
        if evals and _eval_runs_before(src, call, evals):
            # the rule reports the `.eval()` that now reaches the training step
            yield Edit(neutralise(stmt), f"`{src.code(call)}` after evaluation removed",
                       anchors=tuple(evals))


def _model(src: Source, tl: TrainLoop) -> Optional[str]:
    """The model the loop trains: a module called itself (not a method of one) on its loss
    path, other than a loss module."""
    return next((src.code(call.func) for loop, call, _ in forward_sites(src)
                 if loop.loop is tl.loop and src.code(call.func) in modules(src)), None)


def _before_loop(src: Source, *code: str) -> Iterator[Edit]:
    for tl in train_loops(src):
        model = _model(src, tl)
        if model and in_body(src, tl.loop) and not any(method_calls(tl.loop, "train")):
            yield Edit(insert_before(tl.loop, *(c.format(m=model) for c in code)),
                       f"`{model}` switched to eval mode before the loop")


def eval_before_loop(src: Source) -> Iterator[Edit]:
    return _before_loop(src, "{m}.eval()")


def eval_then_train(src: Source) -> Iterator[Edit]:
    return _before_loop(src, "{m}.eval()", "{m}.train()")


OPERATORS = [
    Operator("gm201.drop-train-after-eval", "GM201", drop_train, (".eval()",)),
    Operator("gm201.eval-before-loop", "GM201", eval_before_loop, (".backward(",)),
    Operator("gm201.eval-then-train", "GM201", eval_then_train, (".backward(",), benign=True),
]
