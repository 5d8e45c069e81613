"""Each rule's documentation shows what it finds: the code of its "## Example" section triggers
the rule and the code of its "## Use instead" section does not (run through the whole engine)."""

import re

import pytest

from auditor.registry import all_rules
from auditor.testing import check_code

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def section_code(doc: str, heading: str) -> str:
    """The python blocks of one ``## heading`` section, joined."""
    part = doc.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    blocks = BLOCK.findall(part)
    assert blocks, f"no python block under ## {heading}"
    return "\n".join(blocks)


@pytest.mark.parametrize("rule", list(all_rules().values()), ids=list(all_rules()))
def test_doc_example_triggers_and_use_instead_does_not(rule):
    bad = check_code(section_code(rule.doc, "Example"), [rule])
    assert not bad.errors, bad.errors
    assert [f for f in bad.findings if f.rule == rule.code], \
        f"{rule.code}: its doc's Example does not trigger it"
    good = check_code(section_code(rule.doc, "Use instead"), [rule])
    assert not good.errors, good.errors
    assert not [f for f in good.findings if f.rule == rule.code], \
        f"{rule.code}: its doc's Use instead still triggers it"
