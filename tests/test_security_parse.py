"""Native crashes of the parser cost the file that caused them, never the run."""

import json
import os
import signal
import time
from pathlib import Path

from auditor.registry import all_rules
from auditor.static import engine
from auditor.static.isolate import map_surviving, run_isolated
from auditor.static.nesting import MAX_DEPTH, nesting_depth

NESTED_CALLS = "z = " + "g(" * 3000 + "1" + ")" * 3000 + "\n"  # segfaults libcst's parser
CHAINED = "import torch\nz = x" + ".detach()" * 4000 + "\n"
# a GM101 candidate, so libcst gets it: past the pre-check it segfaults at once
CRASHING = "import torch\ny = x.detach()\n" + NESTED_CALLS


def _die_on_three(n: int) -> int:
    if n == 3:
        os.kill(os.getpid(), signal.SIGSEGV)
    if n == 4:
        time.sleep(60)
    return n * 10


def test_a_dying_child_answers_none_and_the_pool_survives_a_dying_worker():
    assert run_isolated(_die_on_three, 2) == 20
    assert run_isolated(_die_on_three, 3) is None
    started = time.monotonic()
    assert run_isolated(_die_on_three, 4, timeout=0.5) is None  # a hang is killed
    assert time.monotonic() - started < 5
    jobs = [n for n in range(40) if n != 4]
    answers = dict(map_surviving(_die_on_three, jobs, workers=2))
    assert answers == {n: (None if n == 3 else n * 10) for n in jobs}


def test_depth_estimate_is_linear_and_small_for_real_code():
    real = (Path(__file__).parent.parent / "fixtures" / "pipeline" / "model.py").read_text()
    assert nesting_depth(real)[0] < 50
    assert nesting_depth(NESTED_CALLS)[0] > MAX_DEPTH and nesting_depth(CHAINED) == (8002, 2)
    wide = "z = [" + "model(a).detach(), " * 10000 + "]\n"  # long, but flat
    assert nesting_depth(wide)[0] < 10


def test_a_parser_crash_is_reported_gm000_not_fatal(tmp_path, monkeypatch):
    """Past the pre-check (raised out of the way), libcst really segfaults: in a child."""
    monkeypatch.setattr(engine, "MAX_DEPTH", 10**9)
    res = engine.analyze_source("deep.py", tmp_path / "deep.py", CRASHING.encode(), tuple(all_rules()))
    assert [(f.rule, f.message) for f in res.findings] == [
        ("GM000", "file could not be parsed: too deeply nested to analyse (the parser crashed or hung on it)")]


def test_deep_files_are_gm000_serially_and_in_parallel(tmp_path, cli):
    (tmp_path / "calls.py").write_text(NESTED_CALLS)
    (tmp_path / "chain.py").write_text(CHAINED)
    for i in range(12):  # enough files for the worker pool with --jobs 2
        (tmp_path / f"ok{i}.py").write_text("import torch\nx = torch.load('a')\n")
    for jobs in ("1", "2"):
        proc = cli("--format", "json", "--no-cache", "--jobs", jobs, ".", cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        found = json.loads(proc.stdout)["findings"]
        deep = [(f["path"], f["rule"]) for f in found if "too deeply nested to analyse" in f["message"]]
        assert deep == [("chain.py", "GM000")]
        assert ("calls.py", "GM000") in [(f["path"], f["rule"]) for f in found]  # CPython refuses it too
        assert sum(f["rule"] == "GM602" for f in found) == 12
