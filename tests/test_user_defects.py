"""Defects a new user hit, each through the real command line: the declared Python, the probe's
exit code for a command that cannot run, Ruff's globs, fix marks that hold, named files and stdin
analysed in their project, and the smaller ones (GM0xx selection, unused-ignore quotes, GM604's
citation, github paths, did-you-mean for values and config keys, extend-select, SARIF helpUri)."""

from __future__ import annotations

import io
import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import auditor
from auditor.cli import main
# the pre-commit tests' cross-file detach: a helper module and the script training through it
from tests.test_precommit import HELPER, TRAIN

REPO = Path(__file__).resolve().parent.parent

LOAD = "import torch\nstate = torch.load('w.pt')\n"


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def gm(monkeypatch, capsys):
    """``gm-audit ARGS`` in this process (the real ``main``), run in ``cwd`` with ``stdin``:
    (exit code, stdout, stderr)."""

    def run(cwd: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        out, err = capsys.readouterr()
        return exit_info.value.code, out, err

    return run


def found(result: tuple[int, str, str]) -> list[tuple[str, str, int]]:
    code, out, err = result
    assert code in (0, 1), err
    return [(f["rule"], f["path"], f["line"]) for f in json.loads(out)["findings"]]


def check(gm, cwd: Path, *args: str, stdin: str = "") -> list[tuple[str, str, int]]:
    return found(gm(cwd, "check", "--no-cache", "--format", "json", *args, stdin=stdin))


def test_declared_python_is_the_tested_one():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    ci = re.search(r"^PYTHON \?= python(\d+)\.(\d+)$", (REPO / "Makefile").read_text(), re.M)
    assert ci, "the Makefile names the tested interpreter"
    assert declared == f">={ci[1]}.{ci[2]}" == ">=" + ".".join(map(str, auditor.MIN_PYTHON))


def test_probe_of_a_command_that_cannot_run_exits_2_in_a_tree_with_findings(tmp_path, gm):
    write(tmp_path, {"helper.py": LOAD})
    code, out, err = gm(tmp_path, "probe", "--no-cache", "--format", "json", "--", "python",
                        "nonexistent.py")
    assert code == 2, err
    data = json.loads(out)
    assert data["run"]["steps"] == 0 and [f["rule"] for f in data["findings"]] == ["GM602"]


def test_exclude_and_per_file_ignores_match_globs_as_ruff(tmp_path, gm):
    write(tmp_path, {
        "pyproject.toml": """\
            [tool.gm-audit]
            exclude = ["vendored"]
            [tool.gm-audit.per-file-ignores]
            "tests/**/*.py" = ["GM602"]
            "scripts/*.py" = ["GM602"]
        """,
        "tests/test_a.py": LOAD, "tests/unit/test_b.py": LOAD,  # ** is zero or more folders
        "scripts/run.py": LOAD, "scripts/deep/run.py": LOAD,  # * stays within one folder
        "pkg/vendored/lib.py": LOAD,  # a bare name: that folder anywhere
        "src/main.py": LOAD,
    })
    assert check(gm, tmp_path, ".") == [("GM602", "scripts/deep/run.py", 2),
                                        ("GM602", "src/main.py", 2)]
    # patterns are relative to the config's folder, wherever the check runs from
    assert check(gm, tmp_path / "tests", ".") == []


UNFIXABLE = """\
import torch


def main():
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.Adam(model.parameters())
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    opt.step()
    state = torch.load("w.pt")


main()
"""  # GM603 (nothing seeded: no seed to follow), GM301 (no fix), GM602 (a safe fix)


def test_show_fixes_marks_only_fixes_that_apply_and_fix_says_what_it_left(tmp_path, gm):
    write(tmp_path, {"train.py": UNFIXABLE})
    _, out, _ = gm(tmp_path, "check", ".", "--no-cache", "--show-fixes", "--color", "never")
    marks = dict(re.findall(r"train\.py:\d+:\d+: (GM\d+) (\[\*\??\] )?", out))
    assert marks == {"GM301": "", "GM602": "[*] ", "GM603": ""}, out
    assert "[*] 1 fixable" in out and "[*?] 0 more" in out
    _, out, _ = gm(tmp_path, "check", ".", "--no-cache", "--fix", "--unsafe-fixes", "--format",
                   "json")
    fixes = json.loads(out)["fixes"]
    assert [f["rule"] for f in fixes["applied"]] == ["GM602"]
    [left] = fixes["unfixable"]
    assert left["rule"] == "GM603" and "no automatic fix for this case" in left["reason"]
    assert "by hand: seed every RNG" in left["reason"]


def test_named_file_and_stdin_are_analysed_in_their_project(tmp_path, gm):
    write(tmp_path, {"helpers.py": HELPER, "train.py": TRAIN, "setup.cfg": ""})
    (tmp_path / "src").mkdir()
    for cwd, name in ((tmp_path, "train.py"), (tmp_path / "src", "../train.py")):
        got = check(gm, cwd, name)
        assert [(r, Path(p).name, n) for r, p, n in got] == [("GM101", "helpers.py", 2)], cwd
    code, out, err = gm(tmp_path, "check", "-", "--stdin-filename", "train.py", "--format",
                        "json", stdin=TRAIN)
    data = json.loads(out)
    assert found((code, out, err)) == [("GM101", "helpers.py", 2)]
    assert data["summary"]["files"] == 1 and "train.py:12" in data["findings"][0]["message"]
    # stdin's text, not the file on disk, at its real path in every message; --diff works
    messages = [f["message"] for f in json.loads(gm(
        tmp_path, "check", "-", "--stdin-filename", "train.py", "--format", "json",
        stdin=UNFIXABLE)[1])["findings"]]
    assert any("train.py:9" in m for m in messages)
    assert not any("gm-audit-stdin" in m for m in messages), messages
    code, out, err = gm(tmp_path, "check", "-", "--stdin-filename", "helpers.py", "--diff",
                        "--unsafe-fixes", stdin=HELPER)
    assert code == 1, err
    assert "--- a/helpers.py" in out and "+    return model(x)\n" in out
    assert (tmp_path / "helpers.py").read_text() == HELPER  # --diff writes nothing


def test_engine_codes_are_selectable_and_unused_ignores_quoted_as_written(tmp_path, gm):
    write(tmp_path, {"a.py": """\
        import torch
        x = torch.load('a', weights_only=True)  # noqa: GM602
        y = 1  # gm-audit: ignore[GM101;GM602]
    """})
    assert check(gm, tmp_path, ".") == [("GM001", "a.py", 3)]  # malformed: always reported
    assert check(gm, tmp_path, ".", "--ignore", "GM001") == []
    _, out, _ = gm(tmp_path, "check", ".", "--no-cache", "--format", "json", "--select", "GM001")
    findings = json.loads(out)["findings"]
    assert [(f["rule"], f["line"]) for f in findings] == [("GM001", 2), ("GM001", 3)]
    assert findings[0]["message"] == "`# noqa: GM602` suppresses nothing on this line"


def test_gm604_cites_only_the_seeding_of_its_own_program(tmp_path, gm):
    write(tmp_path, {
        "seeded.py": "import torch\ntorch.manual_seed(0)\nprint(torch.rand(1))\n",
        "fast.py": "import torch\ntorch.backends.cudnn.benchmark = True\nprint(torch.rand(1))\n",
    })
    assert check(gm, tmp_path, ".", "--select", "GM604") == []
    write(tmp_path, {"fast.py": "import torch\nimport seeded\ntorch.backends.cudnn.benchmark = True\n"})
    assert check(gm, tmp_path, ".", "--select", "GM604") == [("GM604", "fast.py", 3)]


def test_github_paths_are_relative_to_the_repository_root(tmp_path, gm):
    (tmp_path / ".git").mkdir()
    write(tmp_path, {"sub/load.py": LOAD})
    _, out, _ = gm(tmp_path / "sub", "check", ".", "--no-cache", "--format", "github")
    assert out.startswith("::warning file=sub/load.py,line=2,"), out


def test_did_you_mean_for_option_values_and_config_keys(tmp_path, gm):
    code, _, err = gm(tmp_path, "check", "--format", "jsn", ".")
    assert code == 2 and "did you mean `json`?" in err
    write(tmp_path, {"pyproject.toml": "[tool.gm-audit.probe]\ncomand = 'python x.py'\n"})
    code, _, err = gm(tmp_path, "check", ".")
    assert code == 2 and "did you mean `command`?" in err, err


def test_extend_select_in_config_adds_to_select(tmp_path, gm):
    write(tmp_path, {"a.py": UNFIXABLE, "pyproject.toml":
                     "[tool.gm-audit]\nselect = ['GM301']\nextend-select = ['GM602']\n"})
    assert sorted({r for r, _, _ in check(gm, tmp_path, ".")}) == ["GM301", "GM602"]
    # --select replaces both, as in Ruff
    assert {r for r, _, _ in check(gm, tmp_path, ".", "--select", "GM603")} == {"GM603"}


def test_sarif_rules_link_their_documentation(tmp_path, gm):
    write(tmp_path, {"a.py": LOAD})
    _, out, _ = gm(tmp_path, "check", ".", "--no-cache", "--format", "sarif")
    [rule] = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    assert rule["helpUri"] == (REPO / "README.md").as_uri() + "#rules"
    readme = (REPO / "README.md").read_text()
    assert "\n## Rules\n" in readme and "| GM602 |" in readme  # where the anchor leads
