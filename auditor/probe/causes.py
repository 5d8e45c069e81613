"""Cause sites read from the evidence, shared by the probe's verdicts and the diff's attribution.

A cause is a dict the recorder wrote (``Recorder.cause``): ``path`` and ``line`` of the user call
that changed the state, ``stack`` (``[[path, line], ...]``, innermost first: the call and the
calls that led to it) and ``seq`` (order of the causes in the run).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Optional

from auditor.probe.evidence import OptimizerFacts, StepFacts
from auditor.static.reading import python_lines, read_source

Cause = dict[str, Any]


def chain(cause: Cause) -> str:
    """``validate.py:31, called from run.py:88 <- main.py:12``: a cause site and its callers."""
    frames = cause.get("stack") or [[cause.get("path", ""), cause.get("line", 0)]]
    callers = " <- ".join(f"{p}:{n}" for p, n in frames[1:4])
    return f"{frames[0][0]}:{frames[0][1]}" + (f", called from {callers}" if callers else "")


def optimizer_cause(o: OptimizerFacts) -> tuple[Optional[Cause], str]:
    """Why an optimizer lacks the trained model's parameters, at which construction: the model
    built after the optimizer (a rebuilt or re-wrapped instance), else the optimizer built over
    another instance; (None, "") when the recorder saw neither construction."""
    built, made = o.model_built_at, o.optimizer_built_at
    if built and made and built.get("seq", 0) > made.get("seq", 0):
        why = f"{o.model} built after the {o.cls} (built at {chain(made)})"
        if o.replaced_built_at:
            return departed(built, o.replaced_built_at), \
                f"{why}; the instance it holds was built at {chain(o.replaced_built_at)}"
        return built, why
    if made and not o.foreign_params:
        # every parameter it holds is the trained model's: it was given a part of the model
        return chosen_at(made), f"{o.cls} given only part of the trained {o.model}'s parameters"
    if made:
        return made, f"{o.cls} built over another instance than the trained {o.model}"
    return None, ""


def chosen_at(cause: Cause) -> Cause:
    """The frame of a construction's stack, innermost first, whose line picks the parameters
    it is given (``build_optimizer(model.encoder.parameters(), cfg)``): where the caller of a
    factory that builds every optimizer chose a part of the model. ``cause`` itself when no
    line of its stack does."""
    stack = cause.get("stack") or []
    for n, (path, line) in enumerate(stack):
        if "parameters(" in _source_line(str(path), int(line)):
            return {**cause, "path": path, "line": line, "stack": stack[n:]}
    return cause


@functools.lru_cache(maxsize=64)
def _lines(path: str) -> tuple[str, ...]:
    try:
        return tuple(python_lines(read_source(Path(path)).decode("utf-8", errors="replace")))
    except (OSError, ValueError):
        return ()


def _source_line(path: str, line: int) -> str:
    lines = _lines(path)
    return lines[line - 1] if 0 < line <= len(lines) else ""


def departed(cause: Cause, other: Cause) -> Cause:
    """``cause`` from its first frame, innermost first, that is not ``other``'s frame at the same
    depth: where two calls through the same code (a factory that builds every model) part, the
    caller's call; ``cause`` itself when they never part."""
    stack, theirs = cause.get("stack") or [], other.get("stack") or []
    shared = 0
    while shared < min(len(stack), len(theirs)) and stack[shared] == theirs[shared]:
        shared += 1
    if shared == 0 or shared >= len(stack):
        return cause
    (path, line), rest = stack[shared], stack[shared:]
    return {**cause, "path": path, "line": line, "stack": rest}


def frozen_cause(step: StepFacts, params: list[str]) -> Optional[Cause]:
    """The requires_grad(_)(False) that froze the first of ``params`` the recorder saw frozen."""
    return next((step.frozen_cause[p] for p in params if p in step.frozen_cause), None)
