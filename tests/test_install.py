"""The README's install lines and pre-commit snippet, run as a new user would: a fresh virtualenv,
the line as written (with this checkout's path and commit for the placeholders), then gm-audit on
a scratch project; and pre-commit on a scratch repository pinned to this checkout's commit."""

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
BUG = "import torch\nstate = torch.load('w.pt')\n"


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()


def _fill(text: str) -> str:
    """The README's placeholders, as a user of this checkout would fill them in."""
    return text.replace("/PATH/TO/gm-audit", str(REPO)).replace("COMMIT", _head())


def _install_lines() -> list[str]:
    block = _section("Install").split("```sh", 1)[1].split("```", 1)[0]
    return [line.split(" #")[0].strip() for line in block.splitlines()
            if line.strip().startswith("pip install")]


def _scratch(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    (user / "train.py").write_text(BUG)
    return user


def test_the_readme_install_lines_work_in_a_fresh_virtualenv(tmp_path):
    lines = _install_lines()
    assert len(lines) >= 2 and any("git+" in line for line in lines), lines
    user = _scratch(tmp_path)
    for i, line in enumerate(lines):
        env_dir = tmp_path / f"venv{i}"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        bindir = env_dir / "bin"
        env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
               "VIRTUAL_ENV": str(env_dir), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        env.pop("PYTHONPATH", None)
        done = subprocess.run(_fill(line), shell=True, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        run = subprocess.run([str(bindir / "gm-audit"), "check", "."], cwd=user, env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 1 and "train.py:2:9: GM602" in run.stdout, run.stdout + run.stderr


def test_the_readme_pre_commit_snippet_runs_on_a_scratch_repository(tmp_path):
    snippet = _section("pre-commit").split("```yaml", 1)[1].split("```", 1)[0]
    repo_line = re.search(r"^\s*- repo: (\S+)", snippet, re.M)
    assert repo_line and "rev: COMMIT" in snippet, snippet
    user = _scratch(tmp_path)
    (user / ".pre-commit-config.yaml").write_text(_fill(snippet).replace(
        repo_line.group(1), str(REPO)))
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"], ["add", "."]):
        subprocess.run(["git", *args], cwd=user, check=True, capture_output=True)
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    run = subprocess.run([pre_commit, "run", "--all-files"], cwd=user, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 1 and "train.py:2:9: GM602" in run.stdout, run.stdout + run.stderr
