"""``--format sarif``: SARIF 2.1.0 as GitHub code scanning accepts it.

What code scanning relies on, and how this file provides it:

- every result has a ``ruleId`` and a ``ruleIndex`` into ``tool.driver.rules``, and every rule a
  ``shortDescription``, a ``fullDescription`` and a ``help`` (text and markdown: the rule's whole
  doc, shown on the alert page);
- ``partialFingerprints`` so an alert stays the same alert across commits: the fingerprint hashes
  the rule, the path and the reported line's text, not its number (:mod:`auditor.baseline`);
- ``artifactLocation.uri`` relative to the repository root (the ``upload-sarif`` action resolves
  relative URIs against the checkout, and paths must not change between runs), with ``uriBaseId``
  ``%SRCROOT%`` declared in ``originalUriBaseIds``;
- ``level`` from the severity, ``note`` for a finding the probe refuted; the probe status and
  evidence as result properties and in the message text (the only part an alert shows);
- no ``automationDetails``: the workflow's ``category`` input sets it, and the action leaves an
  existing one alone, which would merge check and probe uploads into one analysis.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from auditor import __version__
from auditor.baseline import fingerprints, repository_root
from auditor.findings import Finding, Severity, Status
from auditor.registry import all_rules
from auditor.reports import Report, failed_run

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub's own vocabulary for `problem.severity` (sorting and filtering of alerts)
PROBLEM = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}
FINGERPRINT_KEY = "gmAudit/v1"
MAX_DESCRIPTION = 1024  # GitHub truncates short and full descriptions beyond this


def _first_paragraph(doc: str, heading: str = "## What it does") -> str:
    """The paragraph under ``heading``, on one line (the rule's full description)."""
    if heading not in doc:
        return ""
    body = doc.split(heading, 1)[1].strip()
    para = re.split(r"\n\s*\n|\n#", body, maxsplit=1)[0]
    return " ".join(para.split())


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


RULES_ANCHOR = "#rules"  # the README's table of rules


@functools.lru_cache(maxsize=1)
def rules_page() -> Optional[str]:
    """Where a rule's documentation lives, for ``helpUri``: the rules table of the README on
    the project's repository page (the ``Repository`` or ``Homepage`` URL of its metadata), else
    in the README beside this installation (a source checkout), else None. Each rule's full doc
    is also in the descriptor's ``help`` and in ``gm-audit explain CODE``."""
    from importlib import metadata

    try:
        urls = metadata.metadata("gm-audit").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    declared = dict(u.split(", ", 1) for u in urls if ", " in u)
    base = declared.get("Repository") or declared.get("Homepage")
    if base:
        return base.rstrip("/") + RULES_ANCHOR
    readme = Path(__file__).resolve().parents[2] / "README.md"
    return readme.as_uri() + RULES_ANCHOR if readme.is_file() else None


def rule_descriptor(rule) -> dict[str, Any]:
    doc = rule.doc.strip()
    page = rules_page()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": _clip(rule.summary)},
        "fullDescription": {"text": _clip(_first_paragraph(doc) or rule.summary)},
        **({"helpUri": page} if page else {}),
        "help": {
            "text": f"{rule.code} {rule.name}: {rule.summary}\n\n{doc}",
            "markdown": f"# {rule.code} `{rule.name}`\n\n{rule.summary}\n\n{doc}",
        },
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {
            "tags": ["graphmae", "pytorch", "dgl"],
            "precision": "high",
            "problem.severity": PROBLEM[rule.severity],
        },
    }


def engine_descriptor(f: Finding) -> dict[str, Any]:
    """Findings of the engine itself (GM000 syntax error, GM001 unused suppression): no rule file."""
    text = f"{f.rule} {f.name}: reported by the gm-audit engine"
    return {
        "id": f.rule,
        "name": f.name,
        "shortDescription": {"text": f.name.replace("-", " ")},
        "fullDescription": {"text": text},
        "help": {"text": f"{text}. Fix: {f.fix}", "markdown": f"# {f.rule} `{f.name}`\n\n{f.fix}"},
        "defaultConfiguration": {"level": LEVEL[f.severity]},
        "properties": {"tags": ["gm-audit"], "problem.severity": PROBLEM[f.severity]},
    }


