"""`gm-audit check`: discovery, config, suppression, formats, exit codes and bad input."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

BUG = "import torch\nstate = torch.load('w.pt')\n"
CLEAN = "import torch\nstate = torch.load('w.pt', weights_only=True)\n"


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
    return p


def as_json(proc) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_default_command_is_check_and_json_contract(tmp_path, cli):
    write(tmp_path, "src/train.py", BUG)
    proc = cli("src", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1
    data = as_json(proc)
    assert data["tool"] == {"name": "gm-audit", "version": "0.1.0"}
    assert data["command"] == "check"
    (f,) = data["findings"]
    assert f["rule"] == "GM602" and f["path"] == "src/train.py"
    assert (f["line"], f["column"], f["end_line"], f["end_column"]) == (2, 9, 2, 27)
    assert f["status"] == "static" and f["fix"] and f["severity"] == "warning"
    assert set(f) == {"rule", "name", "severity", "path", "line", "column", "end_line",
                      "end_column", "message", "fix", "status", "evidence"}
    assert data["summary"]["files"] == 1 and data["summary"]["findings"] == 1


def test_clean_exits_zero_and_exit_zero_flag(tmp_path, cli):
    write(tmp_path, "a.py", CLEAN)
    assert cli("check", ".", cwd=tmp_path).returncode == 0
    write(tmp_path, "b.py", BUG)
    assert cli("check", ".", cwd=tmp_path).returncode == 1
    assert cli("check", ".", "--exit-zero", cwd=tmp_path).returncode == 0


def test_fail_on_error_ignores_warnings(tmp_path, cli):
    write(tmp_path, "b.py", BUG)  # GM602 is a warning
    assert cli("check", ".", "--fail-on", "error", cwd=tmp_path).returncode == 0
    write(tmp_path, "pyproject.toml", '[tool.gm-audit]\nfail-on = "error"\n')
    assert cli("check", ".", cwd=tmp_path).returncode == 0


def test_discovery_skips_venvs_and_caches_but_not_build(tmp_path, cli):
    write(tmp_path, "venv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "venv/lib/x.py", BUG)
    write(tmp_path, "node_modules/y.py", BUG)
    write(tmp_path, "build/lib/z.py", BUG)
    write(tmp_path, "dist/w.py", BUG)
    data = as_json(cli("--format", "json", ".", cwd=tmp_path))
    assert sorted(f["path"] for f in data["findings"]) == ["build/lib/z.py", "dist/w.py"]


def test_select_ignore_and_unknown_codes(tmp_path, cli):
    write(tmp_path, "b.py", BUG)
    assert as_json(cli("--format", "json", "--ignore", "GM602", ".", cwd=tmp_path))["findings"] == []
    assert as_json(cli("--format", "json", "--select", "GM6", ".", cwd=tmp_path))["findings"]
    proc = cli("--select", "GM999", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown rule" in proc.stderr and "Traceback" not in proc.stderr


def test_config_keys_validated_and_applied(tmp_path, cli):
    write(tmp_path, "gen/b.py", BUG)
    write(tmp_path, "src/c.py", BUG)
    write(tmp_path, "tests/d.py", BUG)
    write(tmp_path, "pyproject.toml", """
        [tool.gm-audit]
        exclude = ["gen"]
        per-file-ignores = {"tests/*" = ["GM602"]}
    """)
    data = as_json(cli("--format", "json", ".", cwd=tmp_path))
    assert [f["path"] for f in data["findings"]] == ["src/c.py"]
    write(tmp_path, "pyproject.toml", "[tool.gm-audit]\nselekt = ['GM101']\n")
    proc = cli(".", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown key" in proc.stderr and "selekt" in proc.stderr
    write(tmp_path, "pyproject.toml", "[tool.gm-audit]\nignore = ['GM777']\n")
    proc = cli(".", cwd=tmp_path)
    assert proc.returncode == 2 and "GM777" in proc.stderr


def test_malformed_pyproject_exits_2_with_the_toml_error_position(tmp_path, cli):
    write(tmp_path, "src/b.py", BUG)
    write(tmp_path, "pyproject.toml", '[tool.gm-audit]\nignore = ["GM602"]\nselect = GM6\n')
    for args in ([".", "--exit-zero"], ["src/b.py"], ["probe", "--", "python", "x.py"]):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "pyproject.toml: invalid TOML" in proc.stderr and "(at line 3, column 10)" in proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_inline_suppression_and_unused_report(tmp_path, cli):
    write(tmp_path, "a.py", """
        import torch
        a = torch.load('a')  # gm-audit: ignore[GM602]
        b = torch.load('b')  # gm-audit: ignore
        c = torch.load('c')  # gm-audit: ignore[GM101]
        d = 1  # gm-audit: ignore
        s = "# gm-audit: ignore"; e = torch.load('e')
    """)
    data = as_json(cli("--format", "json", ".", cwd=tmp_path))
    assert sorted(f["line"] for f in data["findings"]) == [5, 7]
    data = as_json(cli("--format", "json", "--report-unused-ignores", ".", cwd=tmp_path))
    unused = sorted(f["line"] for f in data["findings"] if f["rule"] == "GM001")
    assert unused == [5, 6]


def test_bad_input_is_reported_never_a_traceback(tmp_path, cli):
    write(tmp_path, "broken.py", "def f(:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9t\xe9'\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02torch.load")
    write(tmp_path, "empty.py", "")
    write(tmp_path, "ok.py", BUG)
    os.symlink(tmp_path, tmp_path / "loop")
    huge = tmp_path / "huge.py"
    huge.write_text("x = 1\n" * 900_000)
    locked = write(tmp_path, "locked.py", BUG)
    locked.chmod(0)
    proc = cli("--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    data = as_json(proc)
    assert proc.returncode == 1
    parse = [f for f in data["findings"] if f["rule"] == "GM000"]
    assert parse and parse[0]["path"] == "broken.py" and parse[0]["line"] == 1
    errors = {e["path"]: e["message"] for e in data["errors"]}
    assert "not valid utf-8" in errors["latin.py"].lower()
    assert "binary" in errors["binary.py"]
    assert "larger than the 4 MiB" in errors["huge.py"]
    assert any("symlink loop" in m for m in errors.values())
    if os.geteuid() != 0:  # root reads anything
        assert "cannot read" in errors["locked.py"]
    assert any(f["path"] == "ok.py" for f in data["findings"])  # the run went on


def test_missing_path_is_a_usage_error(tmp_path, cli):
    proc = cli("does/not/exist", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "gm-audit: error: path does not exist: does/not/exist"


def test_output_file_and_text_format(tmp_path, cli):
    write(tmp_path, "b.py", BUG)
    proc = cli(".", "--output", "out/report.txt", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    text = (tmp_path / "out/report.txt").read_text()
    assert "b.py:2:9: GM602" in text and "^^^^" in text and "fix:" in text
    assert "\x1b[" not in text  # no colour outside a terminal
    assert not [p for p in (tmp_path / "out").iterdir() if p.name != "report.txt"]


def test_github_annotations(tmp_path, cli):
    write(tmp_path, "b.py", BUG)
    out = cli("--format", "github", ".", cwd=tmp_path).stdout
    assert out.startswith("::warning file=b.py,line=2,col=9,endLine=2,endColumn=27,title=GM602 unsafe-torch-load::")


def test_rules_and_explain(tmp_path, cli):
    listing = json.loads(cli("rules", "--format", "json", cwd=tmp_path).stdout)
    assert {"code": "GM602", "name": "unsafe-torch-load"}.items() <= listing[[r["code"] for r in listing].index("GM602")].items()
    doc = cli("explain", "gm602", cwd=tmp_path)
    assert doc.returncode == 0 and "## Why is this bad?" in doc.stdout
    assert cli("explain", "GM999", cwd=tmp_path).returncode == 2


def test_static_path_never_imports_torch_or_dgl(tmp_path):
    write(tmp_path, "b.py", BUG)
    code = (
        "import sys\nfrom auditor import cli\n"
        "try:\n    cli.main(['check', '--format', 'json', '--no-cache', '.'])\n"
        "except SystemExit:\n    pass\n"
        "print('HEAVY=' + ','.join(m for m in ('torch', 'dgl') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.strip().endswith("HEAVY="), out.stdout + out.stderr


def test_warm_cache_still_sees_cross_file_changes(tmp_path, cli):
    """utils.py is unchanged (served from the cache) but the finding its `.eval()` makes (placed
    where the missing `.train()` belongs, the evaluation named beside it) depends on train.py."""
    write(tmp_path, "utils.py", """
        def evaluate(model, loader):
            model.eval()
            for g in loader:
                model(g)
    """)
    train = """
        from utils import evaluate


        def train(model, opt, loader):
            for epoch in range(3):
                for g in loader:
                    loss = model(g)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                evaluate(model, loader){restore}
    """
    write(tmp_path, "train.py", train.format(restore=""))
    first = as_json(cli("--format", "json", ".", cwd=tmp_path))["findings"]
    assert [(f["rule"], f["path"], f["line"], f.get("related")) for f in first] == [
        ("GM201", "train.py", 7, ["utils.py:3"])]
    write(tmp_path, "train.py", train.format(restore="\n                model.train()"))
    assert as_json(cli("--format", "json", ".", cwd=tmp_path))["findings"] == []
    write(tmp_path, "train.py", train.format(restore=""))
    again = as_json(cli("--format", "json", ".", cwd=tmp_path))["findings"]
    assert [(f["rule"], f["path"], f["line"], f.get("related")) for f in again] == [
        ("GM201", "train.py", 7, ["utils.py:3"])]
    assert list((tmp_path / ".gm_audit_cache").glob("check-*.json"))  # the cache was used
