"""The real pre-commit tool runs gm-audit from this checkout's .pre-commit-hooks.yaml."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def user_repo(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    git("init", "-q", cwd=user)
    git("config", "user.email", "t@example.com", cwd=user)
    git("config", "user.name", "t", cwd=user)
    return user


def hook(tmp_path: Path, user: Path, *files: str) -> subprocess.CompletedProcess:
    """The hook as pre-commit runs it on ``files`` (what it would pass for a commit of them)."""
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    cmd = [pre_commit, "try-repo", str(REPO), "gm-audit", "--files", *files]
    return subprocess.run(cmd, cwd=user, env=env, capture_output=True, text=True, timeout=600)


def test_pre_commit_hook_fails_on_finding_and_passes_when_clean(tmp_path):
    user = user_repo(tmp_path)
    (user / "train.py").write_text("import torch\nstate = torch.load('w.pt')\n")
    git("add", "train.py", cwd=user)
    bad = hook(tmp_path, user, "train.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "GM602" in bad.stdout
    (user / "train.py").write_text("import torch\nstate = torch.load('w.pt', weights_only=True)\n")
    git("add", "train.py", cwd=user)
    good = hook(tmp_path, user, "train.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


HELPER = "def features(model, x):\n    return model(x).detach()\n"
TRAIN = """\
import torch
from torch import nn

from helpers import features

torch.manual_seed(0)
model = nn.Linear(4, 4)
opt = torch.optim.Adam(model.parameters())
x = torch.randn(8, 4)
loss = nn.functional.mse_loss(features(model, x), x)
opt.zero_grad()
loss.backward()
opt.step()
"""


def test_pre_commit_sees_a_bug_spanning_a_committed_and_a_staged_file(tmp_path):
    user = user_repo(tmp_path)
    (user / "helpers.py").write_text(HELPER)  # harmless alone: nothing backpropagates through it
    git("add", "helpers.py", cwd=user)
    git("commit", "-qm", "helper", cwd=user)
    assert hook(tmp_path, user, "helpers.py").returncode == 0
    (user / "train.py").write_text(TRAIN)
    git("add", "train.py", cwd=user)
    run = hook(tmp_path, user, "train.py")
    assert run.returncode == 1, run.stdout + run.stderr
    # reported at the detach in the committed helper, which cites the staged backward
    assert "helpers.py:2:12: GM101" in run.stdout and "train.py:12" in run.stdout
    assert "in 1 file" in run.stdout  # the report is about the staged file


def test_pre_commit_honours_exclude_for_the_files_it_names(tmp_path):
    user = user_repo(tmp_path)
    (user / "pyproject.toml").write_text('[tool.gm-audit]\nexclude = ["generated"]\n')
    (user / "generated").mkdir()
    (user / "generated" / "load.py").write_text("import torch\nstate = torch.load('w.pt')\n")
    git("add", "pyproject.toml", "generated/load.py", cwd=user)
    run = hook(tmp_path, user, "generated/load.py")
    assert run.returncode == 0 and "Passed" in run.stdout, run.stdout + run.stderr
    (user / "load.py").write_text("import torch\nstate = torch.load('w.pt')\n")
    git("add", "load.py", cwd=user)
    run = hook(tmp_path, user, "generated/load.py", "load.py")
    assert run.returncode == 1 and "load.py:2:9: GM602" in run.stdout, run.stdout + run.stderr
    assert "generated/load.py" not in run.stdout
