"""The checked repository's own modules never shadow what gm-audit imports: a ``random.py`` in
the folder gm-audit runs in is the repository's code, and checking it must not run it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# what gm-audit imports, from the standard library and its dependencies
SHADOWED = ("random", "json", "tempfile", "hashlib", "hmac", "secrets", "pickle", "ast", "argparse",
            "dataclasses", "multiprocessing", "tomllib", "libcst", "rich", "pathspec", "yaml")


@pytest.mark.parametrize("entry", ["python -m auditor", "gm-audit"])
def test_checking_a_tree_with_modules_named_like_the_standard_library_runs_none_of_them(tmp_path, entry):
    for name in SHADOWED:
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('RAN_' + name))!r}, 'w').close()\nraise SystemExit(99)\n")
    (tmp_path / "train.py").write_text("import torch\nstate = torch.load('w.pt')\n")
    command = ([sys.executable, "-m", "auditor"] if entry == "python -m auditor"
               else [str(Path(sys.executable).parent / "gm-audit")])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    proc = subprocess.run([*command, "check", "--format", "json", "--no-cache", "."], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert sorted(p.name for p in tmp_path.glob("RAN_*")) == []
    assert proc.returncode == 1, proc.stderr
    assert [(f["path"], f["rule"]) for f in json.loads(proc.stdout)["findings"]] == [("train.py", "GM602")]
