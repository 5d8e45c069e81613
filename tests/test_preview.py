"""Preview kinds, as Ruff's preview: a kind of a rule's findings that readers judged right less
than 90% of the time is reported only with `--preview` or `preview = true`. GM106's: a tensor
other than the loss kept across steps (the loss total itself stays stable)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def findings(root: Path, *args: str, rule: str = "GM106") -> list[tuple[str, int, bool]]:
    run = subprocess.run([sys.executable, "-P", "-m", "auditor", "check", ".", "--format", "json",
                          "--no-cache", "--select", rule, *args], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stdout + run.stderr
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


# a sampler in a module that no call reaches; a program importing it seeds torch and numpy, the
# one that trains seeds nothing and reaches samplers through a registry
LOADERS = {
    "lib/__init__.py": "",
    "lib/loaders.py": (
        "import dgl\n"
        "class EdgeLoader:\n"
        "    def __init__(self, g, fanout):\n"
        "        self.sampler = dgl.dataloading.MultiLayerNeighborSampler(fanout)\n"
    ),
    "lib/registry.py": "LOADERS = {}\ndef get_loader(name):\n    return LOADERS[name]\n",
    "infer.py": (
        "import numpy as np\nimport torch\nfrom lib.loaders import EdgeLoader\n"
        "def main(g, model):\n    np.random.seed(0)\n    torch.manual_seed(0)\n"
        "    with torch.no_grad():\n        return model(g, None)\n"
        "if __name__ == '__main__':\n    main(None, None)\n"
    ),
    "train.py": (
        "from lib.registry import get_loader\n"
        "def main(g, model, opt, name):\n"
        "    for batch in get_loader(name)(g, [10, 5]):\n"
        "        loss = model(batch)\n        opt.zero_grad()\n        loss.backward()\n"
        "        opt.step()\n"
        "if __name__ == '__main__':\n    main(None, None, None, 'edge')\n"
    ),
}


def test_an_unreached_draw_judged_by_the_programs_importing_it_is_a_preview_kind(tmp_path):
    for name, text in LOADERS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert findings(tmp_path, rule="GM603") == []
    assert findings(tmp_path, "--preview", rule="GM603") == [("GM603", 4, True)]


# a test reading back what it wrote: into folders only it can write (a TemporaryDirectory, a
# path built in pytest's tmp_path, a mkdtemp), and into a shared /tmp path (stable)
ROUNDTRIP = """\
import os
import tempfile
from pathlib import Path

import torch


def {name}(tmp_path):
    with tempfile.TemporaryDirectory() as d:
        torch.save({}, os.path.join(d, "a.pt"))
        a = torch.load(os.path.join(d, "a.pt"))
    path = tmp_path / "b.pt"
    b = torch.load(str(path))
    c = torch.load(f"{tempfile.mkdtemp()}/c.pt")
    shared = torch.load(os.path.join("/tmp/prediction", "d.pt"))
    e_dir = tempfile.mkdtemp()
    e = torch.load(Path(e_dir).joinpath("e.pt"))
    return a, b, c, shared, e
"""


def test_a_read_back_from_a_private_temporary_directory_is_a_preview_kind(tmp_path):
    (tmp_path / "roundtrip.py").write_text(ROUNDTRIP.replace("{name}", "roundtrip"))
    assert findings(tmp_path, rule="GM602") == [("GM602", 15, False)]
    assert findings(tmp_path, "--preview", rule="GM602") == [
        ("GM602", 11, True), ("GM602", 13, True), ("GM602", 14, True), ("GM602", 15, False),
        ("GM602", 17, True)]


@pytest.mark.parametrize("path, name", [("test_io.py", "roundtrip"), ("io_check.py", "test_save"),
                                        ("tests/io_check.py", "roundtrip")])
def test_every_load_in_test_code_is_a_preview_kind(tmp_path, path, name):
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(ROUNDTRIP.replace("{name}", name))
    assert findings(tmp_path, rule="GM602") == []
    assert [line for _, line, preview in findings(tmp_path, "--preview", rule="GM602") if preview] \
        == [11, 13, 14, 15, 17]


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
