"""Materialise every case, run tools/probe.py on it, collect tools/results.json.

    python tools/run_all.py [CASE ...]     (default: base + all cases; merges into results.json)
"""
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES  # noqa: E402
from make_cases import BASE, materialize  # noqa: E402

PY = "/work/main/.venv/bin/python"
WORK = Path("/tmp/lightning_heldout")


def run_probe(root, tag):
    out = WORK / f"{tag}.json"
    t0 = time.time()
    r = subprocess.run([PY, str(HERE / "probe.py"), str(root), str(out)], capture_output=True,
                       text=True, timeout=300)
    wall = round(time.time() - t0, 1)
    if not out.exists():
        return {"metrics": None, "probe": None, "stderr": r.stderr[-3000:], "wall_s": wall}
    res = json.loads(out.read_text())
    res["wall_s"] = wall
    if res["metrics"] is None:
        res["stderr"] = r.stderr[-3000:]
    return res


def main():
    want = sys.argv[1:] or ["base"] + [c["case"] for c in CASES]
    WORK.mkdir(exist_ok=True)
    path = HERE / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for cid in want:
        if cid == "base":
            root, repeat = BASE, True
        else:
            case = next(c for c in CASES if c["case"] == cid)
            root, repeat = WORK / cid, case.get("repeat", False)
            materialize(case, root)
        runs = [run_probe(root, f"{cid}_run{i}") for i in range(2 if repeat else 1)]
        results[cid] = {"runs": runs}
        print(cid, [r["metrics"] for r in runs], [r["wall_s"] for r in runs], flush=True)
        path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
