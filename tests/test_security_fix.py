"""--fix on files it should not touch: read-only files are left alone and reported, owners and
hard links are kept, and what was and was not fixed is reported."""

import json
import os
import stat

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
