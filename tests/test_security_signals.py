"""Signals: SIGTERM, SIGHUP or Ctrl-C to gm-audit stop the programs it runs (their process group
and children that left it with setsid), leave no run folder, write the report of what was gathered
until then, marked interrupted, in the format asked for, and exit 128 + the signal."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# the training program: a child in a session of its own, one training step, then a long sleep
PROGRAM = """
import os, subprocess, sys, time
import torch

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
torch.manual_seed(0)
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 4)).pow(2).mean()
opt.zero_grad()
loss.backward()
opt.step()
print("trained one step", flush=True)
name = sys.argv[2] if len(sys.argv) > 2 else "pids"
with open(name + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}")
os.replace(name + ".tmp", name)
time.sleep(float(sys.argv[1]))


def restore(path):
    return torch.load(path)  # GM602, never run: unexercised in the report
"""
SUMMARY = "interrupted by {} after 1 step(s); every process stopped"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone between the open and the read
        return False


def start(tmp_path: Path, *args: str, program: str = PROGRAM) -> subprocess.Popen:
    (tmp_path / "prog.py").write_text(program)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("GM_AUDIT_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_pids(tmp_path: Path, proc: subprocess.Popen, *names: str) -> list[int]:
    deadline = time.monotonic() + 90
    while not all((tmp_path / name).exists() for name in names or ("pids",)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.3)  # the program is in its sleep
    return [int(p) for name in names or ("pids",) for p in (tmp_path / name).read_text().split()]


def stop(tmp_path: Path, proc: subprocess.Popen, pids: list[int], sig: signal.Signals,
         code: int) -> tuple[str, str]:
    """Send ``sig``: the programs (and their setsid children) are gone within seconds, then
    gm-audit writes its report (loading torch for a diff's snapshots takes a while on a loaded
    machine) and exits with ``code``, leaving no run folder."""
    proc.send_signal(sig)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)]  # the program and its setsid child
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert list((tmp_path / "tmp").iterdir()) == []  # no run folder left
    return out, err


def interrupted_probe(tmp_path: Path, sig: signal.Signals, *report: str) -> tuple[str, str]:
    """A real probe of PROGRAM stopped by ``sig`` once it trained a step: (stdout, stderr)."""
    proc = start(tmp_path, "probe", "--no-cache", "-q", "--steps", "50", "--timeout", "120",
                 *report, "--", sys.executable, "prog.py", "300")
    pids = wait_for_pids(tmp_path, proc)
    return stop(tmp_path, proc, pids, sig, 128 + sig)


def test_sigterm_to_the_probe_leaves_a_sarif_report_of_an_unsuccessful_run(tmp_path):
    interrupted_probe(tmp_path, signal.SIGTERM, "--format", "sarif", "--output", "out.sarif")
    run = json.loads((tmp_path / "out.sarif").read_text())["runs"][0]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = [n for n in invocation["toolExecutionNotifications"] if n.get("properties", {}).get("stopped")]
    assert note["properties"]["stopped"] == "interrupted"
    assert note["message"]["text"].startswith("probe: " + SUMMARY.format("SIGTERM"))
    assert "trained one step" in note["message"]["text"]  # the program's last output
    assert [(r["ruleId"], r["properties"]["status"]) for r in run["results"]] == [("GM602", "unexercised")]


def test_sighup_to_the_probe_leaves_markdown_and_html_reports_with_a_banner(tmp_path):
    interrupted_probe(tmp_path, signal.SIGHUP, "--format", "markdown", "--output", "out.md")
    markdown = (tmp_path / "out.md").read_text()
    assert markdown.split("\n\n")[1].startswith(
        "> [!CAUTION]\n> **The probe run did not complete**: " + SUMMARY.format("SIGHUP")), markdown
    assert "> trained one step" in markdown and "GM602" in markdown


def test_ctrl_c_to_the_probe_prints_its_text_report_with_the_interruption(tmp_path):
    out, _ = interrupted_probe(tmp_path, signal.SIGINT)
    assert "probe: " + SUMMARY.format("SIGINT") in out
    assert "  | trained one step" in out and "GM602" in out
    assert "gradient flow at step 1" in out  # evidence of the step it ran


def test_sigterm_to_the_probe_in_html(tmp_path):
    from test_reports_html import Page

    interrupted_probe(tmp_path, signal.SIGTERM, "--format", "html", "--output", "out.html")
    page = Page((tmp_path / "out.html").read_text())
    [banner] = [d for d in page.all("div") if d.get("id") == "probe-crash"]
    text = " ".join(" ".join(page.text).split())
    assert "The probe run did not complete : " + SUMMARY.format("SIGTERM") in text
    assert "trained one step" in text


def test_a_setsid_child_does_not_outlive_a_finished_probe(tmp_path):
    proc = start(tmp_path, "probe", "--no-cache", "-q", "--steps", "50", "--timeout", "120", "--",
                 sys.executable, "prog.py", "0")
    pids = wait_for_pids(tmp_path, proc)
    proc.communicate(timeout=60)
    assert proc.returncode == 1  # GM602 (unexercised) is still a finding
    assert not [p for p in pids if alive(p)]


def test_ctrl_c_stops_a_diff_at_once_and_reports_what_both_runs_recorded(tmp_path):
    ref, cand = (f"{sys.executable} prog.py 300 {name}" for name in ("ref", "cand"))
    proc = start(tmp_path, "diff", "--no-cache", "-q", "--steps", "3", "--timeout", "120",
                 "--format", "markdown", "--output", "out.md", ref, cand)
    pids = wait_for_pids(tmp_path, proc, "ref", "cand")
    _, err = stop(tmp_path, proc, pids, signal.SIGINT, 130)
    summary = "interrupted by SIGINT after 1 step(s) recorded by both runs"
    assert f"gm-audit diff: {summary}" in err
    markdown = (tmp_path / "out.md").read_text()
    assert f"> **The diff run did not complete**: {summary}" in markdown
    assert "No divergence in what both runs recorded before they were interrupted." in markdown
    assert "| update | same |" in markdown  # the step each run recorded was compared


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



def test_sigterms_in_quick_succession_still_leave_the_snapshot_of_what_was_recorded(tmp_path):
    """gm-audit's signal handler and a run's own wait loop may both SIGTERM a program: a second
    SIGTERM while the recorder writes what it gathered must not cut the write short."""
    from auditor.diff.command import _load_snapshot
    from auditor.diff.snapshot import ENV_DIR, ENV_STEPS
    from auditor.probe.launch import prepare

    (tmp_path / "prog.py").write_text(PROGRAM)
    run_dir, snap_dir = tmp_path / "run", tmp_path / "run" / "snapshot"
    snap_dir.mkdir(parents=True)
    env = {**prepare(run_dir, tmp_path, "4", [], "cpu"), ENV_DIR: str(snap_dir), ENV_STEPS: "3"}
    with open(tmp_path / "out.log", "wb") as log:  # not a pipe: the setsid child would hold it
        proc = subprocess.Popen([sys.executable, "prog.py", "60"], cwd=tmp_path, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    [pid, child] = wait_for_pids(tmp_path, proc)
    for _ in range(200):
        if proc.poll() is not None:
            break
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.0005)
    proc.wait(timeout=60)
    os.kill(child, signal.SIGKILL)
    out = (tmp_path / "out.log").read_text()
    assert proc.returncode == -signal.SIGTERM, out
    assert len(_load_snapshot(snap_dir).get("steps") or []) == 1, out
