"""``gm-audit diff`` on every fixture variant: the clean ``minimal.py`` (the reference, from a clean
materialisation: a variant that changes ``model.py`` changes what its own ``minimal.py`` runs too)
against the variant's ``train.py``. Bug variants: the first divergence is at the variant's
``stage``, with its rule and line; benign variants and the clean pipeline: no divergence (unless
the benign variant records the stage where it legitimately differs from the reference); a script
against itself: no divergence. Variants are discovered, not listed; ``diff_steps`` in a
``variant.toml`` names the step where a bug that only shows after the first step diverges: those
run with ``--steps auto``, which must get there by itself (the flagged lines run by then)."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

PY = shlex.quote(sys.executable)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    return build.materialize("clean", tmp_path_factory.mktemp("clean"))


def diff(cli, cwd: Path, ref: str, cand: str, steps: str = "1") -> tuple[int, dict]:
    proc = cli("diff", "--format", "json", "--no-cache", "-q", "--steps", str(steps), ref, cand,
               cwd=cwd, timeout=400)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["command"] == "diff"
    assert [s["stage"] for s in data["stages"]] == [
        "init", "input", "mode", "forward", "loss", "grad", "update"]
    assert (proc.returncode == 1) == (data["first_divergence"] is not None)
    return proc.returncode, data


def test_clean_pipeline_agrees(cli, clean):
    code, data = diff(cli, clean, f"{PY} minimal.py", f"{PY} train.py")
    assert data["first_divergence"] is None, data["first_divergence"]
    assert all(s["status"] == "same" for s in data["stages"]), data["stages"]


def test_script_against_itself(cli, clean):
    code, data = diff(cli, clean, f"{PY} train.py", f"{PY} train.py")
    assert code == 0 and data["first_divergence"] is None


def _prepare(variant: str, dest: Path) -> None:
    if variant == "gm601-bug":
        # the warm start's "earlier run": made once, outside the diff (else its 2 pretraining
        # epochs would be the candidate's first training steps)
        subprocess.run([sys.executable, "-c", "from checkpoints import PRETRAINED, "
                        "ensure_pretrained; from config import Config; "
                        "ensure_pretrained(PRETRAINED, Config())"],
                       cwd=dest, check=True, timeout=300, capture_output=True)


@pytest.mark.parametrize("variant", build.variant_names())
def test_diff_names_variant_stage(cli, clean, tmp_path, variant):
    meta = build.load_variant(variant)
    build.materialize(variant, tmp_path)
    _prepare(variant, tmp_path)
    late = int(meta.get("diff_steps", 1))
    code, data = diff(cli, tmp_path, f"{PY} {shlex.quote(str(clean / 'minimal.py'))}",
                      f"{PY} train.py", steps="auto" if late > 1 else "1")
    first = data["first_divergence"]
    stage = meta.get("stage", "none")
    if stage == "none":
        assert first is None, f"{variant}: unexpected divergence {first}"
        return
    assert first is not None, f"{variant}: no divergence, expected stage {stage}"
    assert first["stage"] == stage, f"{variant}: {first}"
    if late > 1:
        assert first["detail"].endswith(f"(step {late})"), f"{variant}: {first}"
    if meta["kind"] != "bug":
        return
    assert first["rule"] == meta["rule"], f"{variant}: {first}"
    places = {(e["file"], e["line"]) for e in meta["expect"] if e["rule"] == meta["rule"]}
    assert (first["path"], first["line"]) in places, f"{variant}: {first} not at {places}"
