"""``--format json``: exactly the contract of DESIGN section 6."""

from __future__ import annotations

import json

from auditor import __version__
from auditor.reports import Report


def to_dict(report: Report) -> dict:
    data = {
        "tool": {"name": "gm-audit", "version": __version__},
        "command": report.command,
        "findings": [f.to_json() for f in report.findings],
        "errors": [e.to_json() for e in report.errors],
        "summary": {
            "files": report.files,
            "findings": len(report.findings),
            "seconds": round(report.seconds, 3),
        },
    }
    data.update(report.extra)
    return data


def render(report: Report) -> str:
    return json.dumps(to_dict(report), indent=2) + "\n"
