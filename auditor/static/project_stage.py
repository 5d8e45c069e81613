"""The cross-file stage: every selected rule's query over the project.

The per-file stage divides over cores; this one is a single process's work over one project
(about 40% of a cold check of dgl's sources on two cores). Where ``fork`` exists, the rules
marked ``runs_beside`` (the heavy analyses: the loss-path data flow, the self-loop taint) run in
a forked child while the parent runs the others, each side on a project of its own built from
the same per-file facts. Files a rule's queries load on demand therefore stay in its own side,
and the sides are the same whether they run at once (``--jobs`` > 1) or one after the other
(``--jobs 1``): the report does not depend on the number of cores.
"""

from __future__ import annotations

import os
import traceback
from typing import Callable, Sequence

from auditor.findings import FileError, Finding
from auditor.rule import Rule
from auditor.static.isolate import Beside, Lost, can_fork
from auditor.static.project import Project

Answers = tuple[list[Finding], list[FileError], dict[str, list[str]]]


def run_rules(project: Project, rules: Sequence[type[Rule]]) -> Answers:
    """``rules`` one after another in this process: their findings, the rules that failed, and
    what their analyses left unjudged (``Project.truncated``)."""
    findings: list[Finding] = []
    errors: list[FileError] = []
    for rule in rules:
        try:
            findings.extend(rule.check_project(project))
        except Exception as exc:  # a rule's bug must not sink the others
            if os.environ.get("GM_AUDIT_DEBUG"):
                traceback.print_exc()
            errors.append(FileError("<project>", f"internal error in {rule.code}: {type(exc).__name__}: {exc}"))
    return findings, errors, project.truncated


def run_project_stage(build: Callable[[], Project], rules: Sequence[type[Rule]],
                      jobs: int) -> tuple[Project, Answers]:
    """The project ``build`` makes (the parent's side) and every rule's cross-file answers; its
    ``truncated`` then holds both sides' notes."""
    beside = [r for r in rules if r.runs_beside]
    here = [r for r in rules if not r.runs_beside]
    if not beside or not here or not can_fork():
        project = build()
        return project, run_rules(project, rules)
    if jobs == 1:  # one core: the child first, on the parent's project, which it leaves as it was
        project = build()
        child = Beside(lambda _: run_rules(project, beside), ())
    else:  # building the project is a tenth of the stage: each side builds its own at once
        child = Beside(lambda _: run_rules(build(), beside), ())
    try:
        if jobs == 1:
            theirs = child.result()
        else:
            project = build()
        findings, errors, _ = run_rules(project, here)
        if jobs != 1:
            theirs = child.result()
    finally:
        child.cancel()  # a Ctrl-C or an error here: the child does not outlive the stage
    if isinstance(theirs, Lost):
        errors += [FileError("<project>", f"internal error in {r.code}: its process {theirs.reason}")
                   for r in beside]
        return project, (findings, errors, project.truncated)
    their_findings, their_errors, their_truncated = theirs
    for path, whats in their_truncated.items():
        mine = project.truncated.setdefault(path, [])
        mine += [w for w in whats if w not in mine]
    return project, ([*findings, *their_findings], [*errors, *their_errors], project.truncated)
