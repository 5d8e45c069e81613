"""gm-audit on the validation set: realistic CAD GraphMAE pipelines written independently of it,
each with one change whose effect was measured by running it (``../shared/validation``).

Runs the set's own scorer (``score.py``) against this checkout's virtualenv, prints its figures,
and with ``--floor`` fails when a figure is worse than the last one measured
(``validation_floor.json``): a regression floor, raised as the figures rise, never a target.

    python -m benchmarks.validation                       # static, probe and diff (about 50 min)
    python -m benchmarks.validation --mode static --floor # what CI runs (about 2 min)

``GM_AUDIT_VALIDATION`` points at another copy of the set.

``--heldout NAME`` scores a set of ``benchmarks/heldout_sets/`` instead, with the same scorer:
pipelines of other shapes (an event engine with handlers; functional steps passing a training
state), each written by someone who did not see gm-audit's code, each bug's effect measured by
running it. A set keeps its clean pipeline (``base/``) and, per case, ``truth.json`` and the
changed files as patches; it is laid out in full in a temporary folder to be scored.

    python -m benchmarks.validation --mode static --heldout engine
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
VALIDATION = Path(os.environ.get("GM_AUDIT_VALIDATION", REPO.parent / "shared" / "validation"))
FLOOR = Path(__file__).resolve().parent / "validation_floor.json"
HELDOUT = Path(__file__).resolve().parent / "heldout_sets"
MODES = ("static", "probe", "diff")
# per mode: the figures that must not fall, and those that must not rise
HIGHER_IS_BETTER = {"static": ("bugs_ok", "benign_ok"), "probe": ("bugs_ok", "benign_ok"),
                    "diff": ("correct",)}
LOWER_IS_BETTER = {"static": ("extra_findings", "errors"), "probe": ("extra_findings", "errors"),
                   "diff": ("errors",)}


def lay_out(name: str, dest: Path) -> Path:
    """The held-out set ``name`` in full under ``dest``: a folder per case holding the clean
    pipeline with the case's patches applied, and its ``truth.json``. Returns the cases folder."""
    from fixtures.build import apply_patch  # the fixtures' patch format

    root = HELDOUT / name
    if not (root / "cases").is_dir():
        raise SystemExit(f"no held-out set {name!r} in {HELDOUT}")
    for case in sorted((root / "cases").iterdir()):
        folder = dest / "cases" / case.name
        shutil.copytree(root / "base", folder)
        for entry in sorted(p for p in case.rglob("*") if p.is_file()):
            rel = entry.relative_to(case)
            if rel.name.endswith(".patch"):
                target = folder / rel.with_name(rel.name.removesuffix(".patch"))
                target.write_text(apply_patch(target.read_text(encoding="utf-8"),
                                              entry.read_text(encoding="utf-8"), f"{name}/{rel}"),
                                  encoding="utf-8")
            else:
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(entry, folder / rel)
    return dest / "cases"


def score(mode: str, cases: Sequence[str] = (), heldout: str = "") -> dict:
    """The scorer's summary of ``mode`` (its per-case lines go to our stdout as it runs), on the
    validation set or the held-out set ``heldout``."""
    scorer = VALIDATION / "score.py"
    if not scorer.is_file():
        raise SystemExit(f"no validation set at {VALIDATION} (set GM_AUDIT_VALIDATION)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "score.json"
        where = ("--cases-dir", str(lay_out(heldout, Path(tmp)))) if heldout else ()
        argv = [sys.executable, str(scorer), "--project", str(REPO), "--mode", mode,
                "--json", str(out), *where, *(("--case", *cases) if cases else ())]
        proc = subprocess.run(argv, cwd=REPO)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"the validation scorer failed (exit {proc.returncode})")
        return json.loads(out.read_text(encoding="utf-8"))["modes"][mode]["summary"]


def regressions(mode: str, got: dict, floor: dict) -> list[str]:
    """What in ``got`` is worse than ``floor`` (one mode's figures)."""
    worse = [f"{k} {got[k]} < floor {floor[k]}" for k in HIGHER_IS_BETTER[mode]
             if k in floor and got[k] < floor[k]]
    worse += [f"{k} {got[k]} > floor {floor[k]}" for k in LOWER_IS_BETTER[mode]
              if k in floor and got[k] > floor[k]]
    return worse


def headline(mode: str, s: dict) -> str:
    if mode == "diff":
        return f"diff: {s['correct']}/{s['cases']} first-divergence stages right"
    return (f"{mode}: bugs {s['bugs_ok']}/{s['bugs']} found at their line, benign "
            f"{s['benign_ok']}/{s['benign']} left alone, {s['extra_findings']} extra findings")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=(*MODES, "all"), default="all")
    ap.add_argument("--floor", action="store_true", help="fail when a figure is below the floor")
    ap.add_argument("--case", nargs="*", default=(), help="only these cases (no floor check)")
    ap.add_argument("--json", type=Path, help="write the summaries here")
    ap.add_argument("--heldout", default="", help="a set of benchmarks/heldout_sets instead")
    a = ap.parse_args(argv)
    modes = MODES if a.mode == "all" else (a.mode,)
    summaries = {m: score(m, a.case, a.heldout) for m in modes}
    print()
    for m in modes:
        print(headline(m, summaries[m]))
    if a.json:
        a.json.write_text(json.dumps(summaries, indent=1) + "\n", encoding="utf-8")
    if not a.floor or a.case:
        return 0
    floors = json.loads(FLOOR.read_text(encoding="utf-8"))
    floors = floors.get(f"heldout-{a.heldout}", {}) if a.heldout else floors
    failed = {m: regressions(m, summaries[m], floors[m]) for m in modes if m in floors}
    for m, worse in failed.items():
        for w in worse:
            print(f"REGRESSION {m}: {w}")
    if any(failed.values()):
        return 1
    print(f"at or above the floor ({FLOOR.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
