"""gm-audit's own program model of the repository being mutated, for the operators whose bug
exists only for some values (GM202: an extra forward moves running statistics only in a model
that holds a BatchNorm). Built once per repository, on the first question, by the static pass
itself: an operator asks the model the rule reads, not a guess of its own.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

from auditor.config import Config
from auditor.registry import all_rules
from auditor.static.dataflow import function_of
from auditor.static.engine import run_check

if TYPE_CHECKING:
    from auditor.static.facts import FunctionInfo
    from auditor.static.project import Project

T = TypeVar("T")


class ProgramModel:
    """The project of ``root`` as ``gm-audit check`` builds it, with the facts of ``rules``."""

    def __init__(self, root: Path, rules: tuple[str, ...]) -> None:
        self.root = root.resolve()
        self.rules = rules
        self._project: Optional[Project] = None

    def ask(self, query: Callable[["Project"], T]) -> T:
        # the project's paths are relative to the root, and its queries may analyse more files
        # of the tree on demand: every question is asked from there
        with contextlib.chdir(self.root):
            if self._project is None:
                chosen = [all_rules()[code] for code in self.rules]
                self._project = run_check(["."], Config(root=self.root), chosen, jobs=1,
                                          use_cache=False, need_project=True).project
            return query(self._project)


def call_event(project: "Project", path: str, line: int, func: str) -> Optional[tuple["FunctionInfo", int]]:
    """The function of ``path`` running the call of ``func`` at ``line``, and that call's
    index among its events; None when the program model has no such call."""
    project.load_mentioning("backward(")  # a training script the rules' prefilter skipped
    fn = function_of(project, path, line)
    if fn is None:
        return None
    index = next((i for i, e in enumerate(fn.events)
                  if e.kind == "call" and e.span.line == line and e.func == func), None)
    return None if index is None else (fn, index)


def trained_by_its_loss(project: "Project", path: str, line: int, func: str) -> bool:
    """Some backward the output of the module call of ``func`` at ``path``:``line`` reaches
    steps an optimizer that may hold that module's parameters (GM101's premise: a GAN's
    discriminator step, whose optimizer holds the discriminator only, trains no generator
    whatever is detached there). True when the model cannot tell."""
    from auditor.static import dataflow as df
    from auditor.static.training import Training

    found = call_event(project, path, line, func)
    if found is None:
        return True
    fn, index = found
    call, training = fn.events[index], Training.of(project)
    sinks = df.flows_from(project, fn, call).sinks
    return not sinks or any(training.steps_module_of(fn, call, s.fn, s.fn.events.index(s.event))
                            for s in sinks)


def run_by_a_program(project: "Project", path: str) -> bool:
    """Some entry point of the tree imports the file at ``path`` (a script, a ``-m`` module, a
    console script, a test): its code can run. A module nothing imports is dead code."""
    return any(path in program.files for program in project.programs())



def fresh_generator_defeats_a_seed(project: "Project", path: str, line: int) -> bool:
    """A fresh, unseeded generator built at ``path``:``line`` would defeat some global seed of
    the programs that run it (GM603's premise: a program that seeds nothing made no choice)."""
    from auditor.static.rng import project_seeding

    project.load_mentioning("backward(")  # the training script the rules' prefilter skipped
    fn = function_of(project, path, line)
    return fn is not None and bool(project_seeding(project).defeated_at(project, fn))
