"""--fix on files it should not touch: read-only files are left alone and reported, owners and
hard links are kept, and what was and was not fixed is reported."""

import json
import os
import stat
import subprocess

from conftest import run_cli_unprivileged, unprivileged

SOURCE = "import torch\n\nstate = torch.load('ckpt.pt')\n"


def fix(cli, root):
    proc = cli("check", ".", "--fix", "--no-cache", "--format", "json", cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(proc.stdout)


def test_read_only_file_is_left_alone_and_reported(tmp_path, cli):
    locked, free = tmp_path / "locked.py", tmp_path / "free.py"
    locked.write_text(SOURCE)
    free.write_text(SOURCE)
    locked.chmod(0o444)
    proc, report = fix(cli, tmp_path)
    assert locked.read_text() == SOURCE and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert "weights_only=True" in free.read_text()
    assert "locked.py: read-only file; left as it is" in proc.stderr
    assert [(f["rule"], f["path"]) for f in report["findings"]] == [("GM602", "locked.py")]
    assert [a["path"] for a in report["fixes"]["applied"]] == ["free.py"]


def test_owner_mode_and_hard_links_are_kept(tmp_path, cli):
    linked, owned = tmp_path / "linked.py", tmp_path / "owned.py"
    for target in (linked, owned):
        target.write_text(SOURCE)
        target.chmod(0o640)
    os.link(linked, tmp_path / "alias.txt")  # a hard link that is not itself checked
    owner = (12345, 23456) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(owned, *owner)
    inode = linked.stat().st_ino
    fix(cli, tmp_path)
    for target in (linked, owned):
        assert "weights_only=True" in target.read_text()
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert (owned.stat().st_uid, owned.stat().st_gid) == owner
    assert linked.stat().st_ino == inode and (tmp_path / "alias.txt").read_text() == linked.read_text()


def test_read_only_folder_means_no_file_is_written(tmp_path):
    (tmp_path / "free.py").write_text(SOURCE)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.py").write_text(SOURCE)
    (tmp_path / "locked").chmod(0o555)
    try:
        # the folder is really closed to gm-audit as it runs (and the rest of the tree open)
        probe = subprocess.run(unprivileged(["touch", "locked/new", "free.py"]), cwd=tmp_path,
                               capture_output=True, text=True)
        assert probe.returncode != 0 and "locked/new" in probe.stderr, probe.stderr
        assert "free.py" not in probe.stderr and not (tmp_path / "locked" / "new").exists()
        proc = run_cli_unprivileged("check", ".", "--fix", "--no-cache", "--format", "json", cwd=tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    # all or nothing: the writable file is left as it was too, and no temporary file remains
    assert (tmp_path / "free.py").read_text() == SOURCE
    assert (tmp_path / "locked" / "x.py").read_text() == SOURCE
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["free.py", "locked", "x.py"]
    for name in ("free.py", "locked/x.py"):
        assert f"{name}: not written: Permission denied; no file was changed" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["fixes"]["applied"] == []
    assert sorted((f["rule"], f["path"]) for f in report["findings"]) == [
        ("GM602", "free.py"), ("GM602", "locked/x.py")]


def test_cr_only_file_keeps_its_line_ends_and_final_newline(tmp_path, cli):
    target = tmp_path / "mac.py"
    target.write_bytes(SOURCE.replace("\n", "\r").encode())
    fix(cli, tmp_path)
    assert target.read_bytes() == b"import torch\r\rstate = torch.load('ckpt.pt', weights_only=True)\r"
