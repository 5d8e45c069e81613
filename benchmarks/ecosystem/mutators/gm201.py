"""GM201: the model left in eval mode for training: the ``.train()`` after an evaluation
removed, or an ``.eval()`` added before the loop; benign twin, eval then train."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before, neutralise
from benchmarks.ecosystem.mutators.structure import (TrainLoop, assign_value, calls, forward_sites,
                                                     in_body, method_calls, modules, scope_of,
                                                     statements, train_loops, used_names, walk)


def _eval_runs_before(src: Source, train: cst.Call, evals: list[cst.Call]) -> bool:
    """One of ``evals`` may run before ``train`` runs (again): earlier in its scope, in a loop
    around it, or in a function called inside such a loop. Otherwise removing the ``.train()``
    changes nothing: a module starts in training mode (an equivalent mutant)."""
    scope = scope_of(src, train)
    model = src.code(train.func.value)
    loops = [a for a in src.ancestors(train) if isinstance(a, (cst.For, cst.While))
             and scope_of(src, a) is scope and not _rebuilt(src, a, model)]
    if isinstance(scope, cst.FunctionDef):  # loops that call the train's function again
        loops += [n for n in walk(src.module, into_scopes=True) if isinstance(n, (cst.For, cst.While))
                  and scope.name.value in _called(src, n)
                  and not all(_rebuilt(src, _innermost_loop(src, call), name)
                              for call, name in _passed(src, n, scope, model))]
    in_loop = {id(n) for loop in loops for n in walk(loop, into_scopes=True)}
    for ev in evals:
        home = scope_of(src, ev)
        if (home is scope and src.line(ev) < src.line(train)) or id(ev) in in_loop:
            return True
        if isinstance(home, cst.FunctionDef) and any(home.name.value in _called(src, loop)
                                                     for loop in loops):
            return True
    return False


def _rebuilt(src: Source, loop: Optional[cst.CSTNode], name: Optional[str]) -> bool:
    """Every iteration of ``loop`` binds ``name`` to an object made without it (a model built
    anew per seed): the module evaluated in one iteration is not the one the next trains."""
    if name is None or loop is None:
        return False
    for stmt in statements(loop):
        value = assign_value(stmt)
        if value is None or name.split(".")[0] in used_names(value) or not any(
                src.code(t.target) == name for t in getattr(stmt.body[0], "targets", ())):
            continue
        for up in src.ancestors(stmt):
            if up is loop:
                return True  # on every path through the body
            if isinstance(up, (cst.If, cst.Try, cst.For, cst.While)):
                break
    return False


def _innermost_loop(src: Source, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    return next((a for a in src.ancestors(node) if isinstance(a, (cst.For, cst.While))), None)


def _passed(src: Source, loop: cst.CSTNode, fn: cst.FunctionDef,
            model: str) -> list[tuple[cst.Call, Optional[str]]]:
    """The calls of ``fn`` in ``loop`` and what each passes as ``model``: the argument bound to
    the parameter ``model`` starts with (the same name when it is not a parameter; None:
    unknown)."""
    root, _, rest = model.partition(".")
    params = [p.name.value for p in fn.params.params]
    out: list[tuple[cst.Call, Optional[str]]] = []
    for call in calls(loop):
        if not isinstance(call.func, (cst.Name, cst.Attribute)) \
                or src.code(call.func).rsplit(".", 1)[-1] != fn.name.value:
            continue
        if root not in params:
            out.append((call, model))
            continue
        positional = [a for a in call.args if a.keyword is None and not a.star]
        offset = 1 if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute) else 0
        index = params.index(root) - offset
        arg = next((a for a in call.args if a.keyword and a.keyword.value == root), None) or (
            positional[index] if 0 <= index < len(positional) else None)
        out.append((call, None if arg is None else src.code(arg.value) + ("." + rest if rest else "")))
    return out


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


def model_of(src: Source, tl: TrainLoop) -> Optional[str]:
    """The model the loop trains: a module called itself (not a method of one) on its loss
    path, other than a loss module."""
    return next((src.code(call.func) for loop, call, _ in forward_sites(src)
                 if loop is not None and loop.loop is tl.loop
                 and src.code(call.func) in modules(src)), None)


def _before_loop(src: Source, *code: str) -> Iterator[Edit]:
    for tl in train_loops(src):
        model = model_of(src, tl)
        if model and in_body(src, tl.loop) and not any(method_calls(tl.loop, "train")):
            yield Edit(insert_before(tl.loop, *(c.format(m=model) for c in code)),
                       f"`{model}` switched to eval mode before the loop")


def eval_before_loop(src: Source) -> Iterator[Edit]:
    return _before_loop(src, "{m}.eval()")


def eval_then_train(src: Source) -> Iterator[Edit]:
    return _before_loop(src, "{m}.eval()", "{m}.train()")


def eval_before_forward(src: Source) -> Iterator[Edit]:
    """The module a training forward calls (``model`` of ``model(g, x)``, ``self.encoder`` of
    ``self.encoder(h)``) switched to eval mode right before the call."""
    for _, call, stmt in forward_sites(src):
        if isinstance(call.func, (cst.Name, cst.Attribute)):
            module = src.code(call.func)
            yield Edit(insert_before(stmt, f"{module}.eval()"), f"`{module}.eval()` before its forward")


OPERATORS = [
    Operator("gm201.drop-train-after-eval", "GM201", drop_train, (".eval()",)),
    Operator("gm201.eval-before-loop", "GM201", eval_before_loop, (".backward(",)),
    Operator("gm201.eval-before-forward", "GM201", eval_before_forward, (".backward(", "training_step")),
    Operator("gm201.eval-then-train", "GM201", eval_then_train, (".backward(",), benign=True),
]
