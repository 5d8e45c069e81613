"""The README's promises that code can check: the two commands, the rule table, CI's command."""

import re
from pathlib import Path

from auditor.registry import all_rules

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_the_two_commands_and_ci_runs_the_same():
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO / ".ci/run").read_text()


def test_rule_table_matches_the_registry():
    rows = dict(re.findall(r"^\| (GM\d{3}) \| ([a-z][a-z0-9-]*) \|", README, re.M))
    assert rows == {code: rule.name for code, rule in all_rules().items()}
