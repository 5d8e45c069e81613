"""A hostile tree against gm-audit's processes: shapes that exhaust the stack, signals that stop
a run, children that outlive a timeout, modules named like gm-audit's own, files too long to
analyse. Each costs that file or that run only, and leaves no process behind."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from test_security_signals import alive

from auditor.config import Config, ConfigError, load_config
from auditor.processes import gm_audit_command
from auditor.static.reading import MAX_ANALYSED_LINES

GM_AUDIT = str(Path(sys.executable).parent / "gm-audit")  # the console script
LOAD = "state = torch.load('w.pt')\n"  # GM602 wherever it is analysed


def elif_chain(n: int) -> str:
    return "x = 1\nif x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, n))


def findings(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return sorted((f["path"], f["rule"]) for f in json.loads(proc.stdout)["findings"])


def children(pid: int) -> set[int]:
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[1] == str(pid):
                    found.add(int(entry))
        except (OSError, IndexError):
            continue
    return found


# -- deep shapes --------------------------------------------------------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_thousand_elif_in_a_file_no_rule_reads_cost_nothing(tmp_path, jobs):
    """Its outline (imports, for the project) recursed once per ``elif``: with one process the
    whole run ended "internal error: RecursionError", in the worker pool a traceback."""
    (tmp_path / "generated.py").write_text("import os\n" + elif_chain(990))
    for i in range(9):  # enough files for the worker pool with --jobs 2
        (tmp_path / f"train{i}.py").write_text("import torch\n" + LOAD)
    proc = run_cli("check", "--no-cache", "--format", "json", "--jobs", jobs, ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [(f"train{i}.py", "GM602") for i in range(9)]
    assert json.loads(proc.stdout)["errors"] == []


def test_long_chains_under_the_depth_limit_are_analysed_and_deeper_ones_cost_their_file(tmp_path):
    """985 ``elif`` and a 985-term sum are below the depth limit, but past Python's default
    recursion limit: the analysis ran out of stack ("too deeply nested", its GM602 lost). Ten
    thousand ``elif`` CPython's own parser gives up on; libcst then got the file in gm-audit's
    own process and crashed it (SIGSEGV: no report at all)."""
    (tmp_path / "elifs.py").write_text("import torch\n" + elif_chain(985) + LOAD)
    (tmp_path / "sum.py").write_text(
        "import torch\ntotal = " + " + ".join(f"a{i}" for i in range(985)) + "\n" + LOAD)
    (tmp_path / "huge.py").write_text("import torch\n" + LOAD + elif_chain(12000))
    proc = run_cli("check", "--no-cache", "--format", "json", "--jobs", "1", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [("elifs.py", "GM602"), ("huge.py", "GM000"), ("sum.py", "GM602")]
    [huge] = [f for f in json.loads(proc.stdout)["findings"] if f["path"] == "huge.py"]
    assert huge["message"] == ("file could not be parsed: too deeply nested to analyse "
                               "(CPython's own parser gave up on it)")


# -- signals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("command,sig", [("check", signal.SIGTERM), ("check", signal.SIGHUP),
                                         ("check", signal.SIGKILL), ("probe", signal.SIGTERM)])
def test_no_worker_outlives_a_run_stopped_by_a_signal(tmp_path, command, sig):
    """Each worker held its own pipe's parent end, so it never saw end of file: SIGTERM or SIGHUP
    to gm-audit (or to a probe in its static pass) left both running for ever. A signal now
    unwinds the run through the pool's teardown; SIGKILL leaves the parent-death signal."""
    model = (REPO / "fixtures" / "pipeline" / "model.py").read_text()
    for i in range(80):  # busy the pool for seconds
        (tmp_path / f"m{i}.py").write_text(model)
    args = (["check", "--jobs", "2", "."] if command == "check" else
            ["probe", "--jobs", "2", "--paths", ".", "--", sys.executable, "-c", "pass"])
    env = {k: v for k, v in os.environ.items() if k != "GM_AUDIT_DEBUG"}
    proc = subprocess.Popen([GM_AUDIT, *args, "--no-cache", "-q"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(children(proc.pid)) < 2:  # both workers started
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    workers = children(proc.pid)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)  # a worker holding stderr open would hang this
        deadline = time.monotonic() + 10
        while [p for p in workers if alive(p)] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in workers if alive(p)]
    finally:
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig
        assert err == f"gm-audit: interrupted ({sig.name})\n"


# -- probe timeout ------------------------------------------------------------------------------

SPAWNER = """
import subprocess, sys
kids = [subprocess.Popen(["sleep", "300"]) for _ in range(6)]
with open("pids.tmp", "w") as fh:
    fh.write(" ".join(str(k.pid) for k in kids))
import os; os.replace("pids.tmp", "pids")
subprocess.run(["sleep", "300"])
"""


