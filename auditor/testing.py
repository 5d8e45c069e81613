"""Runs rule examples (VALID / INVALID) through the whole engine, as the generic test does.

Like Fixit's ``fixit.testing``: every rule's examples become test cases with no per-rule test code.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator

from auditor.config import Config
from auditor.findings import Finding
from auditor.rule import Invalid, Rule, Source, Valid
from auditor.static.engine import CheckResult, run_check

DEFAULT_FILE = "example.py"


def write_sources(code: Source, root: Path) -> None:
    files = {DEFAULT_FILE: code} if isinstance(code, str) else code
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def check_code(code: Source, rules: list[type[Rule]]) -> CheckResult:
    """Write ``code`` to a temporary project and run the static pass on it (no cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_sources(code, root)
        old = os.getcwd()
        os.chdir(root)
        try:
            return run_check(["."], Config(root=root), rules, jobs=1, use_cache=False)
        finally:
            os.chdir(old)


def examples(rule: type[Rule]) -> Iterator[tuple[str, Valid | Invalid]]:
    for i, case in enumerate(rule.VALID):
        yield f"{rule.code}-valid-{i}", case
    for i, case in enumerate(rule.INVALID):
        yield f"{rule.code}-invalid-{i}", case


def assert_example(rule: type[Rule], case: Valid | Invalid) -> None:
    result = check_code(case.code, [rule])
    assert not result.errors, f"example did not analyse cleanly: {result.errors}"
    mine = [f for f in result.findings if f.rule == rule.code]
    if isinstance(case, Valid):
        assert not mine, f"{rule.code} must stay silent here, but reported:\n" + _show(mine)
        return
    path = case.path or DEFAULT_FILE
    hits = [f for f in mine if f.path == path and f.line == case.line]
    assert hits, (
        f"{rule.code} must report at {path}:{case.line}; it reported:\n" + (_show(mine) or "  nothing")
    )
    if case.column is not None:
        assert any(f.column == case.column for f in hits), _show(hits)
    if case.message_contains:
        assert any(case.message_contains in f.message for f in hits), _show(hits)


def _show(findings: list[Finding]) -> str:
    return "\n".join(f"  {f.path}:{f.line}:{f.column} {f.rule} {f.message}" for f in findings)
