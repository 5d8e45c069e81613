"""The pull-request comment, read back by a real CommonMark parser (markdown-it-py, with GFM
tables as GitHub renders them), and the ``github`` annotations, read back the way the Actions
runner parses workflow commands (``ActionCommand.TryParseV2`` in actions/runner: ``::name k=v,k=v::data``,
properties unescaped for ``%0D %0A %3A %2C %25``, data for ``%0D %0A %25``)."""

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from auditor.findings import Finding, Severity, Status
from auditor.reports import Report, render

SOURCE = """\
import torch


def step(model, g, x, mask):
    h = model.encoder(g, x)
    z = h.detach()
    rec = model.decoder(g, z)
    loss = ((rec[mask] - x[mask]) ** 2).mean()
    loss.backward()
    state = torch.load("w.pt")
"""


def finding(rule: str, name: str, status: Status, line: int, col: int, end: int, message: str,
            evidence: list[str] = (), severity: Severity = Severity.ERROR) -> Finding:
    return Finding(rule, name, severity, "src/train.py", line, col, line, end, message,
                   fix=f"fix for {rule}", status=status, evidence=list(evidence))


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """The current folder, holding ``src/train.py`` = SOURCE (the reports show its lines)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def confirmed_detach() -> Finding:
    """The finding of the problem statement, as a probe confirms it."""
    return finding("GM101", "detach-in-loss-path", Status.CONFIRMED, 6, 9, 19,
                   "`.detach()` cuts the encoder out of the loss",
                   ["12 of 12 parameters under encoder.* got no gradient at step 1"])


@pytest.fixture
def report(project) -> Report:
    findings = [
        confirmed_detach(),
        finding("GM602", "unsafe-torch-load", Status.UNEXERCISED, 10, 13, 31,
                "`torch.load` without `weights_only=True`", severity=Severity.WARNING),
        finding("GM201", "eval-in-train", Status.REFUTED, 5, 5, 10,
                "`.eval()` <may> reach the step | really", ["model.training was True"]),
        finding("GM402", "loss-weights", Status.RUNTIME, 8, 5, 47,
                "loss scaled by 0", ["loss component `rec` had weight 0.0 at step 1"]),
    ]
    return Report("probe", findings, files=3, seconds=2.5)


def parse(text: str) -> list:
    return MarkdownIt("commonmark").enable("table").parse(text)


def test_markdown_comment_structure(report):
    text = render("markdown", report)
    tokens = parse(text)
    html = MarkdownIt("commonmark").enable("table").render(text)
    # counts by status, as a table
    first_table = html.split("</table>")[0]
    for status, n in [("confirmed", 1), ("runtime", 1), ("unexercised", 1), ("refuted", 1)]:
        assert re.search(rf"{status}</td>\s*<td[^>]*>{n}</td>", first_table), status
    # the proved findings get their own sections, before the collapsed rest
    opener = next(i for i, t in enumerate(tokens)
                  if t.type == "html_block" and t.content.startswith("<details>"))
    headings = [(i, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    above = [h for i, h in headings if i < opener]
    below = [h for i, h in headings if i > opener]
    assert any("GM101" in h and "confirmed" in h for h in above)
    assert any("GM402" in h and "runtime" in h for h in above)
    assert any("GM602" in h for h in below) and any("GM201" in h for h in below)
    assert not any("GM602" in h or "GM201" in h for h in above)
    assert "2 other finding(s): 1 unexercised, 1 refuted" in tokens[opener].content
    # code excerpt with the flagged line marked, evidence and fix
    fences = [t for t in tokens if t.type == "fence"]
    assert fences and all(t.info == "python" for t in fences)
    assert "    z = h.detach()  # ◀ GM101\n" in fences[0].content
    assert "    h = model.encoder(g, x)\n" in fences[0].content  # context line, unmarked
    assert "12 of 12 parameters under encoder.* got no gradient at step 1" in html
    assert "<strong>Fix:</strong> fix for GM101" in html
    # user text never becomes HTML, a pipe never breaks the table
    assert "<may>" not in html and "&lt;may&gt;" in html
    listing = [row for row in table_rows(tokens)[-1] if row]
    assert len(listing) == 2 and all(len(row) == 5 for row in listing)
    assert listing[1][4] == "`.eval()` &lt;may&gt; reach the step | really"


def test_markdown_expands_error_findings_of_a_static_check(project):
    findings = [
        finding("GM101", "detach-in-loss-path", Status.STATIC, 6, 9, 19, "`.detach()` cuts it"),
        finding("GM602", "unsafe-torch-load", Status.STATIC, 10, 13, 31,
                "`torch.load` without `weights_only=True`", severity=Severity.WARNING),
    ]
    text = render("markdown", Report("check", findings, files=3))
    folded = text.split("<details>", 1)[1]
    assert "### " in text.split("<details>", 1)[0] and "GM101" in text.split("<details>", 1)[0]
    assert "1 other finding(s): 1 static" in folded and "GM101" not in folded


def table_rows(tokens: list) -> list[list[list[str]]]:
    """Every table's body rows as lists of cell sources."""
    tables, row = [], None
    for i, t in enumerate(tokens):
        if t.type == "tbody_open":
            tables.append([])
        elif t.type == "tr_open" and tables:
            row = []
            tables[-1].append(row)
        elif t.type == "td_open" and row is not None:
            row.append(tokens[i + 1].content)
    return tables


