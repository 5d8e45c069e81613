"""The single-file HTML report: parsed as HTML, rendered without matplotlib, and loaded in a real
headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it) with no console error and a
screenshot in which both charts are drawn."""

import math
import os
import random
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from auditor.findings import Status
from auditor.reports import Report, render
from test_reports_markdown import confirmed_detach, finding, project  # noqa: F401 (fixture)

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
    "--enable-logging=stderr", "--v=0",
]


def probe_extra() -> dict:
    """What a probe + diff of a detach bug emit: the encoder gets no gradient, points scatter."""
    rng = random.Random(0)
    grads = [{"name": f"encoder.layers.{i}.{p}", "norm": None, "state": "none", "unreached": True}
             for i in range(3) for p in ("fc.weight", "fc.bias", "attn_l", "attn_r")]
    for i in range(2):
        for p in ("fc.weight", "fc.bias"):
            grads.append({"name": f"decoder.layers.{i}.{p}", "norm": 10 ** rng.uniform(-4, -2),
                          "state": "finite"})
    target, predicted, node = [], [], []
    for n in range(3):  # a line, an arc and a curve: three masked CAD entities
        for k in range(16):
            t = k / 15
            p = ([t, 0.2 * t, 0.0], [math.cos(t * math.pi), math.sin(t * math.pi), 0.5],
                 [0.5, t, t * t])[n]
            target.append(p)
            predicted.append([v + rng.gauss(0, 0.6) for v in p])
            node.append(n)
    return {
        "parameter_gradients": grads,
        "reconstruction": {"target": target, "predicted": predicted, "node": node},
        "stages": [{"stage": "init", "status": "same", "items": []},
                   {"stage": "forward", "status": "differs",
                    "items": [{"name": "encoder", "detail": "max |a-b| = 0.43"}]},
                   {"stage": "grad", "status": "missing", "items": ["encoder.layers.0.fc.weight"]}],
        "first_divergence": {"stage": "forward", "name": "encoder", "detail": "max |a-b| = 0.43",
                             "rule": "GM101", "path": "src/train.py", "line": 6},
    }


@pytest.fixture
def report(project) -> Report:
    findings = [
        confirmed_detach(),
        finding("GM201", "eval-in-train", Status.REFUTED, 5, 5, 10,
                "`.eval()` <script>alert(1)</script> reaches the step",
                ["model.training was True at backward of step 1"]),
    ]
    return Report("probe", findings, files=1, seconds=3.2, extra=probe_extra())


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag]


def test_html_is_self_contained_with_charts_tables_and_findings(report):
    text = render("html", report)
    page = Page(text)
    images = page.all("img")
    assert len(images) == 2 and all(i["src"].startswith("data:image/png;base64,") for i in images)
    assert not page.all("script") and not page.all("link")  # nothing to fetch, nothing to run
    csp = [m for m in page.all("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]
    body = " ".join(" ".join(page.text).split())
    assert "12 with no usable gradient" in body
    assert "First divergence: stage forward" in body
    assert "48 point(s) of 3 masked node(s)" in body
    assert "12 of 12 parameters under encoder.* got no gradient at step 1" in body
    assert "<script>alert(1)</script>" in body  # shown as text, escaped in the markup
    assert "<script>alert(1)</script>" not in text
    assert [a["class"] for a in page.all("span") if a.get("class") == "hit"] == ["hit", "hit"]


def test_html_without_matplotlib_says_so_and_keeps_the_data(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    page = Page(render("html", report))
    body = " ".join(" ".join(page.text).split())
    assert not page.all("img")
    assert "Charts need matplotlib, which is not installed" in body
    assert "encoder.layers.2.attn_r" in body and "decoder.layers.1.fc.bias" in body
    assert "0.5, 1.0, 1.0" in body  # a target point, in the table that replaces the scatter


def test_html_skips_malformed_extra(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = {"parameter_gradients": [{"norm": 1}, "x"], "reconstruction": {"target": [[1, 2]]},
             "stages": ["init"]}
    page = Page(render("html", Report("diff", [], extra=extra)))
    assert not page.all("img") and "No findings." in " ".join(page.text)


def chromium() -> str:
    found = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if found is None:
        if os.environ.get("GM_AUDIT_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (.ci/run installs it: apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return found


def load(browser: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    """One headless load of ``page``; console messages land on stderr as ``INFO:CONSOLE`` lines."""
    profile = tmp / f"profile-{page.stem}"
    return subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180,
    )


def console(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if ":CONSOLE" in line]


def colour_pixels(png: Path, rgb: tuple[int, int, int], tolerance: int = 12) -> int:
    from PIL import Image

    colours = Image.open(png).convert("RGB").getcolors(1 << 24)
    return sum(n for n, px in colours if all(abs(a - b) <= tolerance for a, b in zip(px, rgb)))


def test_html_in_headless_chromium(report, tmp_path):
    browser = chromium()
    # the console check can fail: a page that logs an error is caught
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>console.error('planted error')</script>")
    assert any("planted error" in line for line in console(load(browser, bad, tmp_path, "--dump-dom")))

    page = tmp_path / "report.html"
    page.write_text(render("html", report), encoding="utf-8")
    shot = tmp_path / "report.png"
    run = load(browser, page, tmp_path, "--window-size=1280,2600", f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console(run) == []  # no script errors, no blocked (network) loads
    keep = os.environ.get("GM_AUDIT_SCREENSHOT")  # to look at it: GM_AUDIT_SCREENSHOT=out.png
    if keep:
        shutil.copy(shot, keep)
    # both charts were decoded and painted: their colours are on screen
    assert colour_pixels(shot, (0x08, 0x51, 0x9C)) > 500  # gradient-norm bars
    assert colour_pixels(shot, (0xD6, 0x27, 0x28), 40) > 100  # blocked-gradient markers
    assert colour_pixels(shot, (0xFF, 0x7F, 0x0E), 30) > 300  # reconstructed points
    assert colour_pixels(shot, (0x1F, 0x77, 0xB4), 30) > 300  # target points
