"""``--format sarif``: SARIF 2.1.0 as GitHub code scanning accepts it."""

from __future__ import annotations

import json
from pathlib import Path

from auditor import __version__
from auditor.findings import Severity, Status
from auditor.registry import all_rules
from auditor.reports import Report, source_line

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def rule_descriptor(rule) -> dict:
    doc = rule.doc.strip()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.summary},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["graphmae", "pytorch", "correctness"], "precision": "high"},
    }


def render(report: Report) -> str:
    rules = all_rules()
    used = sorted({f.rule for f in report.findings if f.rule in rules})
    index = {code: i for i, code in enumerate(used)}
    results = []
    for f in report.findings:
        level = "note" if f.status == Status.REFUTED else LEVEL[f.severity]
        result = {
            "ruleId": f.rule,
            "level": level,
            "message": {"text": f.message + (f" Fix: {f.fix}" if f.fix else "")},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                    "region": {
                        "startLine": f.line, "startColumn": f.column,
                        "endLine": f.end_line, "endColumn": max(f.end_column, f.column),
                    },
                }
            }],
            "partialFingerprints": {"gmAudit/v1": f.fingerprint(source_line(f.path, f.line))},
            "properties": {"status": f.status.value, "evidence": f.evidence, "fix": f.fix},
        }
        if f.rule in index:
            result["ruleIndex"] = index[f.rule]
        results.append(result)
    run = {
        "tool": {"driver": {
            "name": "gm-audit",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": "https://github.com/gm-audit/gm-audit",
            "rules": [rule_descriptor(rules[c]) for c in used],
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "toolExecutionNotifications": [
                {"level": "error", "message": {"text": f"{e.path}: {e.message}"}}
                for e in report.errors
            ],
        }],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
