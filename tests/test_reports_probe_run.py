"""Reports rendered from real probe runs, not from made-up data: the HTML charts of a fixture run
loaded in headless Chromium, the message when the output cannot be read as points, and a crashed
run recorded in SARIF (validated), HTML and markdown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sarif_pydantic import Sarif

from auditor.probe.charts import MIN_STEPS_TO_JUDGE, too_short
from auditor.probe.evidence import Evidence

from test_probe_fixtures import build
from test_reports_html import Page, chromium, colour_pixels, console, load


def probe_report(cli, cwd: Path, fmt: str, script: str, *options: str):
    out = cwd / f"report.{fmt}"
    proc = cli("probe", "--no-cache", "--format", fmt, "--output", str(out), *options, "--",
               sys.executable, script, cwd=cwd, timeout=300)
    assert "Traceback (most recent call last)" not in proc.stderr.split("last output")[0], proc.stderr
    return proc, out.read_text(encoding="utf-8")


def words(page: Page) -> str:
    return " ".join(" ".join(page.text).split())


def test_fixture_probe_run_draws_both_charts_in_chromium(cli, tmp_path):
    # the detach bug: the encoder gets no gradient, the reconstruction scatters
    build.materialize("gm101-bug", tmp_path)
    _, text = probe_report(cli, tmp_path, "html", "train.py", "--steps", "3")
    page = Page(text)
    figures = {a.get("id") for a in page.all("figure")}
    assert {"gradient-chart", "reconstruction-chart"} <= figures
    body = words(page)
    # 20 parameters in the fixture's GraphMAE: the mask token, the encoder and encoder_to_decoder
    # get none (the detach), the one-head decoder's attn_r a zero one
    assert "20 parameter(s); 17 with no usable gradient" in body, body[:2000]
    assert "48 point(s) of 4 masked node(s)" in body  # 4 nodes x 12 points
    assert "Output of decoder at step" in body and "the nodes are masked ones" in body
    assert "enc_mask_token" in body  # listed among the blocked parameters
    # 3 steps: a correct pipeline's reconstruction looks scattered this early too
    assert ("The run is too short to judge: sampled after 2 training step(s), fewer than 32; "
            "this early a correct pipeline's reconstruction looks scattered too") in body

    browser = chromium()
    page_file, shot = tmp_path / "report.html", tmp_path / "report.png"
    run = load(browser, page_file, tmp_path, "--window-size=1280,2600", f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console(run) == []
    assert colour_pixels(shot, (0x08, 0x51, 0x9C)) > 300  # gradient-norm bars of the decoder
    assert colour_pixels(shot, (0xD6, 0x27, 0x28), 40) > 100  # blocked-gradient markers
    assert colour_pixels(shot, (0xFF, 0x7F, 0x0E), 30) > 300  # reconstructed points
    assert colour_pixels(shot, (0x1F, 0x77, 0xB4), 30) > 300  # target points


NOT_POINTS = """\
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 7))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(32, 7)
    loss = ((model(x) - x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_output_that_is_not_points_is_said_in_the_page(cli, tmp_path):
    (tmp_path / "train.py").write_text(NOT_POINTS)
    _, text = probe_report(cli, tmp_path, "html", "train.py", "--steps", "2")
    page = Page(text)
    assert "reconstruction-chart" not in {a.get("id") for a in page.all("figure")}
    assert "gradient-chart" in {a.get("id") for a in page.all("figure")}
    note = [a for a in page.all("p") if a.get("id") == "reconstruction-unreadable"]
    assert note
    assert ("No reconstruction chart: the output of 2 for input arg0 (7 values per node) is not "
            "laid out as points") in words(page)


CRASH = """\
import torch
from torch import nn

model = nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
loss = model(x).pow(2).mean()
loss.backward()
opt.step()
print("about to fail")
raise RuntimeError("CUDA out of memory (planted)")
"""


def test_crashed_probe_is_recorded_in_sarif_html_and_markdown(cli, tmp_path):
    (tmp_path / "train.py").write_text(CRASH)
    proc, sarif = probe_report(cli, tmp_path, "sarif", "train.py")
    assert proc.returncode == 2
    raw = json.loads(sarif)
    Sarif.model_validate_json(sarif)
    invocation = raw["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = [n for n in invocation["toolExecutionNotifications"]
              if n["message"]["text"].startswith("probe:")]
    assert note["level"] == "error" and note["properties"]["stopped"] == "crash"
    assert "the program crashed with exit code 1" in note["message"]["text"]
    assert "about to fail" in note["message"]["text"]
    assert "CUDA out of memory (planted)" in note["message"]["text"]

    _, html = probe_report(cli, tmp_path, "html", "train.py")
    banner = Page(html)
    assert [a for a in banner.all("div") if a.get("id") == "probe-crash"]
    assert "The probe run did not complete : the program crashed with exit code 1" in words(banner)
    assert "about to fail" in words(banner)

    _, markdown = probe_report(cli, tmp_path, "markdown", "train.py")
    head = markdown.split("\n\n")[1]
    assert head.startswith("> [!CAUTION]\n> **The probe run did not complete**: the program "
                           "crashed with exit code 1"), markdown
    assert "> about to fail" in markdown


def test_a_clean_probe_run_has_no_crash_record(cli, tmp_path):
    (tmp_path / "train.py").write_text(NOT_POINTS)
    _, sarif = probe_report(cli, tmp_path, "sarif", "train.py", "--steps", "1")
    invocation = json.loads(sarif)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True
    assert not [n for n in invocation["toolExecutionNotifications"]
                if n["message"]["text"].startswith("probe:")]


WRAPPED = """\
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29541")
dist.init_process_group("gloo", rank=0, world_size=1)
torch.manual_seed(0)


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(18, 16)
        self.decoder = nn.Linear(16, 18)

    def forward(self, x):
        mask = torch.zeros(x.shape[0], dtype=torch.bool)
        mask[:5] = True
        h = x.clone()
        h[mask] = 0.0
        return ((self.decoder(self.encoder(h)) - x)[mask] ** 2).mean()


model = DistributedDataParallel(AE())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(16, 18))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_reconstruction_is_found_under_a_ddp_wrapper(cli, tmp_path):
    # the model's own submodules sit one level deeper under DistributedDataParallel
    (tmp_path / "train.py").write_text(WRAPPED)
    _, text = probe_report(cli, tmp_path, "json", "train.py", "--steps", "2")
    sample = json.loads(text)["reconstruction"]
    assert sample["module"] == "decoder" and sample["masked"] and sample["masked_count"] == 5
    assert len(sample["target"]) == 8 and sample["node"] == [0, 0, 1, 1, 2, 2, 3, 3]
    # 18 values per node read as two points of 9 (xyz first): xyz of the first point of node 0
    assert len(sample["target"][0]) == 3


MASKED = """\
import torch
from torch import nn

torch.manual_seed(0)


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(3, 16)
        self.decoder = nn.Linear(16, 3)

    def forward(self, x):
        mask = torch.randperm(x.shape[0])[:6]
        h = x.clone()
        h[mask] = 0.0
        return ((self.decoder(torch.relu(self.encoder(h))) - x)[mask] ** 2).mean()


model = AE()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(50):
    loss = model(torch.randn(16, 3))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_reconstruction_sampled_too_early_is_said_so(cli, tmp_path):
    (tmp_path / "train.py").write_text(MASKED)
    _, text = probe_report(cli, tmp_path, "text", "train.py", "--steps", "8")
    # sampled at the last step of the budget (not only at the detailed ones, the first six), so
    # that the `--steps` the note asks for is enough
    assert "reconstruction after 7 step(s): 4 masked node(s)" in text
    assert ("reconstruction: too short to judge: sampled after 7 training step(s), fewer than 32;"
            " this early a correct pipeline's reconstruction looks scattered too; the loss went "
            "from ") in text
    assert "Ask for `--steps 33` or more" in text


def test_a_sample_late_enough_is_judged():
    assert too_short(Evidence(), MIN_STEPS_TO_JUDGE) is None
    assert too_short(Evidence(), MIN_STEPS_TO_JUDGE - 1)["steps"] == MIN_STEPS_TO_JUDGE - 1
