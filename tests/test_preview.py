"""Preview rules, as Ruff's: off unless `--preview` or `preview = true`; selecting one by its code
while preview is off leaves it out and says so. Run through the CLI on each preview rule's own
first INVALID example."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.registry import all_rules
from auditor.testing import write_sources

PREVIEW = [r for r in all_rules().values() if r.preview]


def check(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", "check", ".", "--format", "json",
                           "--no-cache", *args], cwd=root, capture_output=True, text=True,
                          timeout=120)


def codes(run: subprocess.CompletedProcess) -> set[str]:
    return {f["rule"] for f in json.loads(run.stdout)["findings"]}


def test_the_rule_table_says_which_rules_are_preview():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for rule in all_rules().values():
        status = "preview" if rule.preview else "stable"
        assert f"| {rule.code} | {rule.name} |" in readme
        row = next(line for line in readme.splitlines() if line.startswith(f"| {rule.code} |"))
        assert row.rstrip().endswith(f"| {status} |"), row


@pytest.mark.parametrize("rule", PREVIEW, ids=[r.code for r in PREVIEW])
def test_a_preview_rule_reports_only_with_preview(tmp_path, rule):
    write_sources(rule.INVALID[0].code, tmp_path)
    assert rule.code not in codes(check(tmp_path))
    assert rule.code in codes(check(tmp_path, "--preview"))
    asked = check(tmp_path, "--select", rule.code)
    assert rule.code not in codes(asked) and "preview rule" in asked.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.gm-audit]\npreview = true\n")
    assert rule.code in codes(check(tmp_path))
    assert rule.code not in codes(check(tmp_path, "--no-preview"))
