"""Preview kinds, as Ruff's preview: a kind of a rule's findings that readers judged right less
than 90% of the time is reported only with `--preview` or `preview = true`. GM106's: a tensor
other than the loss kept across steps (the loss total itself stays stable)."""

import json
import subprocess
import sys
from pathlib import Path

from auditor.registry import all_rules

TRAIN = """\
import torch

if __name__ == "__main__":
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    outputs, total = [], 0
    for _ in range(3):
        out = model(torch.randn(4, 3))
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        outputs.append(out)
        total += loss
"""


def findings(root: Path, *args: str) -> list[tuple[str, int, bool]]:
    run = subprocess.run([sys.executable, "-m", "auditor", "check", ".", "--format", "json",
                          "--no-cache", "--select", "GM106", *args], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    return [(f["rule"], f["line"], f.get("preview", False))
            for f in json.loads(run.stdout)["findings"]]


def test_a_preview_kind_is_reported_only_with_preview(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    assert findings(tmp_path) == [("GM106", 14, False)]  # the loss total: stable
    both = [("GM106", 13, True), ("GM106", 14, False)]  # the outputs kept: preview
    assert findings(tmp_path, "--preview") == both
    (tmp_path / "pyproject.toml").write_text("[tool.gm-audit]\npreview = true\n")
    assert findings(tmp_path) == both
    assert findings(tmp_path, "--no-preview") == [("GM106", 14, False)]


def test_the_rule_table_and_rules_command_say_which_rules_have_a_preview_kind():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    rows = json.loads(subprocess.run([sys.executable, "-m", "auditor", "rules", "--format", "json"],
                                     capture_output=True, text=True, timeout=60).stdout)
    status = {r["code"]: r["status"] for r in rows}
    for rule in all_rules().values():
        row = next(line for line in readme.splitlines() if line.startswith(f"| {rule.code} |"))
        if rule.preview_kind:
            assert rule.preview_kind in status[rule.code] and "preview" in row, row
        else:
            assert status[rule.code] == "stable" and row.rstrip().endswith("| stable |"), row
