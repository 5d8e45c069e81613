"""Files that are not files: FIFOs, devices, symlink loops and unreadable folders are reported for
their path and the run goes on."""

import json
import os
import subprocess
from pathlib import Path

from conftest import run_cli_unprivileged, unprivileged
from auditor.static.reading import read_source

GOOD = "import torch\nx = torch.load('a')\n"


def errors_by_path(proc) -> dict[str, str]:
    assert "Traceback" not in proc.stderr
    return {e["path"]: e["message"] for e in json.loads(proc.stdout)["errors"]}


def test_fifo_device_and_looping_links_are_skipped_and_the_run_goes_on(tmp_path, cli):
    (tmp_path / "good.py").write_text(GOOD)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "again").symlink_to("..")
    proc = cli("--format", "json", "--no-cache", ".", cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    assert errors_by_path(proc) == {
        "a.py": "skipped: symlink loop", "b.py": "skipped: symlink loop",
        "self.py": "skipped: symlink loop", "fifo.py": "skipped: not a regular file",
        "zero.py": "skipped: not a regular file",
        "loop/again": "skipped: symlink loop (folder already visited)",
    }
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["good.py"]
    # named on the command line, the same
    named = cli("--format", "json", "--no-cache", "fifo.py", "self.py", "good.py", cwd=tmp_path, timeout=60)
    assert named.returncode == 1
    assert errors_by_path(named) == {"fifo.py": "skipped: not a regular file", "self.py": "skipped: symlink loop"}


def test_reads_stop_at_the_limit_and_refuse_what_is_not_regular(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 1000)
    assert len(read_source(big, limit=100)) == 101
    os.mkfifo(tmp_path / "fifo.py")  # opening it for reading would block without O_NONBLOCK
    for special in (tmp_path / "fifo.py", Path("/dev/zero")):
        try:
            read_source(special)
        except OSError as exc:
            assert "not a regular file" in str(exc)
        else:
            raise AssertionError(f"{special} was read")


def test_an_unreadable_folder_is_reported_and_the_rest_checked(tmp_path):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.py").write_text(GOOD)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "locked").chmod(0)
    try:
        # really unreadable to gm-audit as it runs
        assert subprocess.run(unprivileged(["ls", "locked"]), cwd=tmp_path, capture_output=True).returncode != 0
        proc = run_cli_unprivileged("check", ".", "--format", "json", "--no-cache", cwd=tmp_path)
        named = run_cli_unprivileged("check", "locked/hidden.py", "good.py", "--format", "json",
                                     "--no-cache", cwd=tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert proc.returncode == 1, proc.stderr
    assert errors_by_path(proc) == {"locked": "cannot read folder: Permission denied"}
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["good.py"]
    # named on the command line: the file inside it is reported, the other one checked
    assert named.returncode == 1, named.stderr
    assert errors_by_path(named) == {"locked/hidden.py": "cannot read file: Permission denied"}
    assert [f["path"] for f in json.loads(named.stdout)["findings"]] == ["good.py"]


def test_output_to_a_pipe_or_device_writes_through_it_and_never_replaces_it(tmp_path, cli):
    """`--output /dev/null` (as root) must not swap the device for a plain file: a FIFO stands in
    for it here, read by a thread while gm-audit writes."""
    import threading
    (tmp_path / "good.py").write_text(GOOD)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = cli("--format", "json", "--no-cache", "--output", str(fifo), "good.py", cwd=tmp_path,
               timeout=60)
    reader.join(timeout=30)
    assert proc.returncode == 1, proc.stderr
    assert fifo.is_fifo()
    assert [f["rule"] for f in json.loads(got[0])["findings"]] == ["GM602"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
