"""``--output-format gitlab``: GitLab Code Quality JSON (a list of issues: description,
check_name, fingerprint, severity, location.path and location.lines.begin), for a CI job's
``artifacts:reports:codequality``. Paths are relative to the repository root and fingerprints are
the baseline's (stable when lines move), so GitLab tells new issues from known ones in a merge
request."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from auditor.baseline import fingerprints, repository_path, repository_root
from auditor.findings import Severity, Status
from auditor.reports import Report

# GitLab's levels: info, minor, major, critical, blocker
SEVERITY = {Severity.INFO: "info", Severity.WARNING: "major", Severity.ERROR: "critical"}


def render(report: Report) -> str:
    root = repository_root(Path.cwd().resolve())
    issues = [{
        "description": f.message + (f" ({f.status.value})" if f.status != Status.STATIC else ""),
        "check_name": f.rule,
        "fingerprint": fp,
        "severity": "info" if f.status == Status.REFUTED else SEVERITY[f.severity],
        "location": {"path": repository_path(f.path, root),
                     "lines": {"begin": f.line, "end": max(f.end_line, f.line)}},
    } for f, fp in zip(report.findings, fingerprints(report.findings))]
    for e in report.errors:
        path = repository_path(e.path, root)
        issues.append({
            "description": e.message, "check_name": "gm-audit-error",
            "fingerprint": hashlib.sha256(f"{path}\0{e.message}".encode("utf-8", "surrogateescape"))
            .hexdigest()[:32],
            "severity": "critical", "location": {"path": path, "lines": {"begin": max(e.line, 1)}},
        })
    return json.dumps(issues, indent=2) + "\n"
