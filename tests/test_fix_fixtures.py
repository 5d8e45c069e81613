"""`gm-audit check --fix` on the fixture pipelines with one injected bug: the fixed source is the
expected one, a second --fix is a no-op, the finding is gone, and the fixed pipeline still runs
(one epoch on CPU)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["fixture_build"] = build
_spec.loader.exec_module(build)

# variant -> (needs --unsafe-fixes, file, text before, text after)
CASES = {
    "gm602-bug": (False, "train.py", "torch.load(path)", "torch.load(path, weights_only=True)"),
    "gm603-bug": (False, "utils.py", "    dgl.seed(seed)\n", "    dgl.seed(seed)\n    torch.manual_seed(seed)\n"),
    "gm604-bug": (False, "utils.py", "cudnn.determinstic = True", "cudnn.deterministic = True"),
    "gm201-bug": (True, "engine.py", "        for g in self.train_loader:\n",
                  "        for g in self.train_loader:\n            self.model.train()\n"),
    "gm401-bug": (True, "losses.py", 'reduction="sum"', 'reduction="mean"'),
    "gm101-bug": (True, "layers.py", "rep.detach().clone()", "rep.clone()"),
}


def _check(cli, root: Path, *extra: str) -> dict:
    proc = cli("check", ".", "--no-cache", "--format", "json", "--jobs", "1", *extra, cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _variant_rule(variant: str) -> str:
    return build.load_variant(variant)["rule"]


@pytest.mark.parametrize("variant", [v for v in CASES if v in build.variant_names()])
def test_fix_fixture(cli, tmp_path: Path, variant: str) -> None:
    unsafe, rel, old, new = CASES[variant]
    root = build.materialize(variant, tmp_path / variant)
    rule = _variant_rule(variant)
    original = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.py")}
    assert original[Path(rel)].decode().count(old) == 1
    flags = ["--fix", *(["--unsafe-fixes"] if unsafe else [])]
    if unsafe:  # an unsafe fix is not applied by --fix alone
        data = _check(cli, root, "--fix")
        assert rule not in [a["rule"] for a in data["fixes"]["applied"]]
        assert data["fixes"]["unsafe_available"] >= 1
        assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*.py")} == original
    data = _check(cli, root, *flags)
    assert rule in [a["rule"] for a in data["fixes"]["applied"]], data["fixes"]
    assert rule not in [f["rule"] for f in data["findings"]]
    expected = original[Path(rel)].decode().replace(old, new)
    assert (root / rel).read_text(encoding="utf-8") == expected
    changed = {p for p, b in original.items() if (root / p).read_bytes() != b}
    assert changed == {Path(rel)}
    fixed = {p: (root / p).read_bytes() for p in original}
    again = _check(cli, root, *flags)  # idempotent
    assert again["fixes"]["fixed"] == 0
    assert {p: (root / p).read_bytes() for p in original} == fixed
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "train.py", "--epochs", "1"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def test_fixture_fix_that_does_not_remove_the_finding_is_rolled_back(cli, tmp_path: Path) -> None:
    """gm601-bug: strict=True alone leaves the default warm start reported: nothing is written."""
    root = build.materialize("gm601-bug", tmp_path / "gm601")
    original = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.py")}
    data = _check(cli, root, "--fix", "--unsafe-fixes")
    assert [r["rule"] for r in data["fixes"]["rolled_back"]] == ["GM601"]
    assert "GM601" in [f["rule"] for f in data["findings"]]
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*.py")} == original
