"""Every fixture variant under the probe: bug variants' expected findings are `confirmed`,
benign look-alikes have no confirmed finding of their rule (variants are discovered, not listed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


@pytest.mark.parametrize("variant", build.variant_names())
def test_probe_decides_variant(cli, tmp_path, variant):
    meta = build.load_variant(variant)
    build.materialize(variant, tmp_path)
    proc = cli("probe", "--format", "json", "--no-cache", "--steps", "auto", "--",
               sys.executable, "train.py", cwd=tmp_path, timeout=400)
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["run"]["stopped"] in ("budget", "exit"), data["run"]
    findings = data["findings"]
    if meta["kind"] == "bug":
        for e in meta["expect"]:
            if e["rule"] != meta["rule"]:
                continue
            hit = [f for f in findings if f["rule"] == e["rule"] and f["path"] == e["file"]
                   and f["line"] == e["line"]]
            assert hit, f"{variant}: no {e['rule']} at {e['file']}:{e['line']}: {findings}"
            assert hit[0]["status"] == "confirmed", hit[0]
    else:
        bad = [f for f in findings if f["rule"] == meta["rule"] and f["status"] == "confirmed"]
        assert not bad, f"{variant}: benign variant confirmed: {bad}"
