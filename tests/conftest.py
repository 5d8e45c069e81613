import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path, input_env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (exit codes, stdout, stderr)."""
    env = {**os.environ, **(input_env or {})}
    env.pop("GM_AUDIT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "auditor", *args], cwd=cwd, capture_output=True, text=True,
        env=env, timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli
