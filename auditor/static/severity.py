"""Error severity only where a training run would meet the finding.

A finding in a file that no entry program of the tree runs (library code that no script, no
`python -m` package and no console script imports; test modules) describes code whose use the
tree does not show: whether it ever trains anything is the caller's. Such findings are reported
one level lower, at most as warnings, and say why; the probe gives a finding its rule's
severity back when a run confirms it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Collection, Iterable

from auditor.findings import Finding, Severity, Status
from auditor.static.config_values import files_read
from auditor.static.programs import CONSOLE, MAIN_MODULE, SCRIPT

if TYPE_CHECKING:
    from auditor.static.project import Project

RUNS_TRAINING = (SCRIPT, MAIN_MODULE, CONSOLE)
NOT_ON_A_PROGRAM = " (a warning here: no entry script of the tree runs this file)"


def on_entry_paths(findings: Iterable[Finding], project: "Project",
                   codes: Collection[str]) -> list[Finding]:
    """``findings`` of the rules ``codes`` with errors outside every entry program's files
    lowered to warnings (gm-audit's own diagnostics, such as a file that cannot be parsed, keep
    theirs)."""
    ran: set[str] = set()
    for program in project.programs():
        if program.kind in RUNS_TRAINING:
            ran |= program.files
    # a configuration file the analysis read values from for a program's code
    ran |= set(files_read(project))
    return [replace(f, severity=Severity.WARNING, message=f.message + NOT_ON_A_PROGRAM)
            if f.severity is Severity.ERROR and f.rule in codes and f.path not in ran else f
            for f in findings]


def as_run(findings: Iterable[Finding], severities: dict[str, Severity]) -> list[Finding]:
    """A finding a run confirmed is on a path the run took: its rule's severity again."""
    out = []
    for f in findings:
        if f.message.endswith(NOT_ON_A_PROGRAM) and f.status is Status.CONFIRMED:
            f = replace(f, severity=severities.get(f.rule, f.severity),
                        message=f.message.removesuffix(NOT_ON_A_PROGRAM))
        out.append(f)
    return out
