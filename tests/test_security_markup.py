"""Markup and escapes: what a repository or its program prints is shown, never obeyed, in every
format; a file name that is not UTF-8 is reported, never a crash."""

import json
import os
from pathlib import Path

from markdown_it import MarkdownIt

from auditor.findings import Finding, Severity
from auditor.probe.command import text_sections
from auditor.probe.launch import tail
from auditor.reports import FORMATS, Report, render

SOURCE = (b"import torch\nx = torch.load('a')  # \x1b[2J\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\n")
HOSTILE_NAME = "a`<img src=x onerror=alert(1)>`|b.py"


def test_hostile_names_and_source_in_every_format(tmp_path, cli):
    for name in (os.fsencode(HOSTILE_NAME), b"bad\xff.py"):
        (tmp_path / os.fsdecode(name)).write_bytes(SOURCE)
    outputs = {}
    for fmt in FORMATS:
        proc = cli("--format", fmt, "--no-cache", "--color", "never", "-q", ".", cwd=tmp_path)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (fmt, proc.stderr)
        outputs[fmt] = proc.stdout
        assert "\x1b" not in proc.stdout, fmt
    assert "\\x1b[2J" in outputs["text"] and "bad\\xff.py" in outputs["text"]
    sarif_uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
                  for r in json.loads(outputs["sarif"])["runs"][0]["results"] for loc in r["locations"]}
    assert sarif_uris == {"bad%FF.py", "a%60%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%60%7Cb.py"}
    html = MarkdownIt("commonmark").enable("table").render(outputs["markdown"])
    assert "<img" not in html and "&lt;img" in html
    rows = [line for line in outputs["markdown"].splitlines() if line.startswith("| 🟠")]
    assert len(rows) == 2
    for row in rows:  # the name's pipe is escaped: still five cells
        assert row.replace("\\|", "").count("|") == 6


def test_program_output_is_not_rich_markup_and_is_capped(tmp_path):
    log = tmp_path / "log"
    log.write_text("y" * 5_000_000 + "\n" + "z" * 5_000_000 + "\n[/tmp/x]\n[rank0]: loss 0.5\n\x1b[2Jcleared\n")
    lines = tail(log)
    assert lines[1:] == ["[/tmp/x]", "[rank0]: loss 0.5", "\x1b[2Jcleared"]
    assert lines[0].startswith("zzz") and len(lines[0]) < 3000
    run = {"device": "cpu", "world_size": 1, "processes": 1, "exit": 1, "seconds": 1.0,
           "stopped": "exit"}
    sections = text_sections(run, "the program exited with code 1", [], lines, [])
    report = Report("probe", [Finding("GM101", "detach-in-loss-path", Severity.ERROR, "t.py", 1, 1, 1, 2,
                                      "message [bold]not markup[/bold]")], extra={"text_sections": sections})
    text = render("text", report, color=False)
    assert "[/tmp/x]" in text and "[rank0]: loss 0.5" in text and "[bold]not markup[/bold]" in text
    assert "\\x1b[2Jcleared" in text and "\x1b" not in text
    assert len(text) < 20_000
    for fmt in FORMATS:
        assert len(render(fmt, report)) < 200_000, fmt
