"""What users of Ruff, flake8 and TorchFix expect of a linter's command line, through the real
entry point in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import build_parser
from test_cli_check import write

LOADS = "import torch\na = torch.load('a')\nb = torch.load('b')\n"


def findings(proc: subprocess.CompletedProcess) -> list[tuple[str, str, int]]:
    assert proc.returncode in (0, 1), proc.stderr
    return [(f["rule"], f["path"], f["line"]) for f in json.loads(proc.stdout)["findings"]]


def test_noqa_and_file_level_suppressions(tmp_path, cli):
    write(tmp_path, "a.py", """\
        import torch
        a = torch.load('a')  # noqa: GM602
        b = torch.load('b')  # noqa: E501, GM602
        c = torch.load('c')  # noqa: E501
        d = torch.load('d')  # noqa
        s = "# noqa: GM602"; e = torch.load('e')
    """)
    got = findings(cli("--format", "json", "--no-cache", ".", cwd=tmp_path))
    # only GM codes in a noqa count; a bare noqa belongs to other linters; a string is no comment
    assert got == [("GM602", "a.py", 4), ("GM602", "a.py", 5), ("GM602", "a.py", 6)]
    write(tmp_path, "a.py", "# gm-audit: ignore-file[GM602]\n" + LOADS)
    write(tmp_path, "b.py", "# gm-audit: ignore-file\n" + LOADS)
    write(tmp_path, "c.py", "# gm-audit: ignore-file[GM101]\n" + LOADS)
    proc = cli("--format", "json", "--no-cache", "--report-unused-ignores", ".", cwd=tmp_path)
    got = findings(proc)
    assert got == [("GM001", "c.py", 1), ("GM602", "c.py", 3), ("GM602", "c.py", 4)]
    unused = json.loads(proc.stdout)["findings"][0]
    assert unused["message"] == "`# gm-audit: ignore-file[GM101]` suppresses nothing in this file"


def test_source_from_stdin_is_reported_at_its_filename(tmp_path, cli):
    write(tmp_path, "pyproject.toml", """\
        [tool.gm-audit]
        exclude = ["gen"]
        per-file-ignores = {"tests/*" = ["GM602"]}
    """)
    env = {**os.environ}
    env.pop("GM_AUDIT_DEBUG", None)

    def stdin(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "auditor", "check", "-", *args, "--format",
                               "json"], input=LOADS, cwd=tmp_path, capture_output=True, text=True,
                              env=env, timeout=120)

    assert findings(stdin("--stdin-filename", "src/x.py")) == [
        ("GM602", "src/x.py", 2), ("GM602", "src/x.py", 3)]
    assert findings(stdin("--stdin-filename", "tests/t.py")) == []  # per-file ignores apply
    assert findings(stdin("--stdin-filename", "gen/g.py")) != []
    assert findings(stdin("--stdin-filename", "gen/g.py", "--force-exclude")) == []
    assert findings(stdin())[0][1] == "stdin.py"
    assert not list(tmp_path.glob(".gm_audit_cache*"))  # text with no file is never cached


def test_selection_flags_merge_like_ruff(tmp_path, cli):
    write(tmp_path, "a.py", """\
        import torch


        def main():
            model = torch.nn.Linear(4, 4)
            model.load_state_dict(torch.load("w.pt"))
            opt = torch.optim.Adam(model.parameters())
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            opt.step()


        main()
    """)  # GM601, GM602 and GM603 (nothing seeds the torch RNG)
    write(tmp_path, "pyproject.toml", "[tool.gm-audit]\nselect = ['GM603']\n")

    def rules(*args: str) -> list[str]:
        proc = cli("--format", "json", "--no-cache", *args, ".", cwd=tmp_path)
        return sorted({r for r, _, _ in findings(proc)})

    assert rules() == ["GM603"]
    assert rules("--extend-select", "GM602") == ["GM602", "GM603"]
    assert rules("--select", "GM602") == ["GM602"]
    assert rules("--select", "GM602", "--select", "GM603") == ["GM602", "GM603"]
    assert rules("--select", "GM6", "--extend-ignore", "GM603") == ["GM601", "GM602"]
    assert rules("--select", "GM6", "--ignore", "GM602", "--extend-ignore", "GM603") == ["GM601"]
    assert rules("--output-format", "json") == ["GM603"]  # the name, with --format its alias


def test_statistics_and_show_fixes(tmp_path, cli):
    write(tmp_path, "a.py", LOADS)
    stats = cli("--statistics", "--no-cache", ".", cwd=tmp_path)
    assert stats.returncode == 1
    assert "a.py:2" not in stats.stdout and "GM602  unsafe-torch-load  warning       2" in stats.stdout
    shown = cli("--show-fixes", "--no-cache", ".", cwd=tmp_path)
    assert "a.py:2:5: GM602 [*] [unsafe-torch-load]" in shown.stdout
    assert "[*] 2 fixable with `gm-audit check --fix`" in shown.stdout
    plain = cli("--no-cache", ".", cwd=tmp_path)
    assert "[*]" not in plain.stdout


def on_terminal(cwd: Path, env: dict) -> str:
    """The text output with stdout on a pseudo-terminal, where `--color auto` colours."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, **env}
    env.pop("GM_AUDIT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "auditor", "check", "--no-cache", "."], cwd=cwd,
                          stdout=slave, stderr=subprocess.DEVNULL, env=env, timeout=120)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the slave side is closed: all read
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.returncode == 1
    return out.decode()


