"""Each rule's documentation shows what it finds: the code of its "## Example" section triggers
the rule and the code of its "## Use instead" section does not (run through the whole engine)."""

import json
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


CODES_WITHOUT_RULE_FILE = ["GM000", "GM001", "GM701", "GM702", "GM703", "GM704"]


@pytest.mark.parametrize("code", CODES_WITHOUT_RULE_FILE)
def test_explain_documents_the_engine_and_probe_codes(cli, tmp_path, code):
    proc = cli("explain", code.lower(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"# {code} ")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## Fix safety"):
        assert heading in proc.stdout, f"{code} lacks {heading}"


def test_engine_code_examples(cli, tmp_path):
    from auditor.code_docs import DOCS

    bad = check_code(section_code(DOCS["GM000"], "Example"), [])
    assert [f.rule for f in bad.findings] == ["GM000"]
    assert check_code(section_code(DOCS["GM000"], "Use instead"), []).findings == []
    for heading, expected in (("Example", ["GM001"]), ("Use instead", [])):
        (tmp_path / "x.py").write_text("import torch\n" + section_code(DOCS["GM001"], heading))
        proc = cli("check", "--no-cache", "--report-unused-ignores", "--format", "json", ".",
                   cwd=tmp_path)
        assert [f["rule"] for f in json.loads(proc.stdout)["findings"]] == expected, proc.stdout
