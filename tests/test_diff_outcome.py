"""``gm-audit diff --outcome``: the figures and the verdict from reconstructions made up here
(what each figure measures, and that the tolerance follows the spread across masked entities),
then the real command on the bundled fixture: the detach bug (gm101-bug) against the clean
pipeline reconstructs worse, with its cause; two clean runs show no difference in outcome."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
import torch

from auditor.diff.outcome import compare_outcomes, run_outcome, self_difference
from test_diff_fixtures import build
from test_reports_html import Page, chromium, colour_pixels, console, load

PY = shlex.quote(sys.executable)
STEPS = "16"  # gm101-bug's coordinate error is 1.44 against 1.05 by then, tolerance 0.14


def points(entities: int, per_entity: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of ``per_entity`` points of 9 values: xyz, two unit directions."""
    xyz = torch.randn(entities, per_entity, 3, generator=gen)
    dirs = torch.nn.functional.normalize(torch.randn(entities, per_entity, 6, generator=gen)
                                         .reshape(entities, per_entity, 2, 3), dim=-1)
    return torch.cat([xyz, dirs.reshape(entities, per_entity, 6)], -1).reshape(entities, -1)


def outcome_of(target: torch.Tensor, noise: float, gen: torch.Generator) -> dict:
    predicted = target + noise * torch.randn(target.shape, generator=gen)
    return run_outcome([{"step": 1, "masked": True, "target": target, "predicted": predicted}])


def test_figures_of_an_exact_reconstruction():
    gen = torch.Generator().manual_seed(0)
    target = points(10, 4, gen)
    out = outcome_of(target, 0.0, gen)
    figures = {f["key"]: f for f in out["figures"]}
    assert set(figures) == {"coord_error", "dir_cos_3", "dir_cos_6"}
    assert figures["coord_error"]["mean"] == 0 and figures["coord_error"]["count"] == 10
    assert figures["dir_cos_3"]["mean"] == pytest.approx(1.0)
    assert out["spread"]["predicted"] == pytest.approx(out["spread"]["target"])
    assert out["layout"] == {"values_per_point": 9, "points_per_entity": 4}
    # xyz points only: no direction figure; rows that are not points: said, not guessed
    assert [f["key"] for f in outcome_of(target[:, :3], 0.1, gen)["figures"]] == ["coord_error"]
    assert "unreadable" in outcome_of(torch.zeros(3, 7), 0.1, gen)


def test_tolerance_follows_the_spread_across_masked_entities():
    gen = torch.Generator().manual_seed(1)
    ref = outcome_of(points(150, 4, gen), 0.5, gen)
    # another draw of masked entities, reconstructed exactly as well: no difference
    same = outcome_of(points(150, 4, gen), 0.5, gen)
    result = compare_outcomes(ref, same)
    assert result["verdict"] == "same", result
    row = result["rows"][0]
    assert row["change"] != 0 and abs(row["change"]) < row["tolerance"]
    assert row["tolerance"] == pytest.approx(3 * (row["reference_se"] ** 2
                                                  + row["candidate_se"] ** 2) ** 0.5)
    worse = compare_outcomes(ref, outcome_of(points(150, 4, gen), 0.8, gen))
    assert worse["verdict"] == "worse" and worse["rows"][0]["status"] == "worse"
    better = compare_outcomes(outcome_of(points(150, 4, gen), 0.8, gen), ref)
    assert better["verdict"] == "better"
    # NaN reconstructions: left out of the figures, counted, worse with no tolerance
    target = points(150, 4, gen)
    broken = target + 0.5 * torch.randn(target.shape, generator=gen)
    broken[:3] = float("nan")
    nan = run_outcome([{"step": 1, "masked": True, "target": target, "predicted": broken}])
    assert nan["nonfinite"] == 3 and nan["entities"] == 147
    assert compare_outcomes(ref, nan)["rows"][-1]["status"] == "worse"
    # a run-to-run difference measured by calibration widens the tolerance
    noise = self_difference(ref, outcome_of(points(150, 4, gen), 3.0, gen))
    assert set(noise) == {"coord_error", "dir_cos_3", "dir_cos_6"}
    calibrated = compare_outcomes(ref, outcome_of(points(150, 4, gen), 0.8, gen), noise)
    assert calibrated["verdict"] == "same"


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outcome")
    return {name: build.materialize(name, root / name) for name in ("clean", "gm101-bug")}


def test_detach_bug_reconstructs_worse_with_its_cause(cli, pipelines, tmp_path):
    report = tmp_path / "outcome.html"
    proc = cli("diff", "--outcome", "--steps", STEPS, "--no-cache", "-o", str(report),
               f"{PY} {pipelines['clean'] / 'minimal.py'}", f"{PY} train.py",
               cwd=pipelines["gm101-bug"], timeout=400)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "outcome: verdict: worse — the candidate reconstructs its masked entities worse" in out
    assert f"({STEPS} step(s) trained" in out
    assert "coordinate error (mean point distance)" in out
    assert "outcome: first divergence at stage grad" in out and "[GM101] at layers.py:14" in out
    assert "outcome: cause: gradients cut at layers.py:14" in out
    assert "diff --outcome: reference" in proc.stderr  # progress
    assert f"outcome report written to {report}" in proc.stderr
    page = Page(report.read_text(encoding="utf-8"))
    ids = {a.get("id") for a in page.all("p")} | {a.get("id") for a in page.all("figure")}
    assert {"outcome-verdict", "outcome-chart", "first-divergence"} <= ids
    words = " ".join(" ".join(page.text).split())
    assert "Verdict: worse" in words and "The runs first diverge at layers.py:14 (GM101)" in words

    shot = tmp_path / "outcome.png"
    run = load(chromium(), report, tmp_path, "--window-size=1280,2000", f"--screenshot={shot}")
    assert run.returncode == 0 and console(run) == [], run.stderr[-2000:]
    assert colour_pixels(shot, (0xD6, 0x27, 0x28), 40) > 300  # the candidate's error histogram
    assert colour_pixels(shot, (0xFF, 0x7F, 0x0E), 30) > 300  # reconstructed points


def test_two_clean_runs_show_no_difference(cli, pipelines):
    clean = pipelines["clean"]
    proc = cli("diff", "--outcome", "--steps", STEPS, "--no-cache", f"{PY} minimal.py",
               f"{PY} train.py", cwd=clean, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outcome: verdict: no difference in outcome" in proc.stdout
    assert "No divergence in the first 2 step(s)" in proc.stdout
    default = clean / "gm-audit-outcome.html"
    assert f"outcome report written to {default}" in proc.stderr and default.is_file()


def test_steps_must_be_a_number(cli, tmp_path):
    # a command that cannot run exits 2 before --outcome reads anything: the diff's own path
    # (test_diff.py::test_crash_is_a_clear_error)
    proc = cli("diff", "--outcome", "--steps", "auto", "a", "b", cwd=tmp_path)
    assert proc.returncode == 2 and "--steps must be a positive number" in proc.stderr
    assert "Traceback" not in proc.stderr
