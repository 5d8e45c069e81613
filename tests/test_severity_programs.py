"""Error severity only on a path of an entry program: the same finding in a module that no script
runs is a warning saying why, and an error once a script imports it."""

import json
import subprocess
import sys
from pathlib import Path

FLAG = "import torch\n\n\ndef setup():\n    torch.backends.cudnn.determinstic = True\n"
SCRIPT = "from lib import setup\n\nif __name__ == '__main__':\n    setup()\n"


def check(root: Path) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "auditor", "check", ".", "--format", "json",
                          "--no-cache", "--select", "GM604"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    return json.loads(run.stdout)["findings"]


def test_a_library_only_error_is_a_warning_until_a_script_runs_it(tmp_path):
    (tmp_path / "lib.py").write_text(FLAG)
    (alone,) = check(tmp_path)
    assert alone["severity"] == "warning" and "no entry script" in alone["message"]
    (tmp_path / "train.py").write_text(SCRIPT)
    (ran,) = check(tmp_path)
    assert ran["severity"] == "error" and "no entry script" not in ran["message"]
    assert (ran["path"], ran["line"]) == (alone["path"], alone["line"]) == ("lib.py", 5)
