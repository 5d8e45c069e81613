"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

A job shows a limited number of annotations of each level (10 per step at the time of writing),
so the findings the probe proved come first, then by severity; refuted ones are notices. Paths
are relative to the repository root, as GitHub resolves an annotation's ``file``, wherever in the
checkout gm-audit ran.
"""

from __future__ import annotations

from pathlib import Path

from auditor.baseline import repository_path, repository_root
from auditor.findings import Severity, Status
from auditor.reports import Report
from auditor.reports.safe_text import printable

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
PRIORITY = {Status.CONFIRMED: 0, Status.RUNTIME: 0, Status.STATIC: 1, Status.UNEXERCISED: 2,
            Status.OUTSIDE: 2, Status.UNTAKEN: 2, Status.REFUTED: 3}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    root = repository_root(Path.cwd().resolve())
    out = []
    for f in sorted(report.findings, key=lambda f: (PRIORITY[f.status], -f.severity.rank)):
        level = "notice" if f.status == Status.REFUTED else LEVEL[f.severity]
        title = f"{f.rule} {f.name}" + (f" ({f.status.value})" if f.status != Status.STATIC else "")
        body = f.message + (f"\nFix: {f.fix}" if f.fix else "")
        body = printable(body + "".join(f"\n- {e}" for e in f.evidence), multiline=True)
        out.append(
            f"::{level} file={_prop(printable(repository_path(f.path, root)))},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={_prop(title)}::{_data(body)}"
        )
    for e in report.errors:
        where = _prop(printable(repository_path(e.path, root)))
        out.append(f"::error file={where},title=gm-audit::{_data(printable(e.message))}")
    return "\n".join(out) + ("\n" if out else "")