def test_no_color_is_honoured(tmp_path):
    write(tmp_path, "a.py", LOADS)
    env = {k: "" for k in ("NO_COLOR", "FORCE_COLOR")}
    assert "\x1b[" in on_terminal(tmp_path, env)
    assert "\x1b[" not in on_terminal(tmp_path, {**env, "NO_COLOR": "1"})


@pytest.mark.parametrize("argv, hint", [
    (["chek", "src"], "did you mean `check`?"),
    (["check", "--selct", "GM1", "."], "did you mean `--select`?"),
    (["check", "--select", "GM61", "."], "did you mean `GM601`?"),
    (["check", "--ignore", "GM7O1", "."], "did you mean `GM701`?"),
])
def test_did_you_mean(tmp_path, cli, argv, hint):
    proc = cli(*argv, cwd=tmp_path)
    assert proc.returncode == 2 and hint in proc.stderr, proc.stderr


def every_action(parser):
    for action in parser._actions:
        if action.dest in ("help", "version") or action.nargs == 0 and action.dest == "help":
            continue
        if action.__class__.__name__ == "_SubParsersAction":
            for sub in action.choices.values():
                yield from every_action(sub)
            continue
        yield action


def test_every_argument_has_help():
    missing = [a.dest for a in every_action(build_parser()) if not a.help]
    assert missing == []


def test_report_and_baseline_files_get_the_users_umask(tmp_path, cli):
    write(tmp_path, "a.py", LOADS)
    old = os.umask(0o027)
    try:
        cli("--no-cache", "--format", "sarif", "--output", "out/report.sarif", ".", cwd=tmp_path)
        cli("--no-cache", "--baseline", "base.json", "--write-baseline", ".", cwd=tmp_path)
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "report.sarif").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "base.json").stat().st_mode & 0o777 == 0o640


def in_process(capsys, *argv: str) -> tuple[int, str, str]:
    """``gm-audit ARGV`` through :func:`auditor.cli.main` in this process (no interpreter start
    per call): exit code, stdout, stderr."""
    from auditor.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_add_noqa_marks_only_the_lines_with_findings(tmp_path, capsys, monkeypatch):
    source = ('import torch\r\n'
              'a = torch.load("a")\r\n'
              'b = torch.load("b")  # noqa: E501\r\n'
              'c = torch.load("c")  # gm-audit: ignore[GM101]\r\n'
              'd = torch.load("""d\r\n'
              '""")\r\n'
              'x = 1  # unrelated\r\n')
    (tmp_path / "a.py").write_bytes(source.encode())
    monkeypatch.chdir(tmp_path)
    code, _, err = in_process(capsys, "check", "--add-noqa", "--no-cache", ".")
    assert code == 1, err  # the `d` load's line ends inside a string
    assert "added 3 noqa directive(s) to 1 file(s)" in err
    assert "1 line(s) with findings got none" in err
    assert (tmp_path / "a.py").read_bytes().decode() == (
        'import torch\r\n'
        'a = torch.load("a")  # noqa: GM602\r\n'
        'b = torch.load("b")  # noqa: E501, GM602\r\n'
        'c = torch.load("c")  # gm-audit: ignore[GM101, GM602]\r\n'
        'd = torch.load("""d\r\n'
        '""")\r\n'
        'x = 1  # unrelated\r\n')
    out = in_process(capsys, "--format", "json", "--no-cache", ".")[1]
    assert [(f["rule"], f["line"]) for f in json.loads(out)["findings"]] == [("GM602", 5)]


