"""``--baseline``: write today's findings, edit unrelated lines, only new findings come back."""

import json

import pytest

from auditor.cli import main

BEFORE = """\
import torch


def restore(path):
    return torch.load(path)


state = torch.load("w.pt")
"""

# Lines inserted above, the first finding moved into a class and re-indented, blank lines
# removed: no old finding may come back. One new unsafe load is added.
AFTER = """\
\"\"\"Checkpoint helpers.\"\"\"
import os
import torch

CHECKPOINTS = os.environ.get("CKPT", ".")


class Store:
    def restore(self, path):
        return torch.load(path)

state = torch.load("w.pt")
extra = torch.load("extra.pt")
"""


def gm_audit(capsys, *args: str) -> tuple[int, dict, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--no-cache", "--format", "json", *args])
    out, err = capsys.readouterr()
    return exit_info.value.code, (json.loads(out) if out.strip() else {}), err


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # the repository root fingerprints are anchored to
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(BEFORE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_round_trip_reports_only_new_findings(project, capsys):
    code, data, err = gm_audit(capsys, "src", "--baseline", "gm-audit-baseline.json",
                               "--write-baseline")
    assert code == 0 and data["findings"] == []
    assert "wrote 2 finding(s)" in err
    recorded = json.loads((project / "gm-audit-baseline.json").read_text())
    assert [e["line"] for e in recorded["findings"]] == [5, 8]

    code, data, _ = gm_audit(capsys, "src", "--baseline", "gm-audit-baseline.json")
    assert code == 0 and data["findings"] == []  # nothing changed: nothing new

    (project / "src" / "train.py").write_text(AFTER)
    code, data, err = gm_audit(capsys, "src", "--baseline", "gm-audit-baseline.json")
    assert code == 1
    assert [(f["rule"], f["line"]) for f in data["findings"]] == [("GM602", 13)]
    assert data["baseline"] == {"path": "gm-audit-baseline.json", "known": 2}
    assert "2 finding(s) known from baseline" in err

    code, data, _ = gm_audit(capsys, "src")  # without the baseline all three are there
    assert len(data["findings"]) == 3


def test_same_baseline_from_a_subfolder(project, capsys, monkeypatch):
    gm_audit(capsys, "src", "--baseline", "b.json", "--write-baseline")
    monkeypatch.chdir(project / "src")
    code, data, _ = gm_audit(capsys, ".", "--baseline", "../b.json")
    assert code == 0 and data["findings"] == []


def test_identical_lines_are_counted_not_merged(project, capsys):
    one = "import torch\nstate = torch.load('w.pt')\n"
    (project / "src" / "train.py").write_text(one)
    gm_audit(capsys, "src", "--baseline", "b.json", "--write-baseline")
    (project / "src" / "train.py").write_text(one + "state = torch.load('w.pt')\n")
    code, data, _ = gm_audit(capsys, "src", "--baseline", "b.json")
    assert code == 1 and [f["line"] for f in data["findings"]] == [3]


def test_a_changed_line_is_a_new_finding(project, capsys):
    gm_audit(capsys, "src", "--baseline", "b.json", "--write-baseline")
    path = project / "src" / "train.py"
    path.write_text(path.read_text().replace('torch.load("w.pt")', 'torch.load("other.pt")'))
    code, data, _ = gm_audit(capsys, "src", "--baseline", "b.json")
    assert code == 1 and [f["line"] for f in data["findings"]] == [8]


@pytest.mark.parametrize("args,content,message", [
    (["--write-baseline"], None, "--write-baseline needs --baseline FILE"),
    (["--baseline", "missing.json"], None, "does not exist"),
    (["--baseline", "bad.json"], "{not json", "cannot read baseline"),
    (["--baseline", "bad.json"], '{"findings": []}', "not a gm-audit baseline"),
    (["--baseline", "bad.json"], '{"gm-audit-baseline": 1, "findings": [1]}', "fingerprint"),
])
def test_usage_errors(project, capsys, args, content, message):
    if content is not None:
        (project / "bad.json").write_text(content)
    code, _, err = gm_audit(capsys, "src", *args)
    assert code == 2 and message in err