def test_a_probe_timeout_bounds_the_run_whatever_its_children(tmp_path):
    """Each ended child (a zombie until gm-audit reaped it) held its process group through a
    full grace period: 6 children made a 2 s timeout about 25 s."""
    (tmp_path / "spawn.py").write_text(SPAWNER)
    started = time.monotonic()
    proc = run_cli("probe", "--no-cache", "--format", "json", "--timeout", "2", "--",
                   sys.executable, "spawn.py", cwd=tmp_path)
    wall = time.monotonic() - started
    run = json.loads(proc.stdout)["run"]
    assert run["stopped"] == "timeout", proc.stderr
    assert run["seconds"] < 2 + 1.5  # the program's run, its stop included
    assert wall < 2 + 15  # gm-audit's start and static pass on a loaded machine, the report
    assert not [p for p in map(int, (tmp_path / "pids").read_text().split()) if alive(p)]


# -- modules named like gm-audit's own ----------------------------------------------------------

HOSTILE = "open({marker!r}, 'w').close()\n"


def hooks_entry() -> list[str]:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return [GM_AUDIT, *hook["entry"].split()[1:]]


@pytest.mark.parametrize("form,layout", [
    ("console script", "auditor/__init__.py"), ("pre-commit hook", "auditor/__init__.py"),
    ("launcher", "auditor/__init__.py"), ("launcher", "auditor.py"),
    ("test suite", "auditor/__init__.py")])
def test_a_tree_with_its_own_auditor_module_is_checked_not_run(tmp_path, form, layout):
    """``python -m auditor`` in such a tree runs the tree's module (Python puts the folder on
    ``sys.path`` before any of gm-audit runs): every form the documentation, the hook, the
    benchmarks (the launcher) and the tests use starts gm-audit's own."""
    marker = tmp_path / "RAN"
    (tmp_path / layout).parent.mkdir(exist_ok=True)
    (tmp_path / layout).write_text(HOSTILE.format(marker=str(marker)))
    if layout.startswith("auditor/"):
        (tmp_path / "auditor" / "__main__.py").write_text(HOSTILE.format(marker=str(marker)))
    (tmp_path / "train.py").write_text("import torch\n" + LOAD)
    args = ["--no-cache", "--format", "json", "train.py"]
    if form == "test suite":
        proc = run_cli("check", *args, cwd=tmp_path)
    else:
        start = {"console script": [GM_AUDIT, "check"], "launcher": [*gm_audit_command(), "check"],
                 "pre-commit hook": hooks_entry()}[form]
        proc = subprocess.run([*start, *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env={k: v for k, v in os.environ.items()
                                                if k not in ("PYTHONSAFEPATH", "GM_AUDIT_DEBUG")})
    assert not marker.exists()
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [("train.py", "GM602")]


def test_the_probes_own_modules_are_not_the_trees(tmp_path):
    """The program runs with the recorder injected: a tree's ``sitecustomize.py``, ``auditor/``
    or module named like the recorder must not stand in for it."""
    marker = tmp_path / "RAN"
    for name in ("sitecustomize.py", "_gm_audit_recorder.py", "auditor/__init__.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(HOSTILE.format(marker=str(marker)))
    (tmp_path / "prog.py").write_text("print('ran')\n")
    proc = run_cli("probe", "--no-cache", "--format", "json", "--paths", "prog.py", "--",
                   sys.executable, "prog.py", cwd=tmp_path)
    assert not marker.exists()
    run = json.loads(proc.stdout)["run"]
    assert (run["stopped"], run["processes"]) == ("exit", 1), proc.stderr  # the recorder ran


# -- files too long to analyse ------------------------------------------------------------------

def test_a_file_past_max_lines_is_skipped_with_one_line_and_the_rest_checked(tmp_path):
    """A million short lines (4 MB, under the size limit) took 10 GB and 8 minutes to analyse."""
    (tmp_path / "pyproject.toml").write_text("[tool.gm-audit]\nmax-lines = 50\n")
    (tmp_path / "long.py").write_text("import torch\n" + LOAD + "x = 1\n" * 49)  # 51 lines
    (tmp_path / "limit.py").write_text("import torch\n" + LOAD + "x = 1\n" * 48)  # 50 lines
    proc = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [("limit.py", "GM602")]
    assert json.loads(proc.stdout)["errors"] == [{
        "path": "long.py",
        "message": "skipped: too large for analysis (51 lines > 50; `max-lines` in [tool.gm-audit])"}]
    assert Config(root=tmp_path).max_lines == MAX_ANALYSED_LINES <= 30_000  # measured: 1M lines blow up


@pytest.mark.parametrize("value", ["0", "'many'", "true", "1.5"])
def test_max_lines_must_be_a_positive_whole_number(tmp_path, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.gm-audit]\nmax-lines = {value}\n")
    with pytest.raises(ConfigError, match="`max-lines` must be a positive whole number"):
        load_config(None, tmp_path)
