"""``--output-format concise``: one line per finding, ``path:line:col: CODE message``, as Ruff's
concise format (what editors' problem matchers and ``grep`` read). A probe's verdict other than
``static`` follows in brackets; a file that could not be read is ``path:line:col: error: ...``."""

from __future__ import annotations

from auditor.findings import Status
from auditor.reports import Report
from auditor.reports.safe_text import printable


def render(report: Report) -> str:
    out = [f"{printable(f.path)}:{f.line}:{f.column}: {f.rule} {printable(f.message)}"
           + (f" [{f.status.value}]" if f.status != Status.STATIC else "")
           for f in report.findings]
    out += [f"{printable(e.path)}:{max(e.line, 1)}:{max(e.column, 1)}: error: {printable(e.message)}"
            for e in report.errors]
    return "".join(line + "\n" for line in out)
