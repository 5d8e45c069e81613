"""Which files' module code leads, by calls, to each static finding: the probe's ``reach``.

A finding in a function that only another entry point's calls reach (a loader of a second
script) cannot run in a program that never imports that script; the recorder uses this list to
leave such a line out of the ``--steps auto`` wait (``auditor/probe/hooks/branches.py``).
Static only: never imports torch or dgl.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional

from auditor.findings import Finding
from auditor.static.engine import CheckResult
from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import FunctionInfo
from auditor.static.project import Project


def reach_files(project: Project, findings: Iterable[Finding]) -> dict[tuple[str, int], dict]:
    """(path, line) -> ``{"files": [...], "calls": [[path, line], ...]}``: the files whose module
    body calls, directly or through other functions, the function holding the finding, and the
    lines that call that function. Left out (unknown) when no call the static model sees reaches
    that function (a forward, a callback, a registry) or the line is module code."""
    by_path: dict[str, list[FunctionInfo]] = defaultdict(list)
    for fn in project.functions.values():
        if fn.span is not None and fn.name != MODULE_SCOPE:
            by_path[fn.path].append(fn)
    out: dict[tuple[str, int], dict] = {}
    for f in findings:
        fn = _innermost(by_path.get(f.path, ()), f.line)
        if fn is None:
            continue
        files = sorted({project.functions[q].path for q in project.ancestors(fn.qualname)
                        if q in project.functions and project.functions[q].name == MODULE_SCOPE})
        if files:
            calls = sorted({(project.functions[c].path, e.span.line) for c in project.callers(fn.qualname)
                            if c in project.functions for e in project.call_sites(c, fn.qualname)})
            out[(f.path, f.line)] = {"files": files, "calls": [list(c) for c in calls]}
    return out


def watch_list(static: CheckResult) -> list[list]:
    """The recorder's watch list: ``[path, line, end_line, reach]`` per finding span (reach as
    :func:`reach_files` gives it, None when unknown or when the static pass kept no project)."""
    reach = reach_files(static.project, static.findings) if static.project is not None else {}
    spans = {(f.path, f.line, f.end_line) for f in static.findings}
    for f in static.findings:  # the places a finding depends on must run too
        for where in f.related:
            path, _, line = where.rpartition(":")
            if path and line.isdigit():
                spans.add((path, int(line), int(line)))
    spans = sorted(spans)
    return [[*span, reach.get(span[:2])] for span in spans]


def _innermost(functions: Iterable[FunctionInfo], line: int) -> Optional[FunctionInfo]:
    holding = [fn for fn in functions if fn.span and fn.span.line <= line <= fn.span.end_line]
    return min(holding, key=lambda fn: fn.span.end_line - fn.span.line) if holding else None
