"""Every rule's VALID and INVALID examples, run through the whole engine (no per-rule code)."""

import pytest

from auditor.registry import all_rules
from auditor.testing import assert_example, examples

CASES = [(rule, name, case) for rule in all_rules().values() for name, case in examples(rule)]


@pytest.mark.parametrize("rule,name,case", CASES, ids=[c[1] for c in CASES])
def test_rule_example(rule, name, case):
    assert_example(rule, case)


@pytest.mark.parametrize("rule", list(all_rules().values()), ids=list(all_rules()))
def test_rule_is_documented(rule):
    assert rule.code and rule.name and rule.summary
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in rule.doc, f"{rule.code} doc lacks {heading!r}"
    assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"
