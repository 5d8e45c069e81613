"""``--format github``: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations

from auditor.findings import Severity, Status
from auditor.reports import Report

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    out = []
    for f in report.findings:
        level = "notice" if f.status == Status.REFUTED else LEVEL[f.severity]
        title = f"{f.rule} {f.name}" + (f" ({f.status.value})" if f.status != Status.STATIC else "")
        body = f.message + (f"\nFix: {f.fix}" if f.fix else "")
        body += "".join(f"\n- {e}" for e in f.evidence)
        out.append(
            f"::{level} file={_prop(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={_prop(title)}::{_data(body)}"
        )
    for e in report.errors:
        out.append(f"::error file={_prop(e.path)},title=gm-audit::{_data(e.message)}")
    return "\n".join(out) + ("\n" if out else "")
