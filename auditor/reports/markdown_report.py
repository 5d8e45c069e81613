"""``--format markdown``: a code-review comment for a pull request."""

from __future__ import annotations

from collections import Counter

from auditor.findings import Status
from auditor.reports import Report, source_line

ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}


def render(report: Report) -> str:
    out = ["## gm-audit", ""]
    if not report.findings and not report.errors:
        out.append(f"No findings in {report.files} file(s). ✅")
        return "\n".join(out) + "\n"
    status = Counter(f.status.value for f in report.findings)
    sev = Counter(f.severity.value for f in report.findings)
    out.append(
        f"**{len(report.findings)} finding(s)** in {report.files} file(s): "
        + ", ".join(f"{n} {s}" for s, n in sorted(sev.items()))
        + (" — " + ", ".join(f"{n} {s}" for s, n in sorted(status.items())) if status else "")
    )
    out += ["", "| | rule | location | status | message |", "|---|---|---|---|---|"]
    for f in report.findings:
        msg = f.message.replace("|", "\\|")
        out.append(
            f"| {ICON[f.severity.value]} | `{f.rule}` {f.name} | `{f.path}:{f.line}` "
            f"| {f.status.value} | {msg} |"
        )
    important = [f for f in report.findings if f.status in (Status.CONFIRMED, Status.RUNTIME)]
    rest = [f for f in report.findings if f not in important]
    for f in important:
        out += ["", *_section(f)]
    if rest:
        out += ["", "<details><summary>Details of the other findings</summary>", ""]
        for f in rest:
            out += [*_section(f), ""]
        out.append("</details>")
    if report.errors:
        out += ["", "**Errors**", ""] + [f"- `{e.path}`: {e.message}" for e in report.errors]
    return "\n".join(out) + "\n"


def _section(f) -> list[str]:
    lines = [f"### `{f.rule}` {f.name} — `{f.path}:{f.line}` ({f.status.value})", "", f.message]
    src = source_line(f.path, f.line)
    if src:
        lines += ["", "```python", src, "```"]
    lines += [f"- evidence: {e}" for e in f.evidence]
    if f.fix:
        lines.append(f"- **fix**: {f.fix}")
    return lines
