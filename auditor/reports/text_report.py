"""``--format text``: findings grouped by file, the source line with a marker under the span,
message, fix and evidence, then a summary table (rich; colour only on a terminal)."""

from __future__ import annotations

import io
import sys
from itertools import groupby
from typing import Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from auditor.findings import Finding, Severity, Status
from auditor.reports import Report, source_line
from auditor.reports.safe_text import printable

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
STATUS_STYLE = {
    Status.CONFIRMED: "bold red", Status.REFUTED: "green", Status.UNEXERCISED: "dim",
    Status.OUTSIDE: "dim", Status.UNTAKEN: "dim",
    Status.RUNTIME: "magenta", Status.STATIC: "",
}


def fix_safety(report: Report, finding: Finding) -> str:
    """none | safe | unsafe: whether ``--fix`` (safe) or ``--unsafe-fixes`` fixes ``finding``, as
    computed for ``--show-fixes`` (a fix that would not hold is still rolled back)."""
    return (report.fix_marks or {}).get(finding.sort_key(), "none")


def render(report: Report, color: Optional[bool] = None, statistics: bool = False,
           show_fixes: bool = False) -> str:
    buf = io.StringIO()
    if color is None:
        color = sys.stdout.isatty()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=120,
                      highlight=False, soft_wrap=True)
    if not statistics:
        findings(console, report, show_fixes)
    for e in report.errors:
        console.print(Text(f"error: {printable(e.path)}: {printable(e.message)}", style="red"))
    for line in report.extra.get("text_sections", []):
        console.print(Text(printable(line)))  # the program's own output: never rich markup
    console.print(summary_table(report))
    if show_fixes and report.fix_marks is not None:
        safety = [fix_safety(report, f) for f in report.findings]
        console.print(f"[*] {safety.count('safe')} fixable with `gm-audit check --fix`; "
                      f"[*?] {safety.count('unsafe')} more with --unsafe-fixes", markup=False)
    return buf.getvalue()


FIX_MARK = {"safe": "[*] ", "unsafe": "[*?] ", "none": ""}


def findings(console: Console, report: Report, show_fixes: bool) -> None:
    for path, group in groupby(report.findings, key=lambda f: f.path):
        console.print(Text(printable(path), style="bold underline"))
        for f in group:
            head = Text()
            head.append(f"  {printable(f.path)}:{f.line}:{f.column}: ", style="bold")
            head.append(f"{f.rule} ", style=STYLE[f.severity])
            if show_fixes:
                head.append(FIX_MARK[fix_safety(report, f)], style="bold")
            head.append(f"[{f.name}] ", style="dim")
            if f.status != Status.STATIC:
                head.append(f"({f.status.value}) ", style=STATUS_STYLE[f.status])
            head.append(printable(f.message))
            console.print(head)
            src = source_line(f.path, f.line)
            if src:
                stripped = src.lstrip()
                indent = len(src) - len(stripped)
                end = f.end_column if f.end_line == f.line else len(src) + 1
                width = max(1, end - f.column)
                console.print(Text(f"    {f.line:>5} | {printable(stripped)}", style="dim"))
                console.print(Text(" " * (12 + max(0, f.column - 1 - indent)) + "^" * width,
                                   style=STYLE[f.severity]))
            for e in f.evidence:
                console.print(Text(f"      evidence: {printable(e)}", style="italic"))
            if f.fix:
                console.print(Text(f"      fix: {printable(f.fix)}", style="green"))
        console.print()


def summary_table(report: Report) -> Table:
    table = Table(title=None, show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("rule")
    table.add_column("name")
    table.add_column("severity")
    table.add_column("count", justify="right")
    counts: dict[tuple[str, str, str], int] = {}
    for f in report.findings:
        key = (f.rule, f.name, f.severity.value)
        counts[key] = counts.get(key, 0) + 1
    for (rule, name, sev), n in sorted(counts.items()):
        table.add_row(rule, name, sev, str(n))
    noun = "file" if report.files == 1 else "files"
    table.caption = (
        f"{len(report.findings)} finding(s) in {report.files} {noun}, "
        f"{len(report.errors)} file(s) not checked ({report.seconds:.2f}s)"
    )
    return table