def test_markdown_stays_within_a_github_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    many = [finding("GM602", "unsafe-torch-load", Status.STATIC, i, 1, 20, "x" * 80)
            for i in range(1, 3001)]
    text = render("markdown", Report("check", many, files=1))
    assert len(text) < 65_536
    assert "not listed" in text and parse(text)


def test_markdown_without_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = render("markdown", Report("check", [], files=4))
    assert "No new findings in 4 file(s)" in text


def test_markdown_diff_stages(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = {"first_divergence": {"stage": "init", "name": "encoder.layers.0.fc.weight",
                                  "detail": "max |a-b| = 0.43", "rule": "GM601",
                                  "path": "src/train.py", "line": 88},
             "stages": [{"stage": "init", "status": "differs", "items": [{"name": "w"}]},
                        {"stage": "input", "status": "same", "items": []}]}
    html = MarkdownIt("commonmark").enable("table").render(
        render("markdown", Report("diff", [], extra=extra)))
    assert "First divergence at stage <strong>init</strong>" in html
    assert re.search(r"<td>init</td>\s*<td>differs</td>", html)


# -- github annotations ---------------------------------------------------------------------------

PROPERTY_ESCAPES = [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]
DATA_ESCAPES = [("%0D", "\r"), ("%0A", "\n"), ("%25", "%")]


def unescape(text: str, mapping: list[tuple[str, str]]) -> str:
    for escaped, raw in mapping:  # the runner's order
        text = text.replace(escaped, raw)
    return text


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    assert line.startswith("::")
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2:]
    name, _, props = info.partition(" ")
    properties = {}
    for prop in filter(None, props.strip().split(",")):
        key, _, value = prop.partition("=")
        properties[key] = unescape(value, PROPERTY_ESCAPES)
    return name, properties, unescape(data, DATA_ESCAPES)


def test_github_annotations_parse_as_the_runner_does(report):
    report.findings[2].path = "src/odd, name:100%.py"
    report.findings[2].message = "50% of grads: zero,\nsee evidence"
    lines = render("github", report).splitlines()
    commands = [parse_command(line) for line in lines]
    assert [c[0] for c in commands] == ["error", "error", "warning", "notice"]  # proved first
    by_title = {c[1]["title"]: c for c in commands}
    name, props, data = by_title["GM201 eval-in-train (refuted)"]
    assert name == "notice" and props["file"] == "src/odd, name:100%.py"
    assert props["line"] == "5" and props["col"] == "5" and props["endColumn"] == "10"
    assert data.startswith("50% of grads: zero,\nsee evidence\nFix: fix for GM201")
    assert data.endswith("\n- model.training was True")
    _, props, data = by_title["GM101 detach-in-loss-path (confirmed)"]
    assert props["file"] == "src/train.py" and props["endLine"] == "6"
    assert "- 12 of 12 parameters under encoder.* got no gradient at step 1" in data
