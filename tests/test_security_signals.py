"""Signals: SIGTERM, SIGHUP or Ctrl-C to gm-audit stop the programs it runs (their process group
and children that left it with setsid), leave no run folder, and exit 128 + the signal."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# the training program: a child in a session of its own, then a long sleep
PROGRAM = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
with open("pids.tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}")
os.replace("pids.tmp", "pids")
time.sleep(float(sys.argv[1]))
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("GM_AUDIT_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_pids(tmp_path: Path, proc: subprocess.Popen) -> list[int]:
    deadline = time.monotonic() + 60
    while not (tmp_path / "pids").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.3)  # the program is in its sleep
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def assert_stopped_cleanly(tmp_path: Path, proc: subprocess.Popen, pids: list[int], code: int) -> None:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)]  # the program and its setsid child
    assert list((tmp_path / "tmp").iterdir()) == []  # no run folder left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_probe_stops_the_program_and_its_setsid_child(tmp_path, sig):
    proc = start(tmp_path, "probe", "--no-cache", "-q", "--timeout", "120", "--", sys.executable, "prog.py", "300")
    pids = wait_for_pids(tmp_path, proc)
    started = time.monotonic()
    proc.send_signal(sig)
    assert_stopped_cleanly(tmp_path, proc, pids, 128 + sig)
    assert time.monotonic() - started < 15


def test_a_setsid_child_does_not_outlive_a_finished_probe(tmp_path):
    proc = start(tmp_path, "probe", "--no-cache", "-q", "--timeout", "120", "--", sys.executable, "prog.py", "0")
    pids = wait_for_pids(tmp_path, proc)
    proc.communicate(timeout=60)
    assert not [p for p in pids if alive(p)]


def test_ctrl_c_stops_a_diff_at_once(tmp_path):
    cmd = f"{sys.executable} prog.py 300"
    proc = start(tmp_path, "diff", "--no-cache", "-q", "--timeout", "120", cmd, cmd)
    pids = wait_for_pids(tmp_path, proc)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 15
    assert not [p for p in pids if alive(p)]


def test_temporary_folders_of_a_stopped_program_go_with_the_run(tmp_path, cli):
    """A step budget or timeout stops the program before DataLoader workers remove their pymp-*
    folders: the ones made during the run are removed with it (TMPDIR stays the program's own)."""
    (tmp_path / "prog.py").write_text("import tempfile, time\ntempfile.mkdtemp(prefix='pymp-')\ntime.sleep(60)\n")
    outer = tmp_path / "tmp"
    outer.mkdir()
    proc = cli("probe", "--no-cache", "-q", "--timeout", "3", "--", sys.executable, "prog.py",
               cwd=tmp_path, input_env={"TMPDIR": str(outer)})
    assert "Traceback" not in proc.stderr
    assert list(outer.iterdir()) == []
