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


def test_program_output_and_exception_messages_are_inert_in_every_format():
    """What a crashed program printed, and its exception message, reach every report (the crash
    banner, the SARIF notification): never as markup, HTML or terminal escapes."""
    tail = ["[/tmp/x]", "[rank0]: loss 0.5", "\x1b[2Jcleared \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",
            "<img src=x onerror=alert(1)>", "```", "</pre><script>alert(1)</script>"]
    summary = "the program crashed with exit code 1: RuntimeError: [bold]x[/bold] <img src=y> \x1b[31mred"
    run = {"stopped": "crash", "exit": 1, "summary": summary, "device": "cpu", "world_size": 1,
           "processes": 1, "seconds": 1.0, "steps": 0}
    report = Report("probe", [Finding("GM101", "detach-in-loss-path", Severity.ERROR, "t.py", 1, 1, 1, 2, "m")],
                    extra={"run": run, "output_tail": tail,
                           "text_sections": text_sections(run, summary, [], tail, [])})
    out = {fmt: render(fmt, report, color=False) for fmt in FORMATS}
    for fmt, text in out.items():
        assert "\x1b" not in text, fmt
    assert "[/tmp/x]" in out["text"] and "[rank0]: loss 0.5" in out["text"] and "[bold]x[/bold]" in out["text"]
    assert "\\x1b[2Jcleared" in out["text"] and "\\x1b[31mred" in out["text"]
    html = MarkdownIt("commonmark").render(out["markdown"])
    assert "<img" not in html and "<script" not in html and "<pre><code" in html
    assert "\\x1b[2Jcleared" in out["markdown"]
    # the tail's own fence cannot close the block it is quoted in
    assert out["markdown"].count("> ```") == 2
    assert "<img" not in out["html"] and "<script" not in out["html"] and "&lt;img src=x" in out["html"]
    sarif = json.loads(out["sarif"])["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "[/tmp/x]\n[rank0]: loss 0.5" in sarif[-1]["message"]["text"]  # plain text, as JSON
    assert json.loads(out["json"])["output_tail"] == tail
