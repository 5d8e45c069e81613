"""``--format markdown``: a code-review comment for a pull request (GitHub-flavoured Markdown).

Counts by probe status first; then one section per finding the run proved (``confirmed``) or
found on its own (``runtime``), with the code excerpt, the evidence and the fix; everything else
(static only, unexercised, refuted) collapsed in a ``<details>`` block. After a diff, the first
divergence and the stage table. GitHub rejects comments over 65,536 characters: past a budget the
collapsed part keeps its table and drops its sections, then the table itself is cut.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from auditor.findings import Finding, Severity, Status
from auditor.reports import Report, failed_run, no_divergence, source_lines
from auditor.reports.safe_text import code_span, printable

ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}
STATUS_ICON = {
    "confirmed": "❗", "runtime": "⚡", "static": "🔎", "unexercised": "💤", "untaken": "💤", "outside": "🚫", "refuted": "✅",
}
STATUS_ORDER = ("confirmed", "runtime", "static", "unexercised", "untaken", "outside", "refuted")
PROMINENT = (Status.CONFIRMED, Status.RUNTIME)
BUDGET = 60_000  # characters; GitHub's limit for a comment body is 65,536
CONTEXT = 2  # lines of code shown around the reported span
MAX_EXCERPT = 12


# a code span as CommonMark pairs them: a backtick run closed by a run of the same length
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def inline(text: str) -> str:
    """Text for a paragraph: ``<``/``>`` escaped outside code spans so nothing becomes HTML."""
    text, out, at = printable(text), [], 0
    for span in CODE_SPAN.finditer(text):
        out += [_no_html(text[at:span.start()]), span.group()]
        at = span.end()
    return "".join([*out, _no_html(text[at:])])


def _no_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cell(text: str) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return inline(" ".join(text.split())).replace("|", "\\|")


def excerpt(f: Finding) -> list[str]:
    """The reported lines with a little context, the flagged ones marked, in a python fence."""
    lines = source_lines(f.path)
    if not 0 < f.line <= len(lines):
        return []
    end = min(max(f.end_line, f.line), len(lines), f.line + MAX_EXCERPT - 1)
    first, last = max(1, f.line - CONTEXT), min(len(lines), end + CONTEXT)
    body = []
    for n in range(first, last + 1):
        text = lines[n - 1]
        text = printable(text)
        body.append(f"{text}  # ◀ {f.rule}" if f.line <= n <= end else text)
    longest = max((len(m) for m in re.findall(r"`+", "\n".join(body))), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{code_span(f.path)} lines {first}–{last}:", "", f"{fence}python", *body, fence]


def section(f: Finding) -> list[str]:
    head = (f"### {ICON[f.severity.value]} `{f.rule}` {f.name} — {code_span(f'{f.path}:{f.line}')} "
            f"· {STATUS_ICON[f.status.value]} {f.status.value}")
    out = [head, "", inline(f.message), ""]
    code = excerpt(f)
    if code:
        out += [*code, ""]
    if f.evidence:
        out += ["**Evidence**", "", *[f"- {inline(e)}" for e in f.evidence], ""]
    if f.fix:
        out += [f"**Fix:** {inline(f.fix)}", ""]
    return out


def table(findings: list[Finding]) -> list[str]:
    out = ["| | rule | location | status | message |", "|---|---|---|---|---|"]
    for f in findings:
        out.append(
            f"| {ICON[f.severity.value]} | `{f.rule}` {f.name} | {cell(code_span(f'{f.path}:{f.line}'))} "
            f"| {f.status.value} | {cell(f.message)} |"
        )
    return out


def summary(report: Report) -> list[str]:
    status = Counter(f.status.value for f in report.findings)
    sev = Counter(f.severity.value for f in report.findings)
    out = ["| status | findings |", "|---|---:|"]
    out += [f"| {STATUS_ICON[s]} {s} | {status[s]} |" for s in STATUS_ORDER if status[s]]
    facts = [", ".join(f"{sev[s]} {s}" for s in ("error", "warning", "info") if sev[s])]
    facts.append(f"{report.files} file(s)")
    if report.seconds:
        facts.append(f"{report.seconds:.1f}s")
    known = report.extra.get("baseline", {}).get("known", 0)
    if known:
        facts.append(f"{known} known finding(s) from the baseline not shown")
    return [*out, "", " · ".join(x for x in facts if x)]


def divergence(extra: dict[str, Any]) -> list[str]:
    """After ``gm-audit diff``: where the runs first differ, and every stage's status."""
    stages = extra.get("stages")
    if not isinstance(stages, list):
        return []
    first = extra.get("first_divergence")
    out = ["### Reference vs candidate", ""]
    if isinstance(first, dict):
        place = f"{first.get('path')}:{first.get('line', '?')}"
        where = f" ({code_span(place)})" if first.get("path") else ""
        rule = f", likely `{first['rule']}`" if first.get("rule") else ""
        out.append(f"First divergence at stage **{first.get('stage', '?')}**: "
                   f"{code_span(str(first.get('name', '?')))} — {inline(str(first.get('detail', '')))}{where}{rule}")
    else:
        out.append(no_divergence(extra))
    out += ["", "| stage | status | items |", "|---|---|---:|"]
    for s in stages:
        if isinstance(s, dict):
            items = s.get("items") or []
            out.append(f"| {cell(str(s.get('stage', '?')))} | {cell(str(s.get('status', '?')))} "
                       f"| {len(items) if isinstance(items, list) else ''} |")
    return [*out, ""]


