"""The validation floor CI holds (benchmarks/validation.py): a figure that falls below the last
one measured, or a count of extra findings that rises, is a regression; anything else is not."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import validation


def test_the_committed_floor_names_only_figures_the_scorer_reports() -> None:
    floors = json.loads(validation.FLOOR.read_text(encoding="utf-8"))
    assert "static" in floors
    sets = {key: floors.pop(key) for key in list(floors) if key.startswith("heldout-")}
    assert {key.removeprefix("heldout-") for key in sets} == {
        p.name for p in validation.HELDOUT.iterdir() if p.is_dir()}
    for floor_set in [floors, *sets.values()]:
        for mode, floor in floor_set.items():
            known = set(validation.HIGHER_IS_BETTER[mode]) | set(validation.LOWER_IS_BETTER[mode])
            assert set(floor) <= known, (mode, set(floor) - known)


def test_a_held_out_set_is_laid_out_case_by_case_with_its_patches_applied(tmp_path: Path) -> None:
    for root in sorted(p for p in validation.HELDOUT.iterdir() if p.is_dir()):
        cases = validation.lay_out(root.name, tmp_path / root.name)
        for case in sorted((root / "cases").iterdir()):
            folder = cases / case.name
            truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
            assert truth["entries"] and (folder / "src").is_dir()
            patches = list(case.rglob("*.patch"))
            assert patches, case  # one change per case
            for patch in patches:
                rel = patch.relative_to(case).with_suffix("")
                assert (folder / rel).read_text(encoding="utf-8") != \
                    (root / "base" / rel).read_text(encoding="utf-8"), (case.name, rel)
            # every truth line lies in the case's own file
            for entry in truth["entries"]:
                lines = (folder / entry["path"]).read_text(encoding="utf-8").splitlines()
                assert all(1 <= line <= len(lines) + 1 for line in entry["lines"]), (case.name, entry)


def test_a_fall_in_found_bugs_or_a_rise_in_extra_findings_is_a_regression() -> None:
    floor = {"bugs_ok": 8, "benign_ok": 25, "extra_findings": 0, "errors": 0}
    same = {"bugs_ok": 8, "bugs": 21, "benign_ok": 25, "benign": 25, "extra_findings": 0, "errors": 0}
    assert validation.regressions("static", same, floor) == []
    better = {**same, "bugs_ok": 12}
    assert validation.regressions("static", better, floor) == []
    assert validation.regressions("static", {**same, "bugs_ok": 7}, floor) == ["bugs_ok 7 < floor 8"]
    assert validation.regressions("static", {**same, "extra_findings": 2}, floor) == [
        "extra_findings 2 > floor 0"]
    assert validation.regressions("diff", {"correct": 29, "cases": 35, "errors": 0},
                                  {"correct": 30}) == ["correct 29 < floor 30"]
