"""Native crashes of the parser, and analyses that hang, cost the file that caused them, never
the run, and leave no process behind."""

import json
import os
import signal
import threading
import time
from pathlib import Path

from auditor.config import Config
from auditor.registry import all_rules
from auditor.static import engine, isolate
from auditor.static.isolate import Lost, map_bounded, run_isolated
from auditor.static.nesting import MAX_DEPTH, nesting_depth
from auditor.static.positions import ast_shape

NESTED_CALLS = "z = " + "g(" * 3000 + "1" + ")" * 3000 + "\n"  # segfaults libcst's parser (8 MiB stack)
CHAINED = "import torch\nz = x" + ".detach()" * 4000 + "\n"
# CPython parses it (one flat BoolOp), libcst nests one node per `and` and segfaults
AND_CHAIN = "import torch\ny = x.detach()\nz = " + " and ".join(["a"] * 30000) + "\n"
# a GM101 candidate, so libcst gets it: past the pre-check it segfaults at once, even on the
# analysis's deep stack (auditor/static/deep.py)
CRASHING = "import torch\ny = x.detach()\nz = " + "g(" * 100_000 + "1" + ")" * 100_000 + "\n"


def _die_on_three(n: int) -> int:
    if n == 3:  # to this thread, as a fault is: process-wide, another thread might take it late
        signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)
    if n == 4:
        time.sleep(60)
    return n * 10


def test_a_dying_or_hanging_job_is_lost_alone_and_the_pool_goes_on():
    before = _children()  # earlier tests' orphans may be ours to reap (a probe run made us subreaper)
    assert run_isolated(_die_on_three, 2) == 20
    crashed = run_isolated(_die_on_three, 3)
    assert isinstance(crashed, Lost) and crashed.reason == "crashed"
    started = time.monotonic()
    hung = run_isolated(_die_on_three, 4, timeout=0.5)  # a hang is killed
    assert isinstance(hung, Lost) and hung.reason == "timeout" and hung.seconds >= 0.5
    assert time.monotonic() - started < 5
    started = time.monotonic()
    answers = dict(map_bounded(_die_on_three, list(range(40)), workers=2, timeout=2))
    assert time.monotonic() - started < 20  # the hang cost its 2 s, the pool went on meanwhile
    assert {n: a.reason for n, a in answers.items() if isinstance(a, Lost)} == {3: "crashed", 4: "timeout"}
    assert {n: a for n, a in answers.items() if n not in (3, 4)} == {n: n * 10 for n in range(40) if n not in (3, 4)}
    assert _children() - before == set()  # the killed workers were reaped, the others stopped


def _children() -> set[int]:
    mine = str(os.getpid())
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[1] == mine:
                    out.add(int(pid))
        except (OSError, IndexError):
            continue
    return out


def test_a_file_whose_analysis_hangs_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    """The real static pass and worker pool, with an analysis that genuinely blocks (in the
    forked workers) on one file: that file is a GM000 and its worker is killed."""
    real = engine.analyze_source
    pids = tmp_path / "hung.pid"

    def analyze_source(path, abspath, data, codes, force=False, **kw):
        if path == "hang.py":
            pids.write_text(str(os.getpid()))
            signal.pause()
        return real(path, abspath, data, codes, force=force, **kw)

    monkeypatch.setattr(engine, "analyze_source", analyze_source)
    monkeypatch.setattr(isolate, "FILE_SECONDS", 2.0)
    monkeypatch.chdir(tmp_path)
    for i in range(12):  # enough files for the worker pool with jobs=2
        (tmp_path / f"ok{i}.py").write_text("import torch\nx = torch.load('a')\n")
    (tmp_path / "hang.py").write_text("import torch\nx = torch.load('a')\n")
    before = _children()
    started = time.monotonic()
    result = engine.run_check(["."], Config(root=tmp_path), list(all_rules().values()), jobs=2,
                              use_cache=False)
    assert time.monotonic() - started < 30
    assert [(f.path, f.rule, f.message) for f in result.findings if f.path == "hang.py"] == [
        ("hang.py", "GM000", "file could not be analysed: analysis took too long (stopped after 2 s)")]
    assert sum(f.rule == "GM602" for f in result.findings) == 12
    hung = int(pids.read_text())
    assert not Path(f"/proc/{hung}").exists()  # killed and reaped
    assert _children() - before == set()


def test_depth_estimate_is_linear_and_small_for_real_code():
    real = (Path(__file__).parent.parent / "fixtures" / "pipeline" / "model.py").read_text()
    assert nesting_depth(real)[0] < 50
    assert nesting_depth(NESTED_CALLS)[0] > MAX_DEPTH and nesting_depth(CHAINED) == (8002, 2)
    wide = "z = [" + "model(a).detach(), " * 10000 + "]\n"  # long, but flat
    assert nesting_depth(wide)[0] < 10


def test_depth_from_cpythons_tree_where_it_parses_and_the_tokenizer_where_it_does_not():
    real = (Path(__file__).parent.parent / "fixtures" / "pipeline" / "model.py").read_text()
    assert ast_shape(real).depth < 50
    assert ast_shape(AND_CHAIN).depth > MAX_DEPTH and ast_shape(AND_CHAIN).deepest_line == 3
    assert ast_shape(CHAINED) is None  # CPython refuses it: nesting_depth decides (above)
    # in a process that may die: had the chain been taken for a shallow file, libcst gets it
    res = run_isolated(engine._analyze_job, ("and.py", "and.py", AND_CHAIN.encode(), tuple(all_rules()),
                                             False, False))
    assert [(f.rule, f.line) for f in res.findings] == [("GM000", 3)]  # never handed to libcst


def test_a_parser_crash_is_reported_gm000_not_fatal(tmp_path, monkeypatch):
    """Past the pre-check (raised out of the way), libcst really segfaults: in a child."""
    monkeypatch.setattr(engine, "MAX_DEPTH", 10**9)
    res = engine.analyze_source("deep.py", tmp_path / "deep.py", CRASHING.encode(), tuple(all_rules()))
    assert [(f.rule, f.message) for f in res.findings] == [
        ("GM000", "file could not be parsed: too deeply nested to analyse (the parser crashed on it)")]


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
