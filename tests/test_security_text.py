"""Text edge cases: odd line breaks keep lines where Python counts them, CR-only files honour
their suppressions, and a malformed suppression silences nothing (GM001)."""

import json
import subprocess
import sys


def check(cli, root, *extra):
    proc = cli("--format", "json", "--no-cache", *extra, ".", cwd=root)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def test_form_feed_and_unicode_breaks_do_not_shift_lines(tmp_path, cli):
    (tmp_path / "t.py").write_text("import torch\n\x0c\nx = 1  # \u2028 \x85 not line ends for Python\n"
                                   "state = torch.load('a')\n", encoding="utf-8")
    found = check(cli, tmp_path)["findings"]
    assert [(f["rule"], f["line"], f["column"]) for f in found] == [("GM602", 4, 9)]
    text = cli("--no-cache", "--color", "never", ".", cwd=tmp_path).stdout
    assert "4 | state = torch.load('a')" in text


def test_cr_only_file_honours_its_suppression(tmp_path, cli):
    (tmp_path / "t.py").write_bytes(b"import torch\rx = 1\rstate = torch.load('a')  # gm-audit: ignore[GM602]\r")
    assert check(cli, tmp_path)["findings"] == []
    (tmp_path / "t.py").write_bytes(b"import torch\rx = 1\rstate = torch.load('a')\r")
    assert [(f["rule"], f["line"]) for f in check(cli, tmp_path)["findings"]] == [("GM602", 3)]


def test_malformed_suppressions_suppress_nothing_and_are_reported(tmp_path, cli):
    (tmp_path / "t.py").write_text(
        "import torch\n"
        "a = torch.load('a')  # gm-audit: ignore[GM602;GM101]\n"
        "b = torch.load('b')  # gm-audit: ignored[GM602]\n"
        "c = torch.load('c')  # gm-audit: ignore[GM602, GM101]\n"
        "d = torch.load('d')  # gm-audit: ignore\n")
    found = [(f["rule"], f["line"], f["message"]) for f in check(cli, tmp_path)["findings"]]
    assert [(r, n) for r, n, _ in found] == [("GM001", 2), ("GM602", 2), ("GM001", 3), ("GM602", 3)]
    assert found[0][2] == "malformed suppression `# gm-audit: ignore[GM602;GM101]` suppresses nothing"


def test_diff_of_a_fix_applies_to_files_with_odd_line_breaks(tmp_path, cli):
    """`--diff` counts lines as patch does: form feed, U+2028 and U+0085 inside a line, CR-only
    files, CRLF. What `git apply` makes of the diff is what `--fix` writes."""
    sources = {
        "odd.py": "import torch\n\x0c\nx = 1  # \u2028 \x85 not line ends\nstate = torch.load('a')\n",
        "mac.py": "import torch\r\rstate = torch.load('a')\r",
        "dos.py": "import torch\r\n\r\nstate = torch.load('a')\r\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_bytes(text.encode())
    # bytes as written: text mode would turn the CRs of the diff into newlines
    proc = subprocess.run([sys.executable, "-m", "auditor", "--no-cache", "--diff", "."], cwd=tmp_path,
                          capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    (tmp_path / "fix.patch").write_bytes(proc.stdout)
    applied = subprocess.run(["git", "apply", "-p1", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    patched = {name: (tmp_path / name).read_bytes() for name in sources}
    for name, text in sources.items():
        (tmp_path / name).write_bytes(text.encode())
    cli("--no-cache", "--fix", ".", cwd=tmp_path)
    fixed = {name: (tmp_path / name).read_bytes() for name in sources}
    assert patched == fixed
    assert all(b"weights_only=True" in data for data in fixed.values())
