import os
import subprocess
from pathlib import Path

import pytest

from auditor.processes import gm_audit_command

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path, input_env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (exit codes, stdout, stderr)."""
    env = {**os.environ, **(input_env or {})}
    env.pop("GM_AUDIT_DEBUG", None)
    return subprocess.run(
        [*gm_audit_command(), *args], cwd=cwd, capture_output=True, text=True,
        env=env, timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def check_tree(tmp_path: Path, files: dict[str, str], codes: str,
               levels: tuple[str, ...] = ("error", "warning", "info")) -> list[tuple[str, str, int]]:
    """Write ``files`` under ``tmp_path``, run the real `gm-audit check` on them with ``codes``
    selected: (rule, path, line) of each finding at one of ``levels``, sorted."""
    import json

    for rel, text in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    proc = run_cli("check", ".", "--format", "json", "--no-cache", "--exit-zero",
                   "--select", codes, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert not report["errors"], report["errors"]
    return sorted((f["rule"], f["path"], f["line"]) for f in report["findings"]
                  if f["severity"] in levels)



def unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` bound by permission bits. Root ignores them (CAP_DAC_OVERRIDE): as root, ``cmd``
    runs in a user namespace of its own (``unshare --user``), without root's capabilities over
    the files here but still their owner, so a folder's mode binds it as it binds its owner."""
    return ["unshare", "--user", *cmd] if os.geteuid() == 0 else cmd


def run_cli_unprivileged(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(cwd), "XDG_CACHE_HOME": str(cwd / ".cache")}
    env.pop("GM_AUDIT_DEBUG", None)
    return subprocess.run(unprivileged([*gm_audit_command(), *args]), cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)