def level(f: Finding) -> str:
    return "note" if f.status == Status.REFUTED else LEVEL[f.severity]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?" else text + "."


def message(f: Finding) -> str:
    parts = [_sentence(f.message)]
    if f.status != Status.STATIC:
        parts.append(_sentence(f"Probe: {f.status.value}" + "".join(f"; {e}" for e in f.evidence)))
    if f.fix:
        parts.append(_sentence(f"Fix: {f.fix}"))
    return " ".join(parts)


def artifact_location(path: str, root: Path) -> dict[str, str]:
    absolute = (Path.cwd() / path).resolve()
    try:
        # percent-encoded bytes: a name with spaces, '#' or bytes that are not UTF-8 stays one URI
        relative = quote(os.fsencode(absolute.relative_to(root).as_posix()))
        return {"uri": relative, "uriBaseId": "%SRCROOT%"}
    except ValueError:  # outside the repository: an absolute URI, which code scanning skips
        return {"uri": absolute.as_uri()}


def region(f: Finding) -> dict[str, int]:
    out = {"startLine": max(1, f.line), "startColumn": max(1, f.column)}
    end_line = max(f.end_line, out["startLine"])
    out["endLine"] = end_line
    # SARIF's endColumn is exclusive; an empty span on one line means "to the end of the line"
    if end_line > out["startLine"] or f.end_column > out["startColumn"]:
        out["endColumn"] = max(1, f.end_column)
    return out


def result(f: Finding, fingerprint: str, rule_index: int, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": level(f),
        "message": {"text": message(f)},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact_location(f.path, root),
            "region": region(f),
        }}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        "properties": {
            "status": f.status.value,
            "severity": f.severity.value,
            "evidence": list(f.evidence),
            "fix": f.fix,
        },
    }
    related = [(path, int(line)) for path, _, line in (w.rpartition(":") for w in f.related)
               if path and line.isdigit()]
    if related:  # the places the finding depends on (the evaluation a hoisted train() misses)
        out["relatedLocations"] = [
            {"id": i, "physicalLocation": {"artifactLocation": artifact_location(path, root),
                                           "region": {"startLine": line}}}
            for i, (path, line) in enumerate(related)]
    return out


def render(report: Report, root: Optional[Path] = None) -> str:
    root = root or repository_root(Path.cwd().resolve())
    rules = all_rules()
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for f in sorted(report.findings, key=lambda f: f.rule):
        if f.rule not in index:
            index[f.rule] = len(descriptors)
            descriptors.append(rule_descriptor(rules[f.rule]) if f.rule in rules
                               else engine_descriptor(f))
    results = [
        result(f, fp, index[f.rule], root)
        for f, fp in zip(report.findings, fingerprints(report.findings))
    ]
    notifications = []
    for e in report.errors:
        note: dict[str, Any] = {"level": "error", "message": {"text": f"{e.path}: {e.message}"}}
        if e.path:
            note["locations"] = [{"physicalLocation": {
                "artifactLocation": artifact_location(e.path, root)}}]
        notifications.append(note)
    crashed = failed_run(report)
    if crashed is not None:
        tail = "\n".join(t for t in report.extra.get("output_tail") or [] if isinstance(t, str))
        notifications.append({
            "level": "error",
            "message": {"text": f"{report.command}: {crashed.get('summary') or crashed.get('stopped')}"
                                + (f"\nlast output of the program:\n{tail}" if tail else "")},
            "properties": {"stopped": crashed.get("stopped"), "exit": crashed.get("exit")},
        })
    run = {
        "tool": {"driver": {
            "name": "gm-audit",
            "version": __version__,
            "semanticVersion": __version__,
            "rules": descriptors,
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri().rstrip("/") + "/"}},
        # libcst columns count code points, not SARIF's default UTF-16 code units
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{
            "executionSuccessful": crashed is None,
            "toolExecutionNotifications": notifications,
            "properties": {"command": report.command, "files": report.files},
        }],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