def test_show_settings_prints_the_resolved_configuration(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml", """\
        [tool.gm-audit]
        select = ["GM6"]
        exclude = ["gen"]
        per-file-ignores = {"tests/*" = ["GM602"]}
    """)
    write(tmp_path, "a.py", LOADS)
    monkeypatch.chdir(tmp_path)
    code, out, _ = in_process(capsys, "check", "--show-settings", "--ignore", "GM604", ".")
    assert code == 0
    settings = dict(line.split(" = ", 1) for line in out.splitlines())
    assert json.loads(settings["config-file"]) == str(tmp_path / "pyproject.toml")
    assert json.loads(settings["selected-rules"]) == ["GM601", "GM602", "GM603"]
    assert json.loads(settings["exclude"]) == ["gen"]
    assert json.loads(settings["per-file-ignores"]) == {"tests/*": ["GM602"]}
    assert json.loads(settings["ignore"]) == ["GM604"]


def test_explain_all_documents_every_code(capsys):
    code, out, _ = in_process(capsys, "explain", "--all")
    assert code == 0
    listed = json.loads(in_process(capsys, "rules", "--format", "json")[1])
    headings = [line.split()[1] for line in out.splitlines() if line.startswith("# GM")]
    assert sorted(headings) == sorted([row["code"] for row in listed] + ["GM000", "GM001"])
    code, _, err = in_process(capsys, "explain")
    assert code == 2 and "explain takes one CODE, or --all" in err


def test_concise_and_gitlab_formats(tmp_path, capsys, monkeypatch):
    (tmp_path / ".git").mkdir()
    write(tmp_path, "src/a.py", "import torch\na = torch.load('a')\na = torch.load('a')\n")
    monkeypatch.chdir(tmp_path / "src")
    code, out, _ = in_process(capsys, "check", "--output-format", "concise", "--no-cache", ".")
    message = "`torch.load` without `weights_only=True` unpickles arbitrary objects"
    assert code == 1
    assert out == f"a.py:2:5: GM602 {message}\na.py:3:5: GM602 {message}\n"
    issues = json.loads(in_process(capsys, "check", "--format", "gitlab", "--no-cache", ".")[1])
    assert [(i["check_name"], i["description"], i["severity"], i["location"]["path"],
             i["location"]["lines"]["begin"]) for i in issues] == [
        ("GM602", message, "major", "src/a.py", 2), ("GM602", message, "major", "src/a.py", 3)]
    # identical lines: still one fingerprint each, as GitLab requires
    assert len({i["fingerprint"] for i in issues}) == 2


def test_watch_checks_again_after_a_change_and_stops_on_ctrl_c(tmp_path):
    import queue
    import signal
    import threading

    write(tmp_path, "a.py", LOADS)
    env = {**os.environ}
    env.pop("GM_AUDIT_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "check", "--watch", "--format",
                             "concise", "."], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def until(prefix: str) -> None:
        while not lines.get(timeout=60).startswith(prefix):
            pass

    try:
        until("a.py:3:5: GM602")
        (tmp_path / "a.py").write_text(LOADS + "c = torch.load('c')\n")
        until("a.py:4:5: GM602")  # the second report, with the new finding
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert "Traceback" not in stderr and "files changed, checking again" in stderr
