"""Which functions of a project run per batch during training, decided on the project graph.

Rules about data handling (per-batch statistics, augmentation) care about *when* code runs: the
same ``x.mean(0)`` is right in a dataset's one-off statistics and wrong in a collate function.

API:

* :func:`stage_of` — the stage of one function, after loading the files its callers live in.
* :func:`per_batch_functions` — qualname -> stage for every function that runs once per sample
  or per batch while training:

  - ``getitem``: a ``__getitem__`` method, and what it calls;
  - ``collate``: a function named ``collate*`` or passed as ``collate_fn=``, ``__call__`` of a
    class whose instance is passed so, and what they call;
  - ``transform``: ``__call__`` of a class passed as ``transform=`` (or named ``*Transform``,
    ``*Augment*``), and what it calls;
  - ``forward``: a module's ``forward`` method, and what it calls;
  - ``train_step``: a function that calls ``.backward()``, and the functions it calls before that
    backward in the same loop iteration (not the evaluation it runs after the step).

The first stage found wins, in the order above. Functions reached only from a dataset's
constructor (one-off preprocessing, dataset statistics) are not per batch.
"""

from __future__ import annotations

import re

from auditor.static.dataflow import call_targets, callers_of
from auditor.static.facts import FunctionInfo
from auditor.static.project import Project
from auditor.static.training import is_backward

GETITEM, COLLATE, TRANSFORM, FORWARD, TRAIN_STEP = (
    "getitem", "collate", "transform", "forward", "train_step")
_TRANSFORM_WORDS = ("transform", "augment", "jitter")


def _roots(project: Project) -> list[tuple[str, str]]:
    passed_collate: set[str] = set()
    passed_transform: set[str] = set()
    for fn, event in project.events("call"):
        for key, value in event.kwargs.items():
            # `collate_fn=collate`, `collate_fn=RandomRotation(seed)`: the function, or the class
            # whose instances are called; `collate_fn=norm` with `norm = Normalizer(stats)`
            name = re.sub(r"\((\.\.\.)?\)$", "", value).rsplit(".", 1)[-1]
            if key not in ("collate_fn", "transform", "transforms"):
                continue
            built = project.instance_class(fn, value, event.span.line) \
                if re.fullmatch(r"[\w.]+", value) else None
            names = {name, built.rsplit(".", 1)[-1]} if built else {name}
            (passed_collate if key == "collate_fn" else passed_transform).update(names)
    roots: list[tuple[str, str]] = []
    for qual, fn in list(project.functions.items()):
        cls = fn.class_name.rsplit(".", 1)[-1] if fn.class_name else ""
        if fn.name == "__getitem__":
            roots.append((qual, GETITEM))
        elif "collate" in fn.name.lower() or (not cls and fn.name in passed_collate):
            roots.append((qual, COLLATE))
        elif fn.name == "__call__" and cls in passed_collate:
            roots.append((qual, COLLATE))
        elif fn.name == "__call__" and (
            cls in passed_transform or any(w in cls.lower() for w in _TRANSFORM_WORDS)
        ):
            roots.append((qual, TRANSFORM))
        elif fn.name == "forward" and cls:
            roots.append((qual, FORWARD))
    return roots


def _step_callees(project: Project, fn: FunctionInfo) -> set[str]:
    """Functions a training-step function calls before its backward, in the backward's loop."""
    backwards = [i for i, e in enumerate(fn.events) if is_backward(e)]
    if not backwards:
        return set()
    last = backwards[-1]
    loop = fn.events[last].loop_ids[-1:]  # the innermost loop around the backward, if any
    out: set[str] = set()
    for event in fn.events[:last]:
        if event.kind != "call" or (loop and loop[0] not in event.loop_ids):
            continue
        for callee in call_targets(project, fn, event):
            out |= _reachable(project, callee)
    return out


def _reachable(project: Project, qualname: str) -> set[str]:
    """``qualname`` and what it calls, instance calls included (``self.model(g)`` runs forward)."""
    seen: set[str] = set()
    todo = [qualname]
    while todo:
        qual = todo.pop()
        fn = project.function(qual)
        if qual in seen or fn is None:
            continue
        seen.add(qual)
        todo += [t for e in fn.events if e.kind == "call" for t in call_targets(project, fn, e)]
    return seen


def per_batch_functions(project: Project) -> dict[str, str]:
    """qualname -> stage (see the module doc) of every function that runs per sample or batch.
    Computed once per project (cached on it)."""
    memo = project.memo("stages")
    cached = memo.get("per_batch")
    if cached is not None and cached[0] == len(project.functions):
        return cached[1]
    # what is passed as a loader's collate_fn or a dataset's transform is named where the loader
    # is made, in a file a rule's prefilter may have skipped
    for word in ("collate_fn=", "transform="):
        project.load_mentioning(word)
    stages: dict[str, str] = {}
    for qual, stage in _roots(project):
        for reached in sorted(_reachable(project, qual)):
            stages.setdefault(reached, stage)
    for qual, fn in list(project.functions.items()):
        if any(is_backward(e) for e in fn.events):
            stages.setdefault(qual, TRAIN_STEP)
            for reached in sorted(_step_callees(project, fn)):
                stages.setdefault(reached, TRAIN_STEP)
    memo["per_batch"] = (len(project.functions), stages)
    return stages


def stage_of(project: Project, qualname: str, depth: int = 6) -> str | None:
    """The per-batch stage of one function (None: not per batch). Its callers, up to ``depth``
    levels, are loaded first, so a helper whose only caller sits in a file the rule's prefilter
    skipped (the training step in ``train.py``) is still placed."""
    level, seen = [qualname], {qualname}
    for _ in range(depth):
        nxt = []
        for qual in level:
            for caller, _event in callers_of(project, qual):
                if caller.qualname not in seen:
                    seen.add(caller.qualname)
                    nxt.append(caller.qualname)
        if not nxt:
            break
        level = nxt
    return per_batch_functions(project).get(qualname)

