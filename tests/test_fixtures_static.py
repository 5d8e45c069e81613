"""`gm-audit check` on every fixture: the clean pipeline is clean, each bug variant is reported at
its recorded line, each benign look-alike draws no error (variants are discovered, not listed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


def check(cli, root: Path) -> list[dict]:
    proc = cli("check", "--format", "json", "--no-cache", ".", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["errors"] == []
    return data["findings"]


def test_clean_pipeline_has_no_findings(cli, tmp_path):
    build.materialize("clean", tmp_path)
    assert check(cli, tmp_path) == []


@pytest.mark.parametrize("variant", build.variant_names())
def test_variant_static_findings(cli, tmp_path, variant):
    meta = build.load_variant(variant)
    build.materialize(variant, tmp_path)
    findings = check(cli, tmp_path)
    if meta["kind"] == "bug":
        for e in meta["expect"]:
            hits = [f for f in findings if f["rule"] == e["rule"] and f["path"] == e["file"]
                    and f["line"] == e["line"]]
            assert hits, f"{variant}: expected {e['rule']} at {e['file']}:{e['line']}, got {findings}"
            if e["column"] is not None:
                assert any(f["column"] == e["column"] for f in hits), hits
    allowed = {meta["rule"], *meta["tolerate"]} if meta["kind"] == "bug" else set(meta["tolerate"])
    stray = [f for f in findings if f["severity"] == "error" and f["rule"] not in allowed]
    assert not stray, f"{variant}: unexpected errors {stray}"


def test_variant_manifests_are_valid_and_readme_table_is_current():
    problems = {name: build.check_variant(name) for name in build.variant_names()}
    assert not any(problems.values()), problems
    readme = (REPO / "fixtures" / "README.md").read_text(encoding="utf-8")
    table = readme.split(build.TABLE_START, 1)[1].split(build.TABLE_END, 1)[0]
    assert table.strip() == build.variant_table().strip(), "run: python fixtures/build.py --table"


def test_a_stale_patch_fails_loudly_instead_of_reverting_the_clean_file():
    clean = "a = 1\nb = 2\nc = 3\n"
    patch = "--- pipeline/x.py\n+++ v/x.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"
    assert build.apply_patch(clean, patch) == "a = 1\nb = 20\nc = 3\n"
    with pytest.raises(ValueError, match="does not apply at line 2"):
        build.apply_patch(clean.replace("b = 2", "b = 5"), patch, "v/x.py.patch")