def is_prominent(f: Finding) -> bool:
    """Shown expanded: what the run proved, and every error a run did not refute (a reviewer
    must not have to open a fold to see an error-level finding)."""
    return f.status in PROMINENT or (f.severity == Severity.ERROR and f.status != Status.REFUTED)


def crash_banner(report: Report) -> list[str]:
    """A failed or interrupted probe (or diff) run, said before anything else: its findings
    are not a clean bill."""
    run = failed_run(report)
    if run is None:
        return []
    out = ["> [!CAUTION]", f"> **The {report.command} run did not complete**: "
           f"{inline(str(run.get('summary') or run.get('stopped')))}. Findings marked unexercised "
           "may only mean the program stopped before reaching their lines."]
    tail = [t for t in report.extra.get("output_tail") or [] if isinstance(t, str)]
    if tail:
        out += [">", "> ```text", *(f"> {printable(t).replace('```', 'ˋˋˋ')}" for t in tail), "> ```"]
    return [*out, ""]


def render(report: Report) -> str:
    out = ["## gm-audit", "", *crash_banner(report)]
    if not report.findings and not report.errors:
        out += [f"No new findings in {report.files} file(s). ✅", ""]
        out += summary(report)[-1:] if report.extra.get("baseline") else []
        return "\n".join([*out, *divergence(report.extra)]).rstrip() + "\n"
    out += [*summary(report), ""]
    out += divergence(report.extra)
    prominent = [f for f in report.findings if is_prominent(f)]
    rest = [f for f in report.findings if not is_prominent(f)]
    for n, f in enumerate(prominent):
        if len("\n".join(out)) > BUDGET:
            out += [f"_{len(prominent) - n} more finding(s) shown in full left out to fit a comment; "
                    "see the SARIF or HTML report._", ""]
            rest = [*prominent[n:], *rest]
            break
        out += section(f)
    if report.errors:
        out += ["**Files gm-audit could not check**", ""]
        out += [f"- {code_span(e.path)}: {inline(e.message)}" for e in report.errors] + [""]
    if rest:
        kinds = Counter(f.status.value for f in rest)
        label = ", ".join(f"{kinds[s]} {s}" for s in STATUS_ORDER if kinds[s])
        head = [f"<details><summary>{len(rest)} other finding(s): {label}</summary>", ""]
        details = [s for f in rest for s in section(f)]
        used = len("\n".join(out))
        listing = table(rest)
        if used + len("\n".join([*listing, *details])) > BUDGET:
            details = ["_Sections left out to fit a comment; see the SARIF or HTML report._", ""]
            while len(listing) > 2 and used + len("\n".join(listing)) > BUDGET:
                listing.pop()
            if len(listing) - 2 < len(rest):
                details.insert(0, f"_{len(rest) - len(listing) + 2} more finding(s) not listed._")
        out += [*head, *listing, "", *details, "</details>"]
    return "\n".join(out).rstrip() + "\n"
