"""The real pre-commit tool runs gm-audit from this checkout's .pre-commit-hooks.yaml."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_pre_commit_hook_fails_on_finding_and_passes_when_clean(tmp_path):
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    user = tmp_path / "user"
    user.mkdir()
    git("init", "-q", cwd=user)
    git("config", "user.email", "t@example.com", cwd=user)
    git("config", "user.name", "t", cwd=user)
    (user / "train.py").write_text("import torch\nstate = torch.load('w.pt')\n")
    git("add", "train.py", cwd=user)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    cmd = [pre_commit, "try-repo", str(REPO), "gm-audit", "--files", "train.py"]
    bad = subprocess.run(cmd, cwd=user, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "GM602" in bad.stdout
    (user / "train.py").write_text("import torch\nstate = torch.load('w.pt', weights_only=True)\n")
    git("add", "train.py", cwd=user)
    good = subprocess.run(cmd, cwd=user, env=env, capture_output=True, text=True, timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
