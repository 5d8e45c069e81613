"""The diff where the pipeline calls its model's parts one by one (tests/pipelines/steps), against
a script that calls the model: what the data pipeline hands over is compared whichever module it
enters; a global RNG the pipeline draws from and never seeds is a divergence although the diff
seeds every RNG itself; and gradients carried over from the first step show at the second."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

PIPELINE = Path(__file__).resolve().parent / "pipelines" / "steps"


def diff(tmp_path: Path, *changes: tuple[str, str]) -> dict:
    tree = tmp_path / "p"
    shutil.copytree(PIPELINE, tree)
    train = tree / "train.py"
    for old, new in changes:
        assert old in train.read_text()
        train.write_text(train.read_text().replace(old, new))
    run = run_cli("diff", f"{sys.executable} minimal.py", f"{sys.executable} train.py",
                  "--format", "json", "--no-cache", cwd=tree, timeout=300)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("changes, stage, name, rule, line", [
    # an augmentation in the collate function: the batch differs, at the function's definition
    ((("collate_fn=collate", "collate_fn=jitter"),
      ("import Points, collate,", "import Points, jitter,")),
     "input", "batch loader", "GM502", ("data.py", 21)),
    # numpy left out of the seeding: the diff's own seed hides the masks' variation
    ((("    np.random.seed(seed)\n", ""),), "input", "rng numpy", "GM603", ("train.py", 12)),
    # zero_grad once, before training (line 21): the second step's backward (line 30) adds to
    # the first step's gradients; the cause is that reset, moved out of the loop
    ((("        self.optimizer.zero_grad()\n", ""),
      ("        self.optimizer = optimizer\n",
       "        self.optimizer = optimizer\n        optimizer.zero_grad()\n")),
     "grad", "(before backward)", "GM104", ("train.py", 21)),
])
def test_a_change_shows_at_its_stage_and_cause(tmp_path, changes, stage, name, rule, line):
    report = diff(tmp_path, *changes)
    first = report["first_divergence"]
    assert first is not None and first["stage"] == stage, first
    assert name in first["name"] and first["rule"] == rule, first
    assert (first["path"], first["line"]) == line, first
    # everything before it agrees, whichever module the pipeline calls (the runs record two
    # steps by default: the gradients left over show at the second)
    before = report["stages"][:[s["stage"] for s in report["stages"]].index(stage)]
    assert all(s["status"] == "same" for s in before), before
    if stage == "grad":
        assert "(step 2)" in first["detail"], first
        assert "zero_grad() at train.py:21" in report["findings"][0]["evidence"][0], report
