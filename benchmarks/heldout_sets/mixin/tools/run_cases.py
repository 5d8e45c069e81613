"""Run base (seed 0 twice, seed 1) and every case with seeds 0 and 1 under tools/observe.py, ONE AT A TIME
(nice -n 19, OMP_NUM_THREADS=1), compare each with the base of the same seed, write tools/results/*.json,
tools/results/summary.json and cases/cNN/truth.json.

usage: python tools/run_cases.py [--only c01 c02] [--truth-only]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RES = os.path.join(HERE, "results")
SCRATCH = os.environ.get("MIXSET_SCRATCH", "/tmp/newset/scratch")
PY = os.environ.get("MIXSET_PY", "/work/main/.venv/bin/python")
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402
try:
    from effects import EFFECTS
except ImportError:
    EFFECTS = {}

SEEDS = (0, 1)
METRIC_KEYS = ["final_loss", "heldout_cos", "heldout_cos_live", "probe_acc", "val_cos_curve", "steps",
               "trainable_params"]
NOISY_OBS = {"wall_s", "mean_grad_norm_before_clip"}


def observe(case_dir, out, seed):
    env = dict(os.environ, OMP_NUM_THREADS="1", DGLBACKEND="pytorch")
    p = subprocess.run(["nice", "-n", "19", PY, os.path.join(HERE, "observe.py"), case_dir, out,
                        "--train.seed", str(seed)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not os.path.exists(out):
        with open(out, "w") as fh:
            json.dump({"metrics": None, "observations": {}, "error": p.stderr[-4000:]}, fh)


def load(name):
    with open(os.path.join(RES, name + ".json")) as fh:
        return json.load(fh)


def metrics_of(r):
    m = r.get("metrics") or {}
    return {k: m.get(k) for k in METRIC_KEYS}


def compare(base, case):
    bo, co = base["observations"], case["observations"]
    diffs = {k: {"base": bo.get(k), "case": co.get(k)} for k in sorted(set(bo) | set(co))
             if k not in NOISY_OBS and bo.get(k) != co.get(k)}
    bm, cm = metrics_of(base), metrics_of(case)
    mdiff = {k: {"base": bm[k], "case": cm[k]} for k in METRIC_KEYS if bm[k] != cm[k]}
    return diffs, mdiff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--truth-only", action="store_true")
    ap.add_argument("--skip-base", action="store_true")
    args = ap.parse_args()
    os.makedirs(RES, exist_ok=True)
    cases = [c for c in CASES if not args.only or c["id"] in args.only]
    if not args.truth_only:
        jobs = []
        if not args.skip_base:
            jobs += [(os.path.join(ROOT, "base"), "base_s0", 0), (os.path.join(ROOT, "base"), "base_s0_rerun", 0),
                     (os.path.join(ROOT, "base"), "base_s1", 1)]
        for c in cases:
            case_dir = os.path.join(SCRATCH, "cases", c["id"])
            if not os.path.isdir(case_dir):
                subprocess.run([sys.executable, os.path.join(HERE, "make_cases.py"), c["id"]], check=True)
            jobs += [(case_dir, f"{c['id']}_s{s}", s) for s in SEEDS]
        for d, name, seed in jobs:            # one at a time
            observe(d, os.path.join(RES, name + ".json"), seed)
            r = load(name)
            print(name, json.dumps(r["metrics"]) if r["metrics"] else "ERROR " + r["error"][-300:], flush=True)

    summary = {}
    b = {s: load(f"base_s{s}") for s in SEEDS}
    _, bm = compare(b[0], load("base_s0_rerun"))
    summary["base"] = {"metrics": {f"seed{s}": metrics_of(b[s]) for s in SEEDS}, "rerun_metric_diffs": bm}
    for c in CASES:
        try:
            r = {s: load(f"{c['id']}_s{s}") for s in SEEDS}
        except FileNotFoundError:
            continue
        diffs, mdiff = compare(b[0], r[0])
        diffs1, mdiff1 = compare(b[1], r[1])
        summary[c["id"]] = {"slug": c["slug"], "kind": c["kind"],
                            "crashed": any(r[s].get("metrics") is None for s in SEEDS),
                            "error": (r[0].get("error") or r[1].get("error") or "")[-600:],
                            "metric_diffs_seed0": mdiff, "metric_diffs_seed1": mdiff1,
                            "obs_diffs_seed0": diffs, "obs_diffs_seed1_keys": sorted(diffs1)}
        with open(os.path.join(ROOT, "cases", c["id"], "spec.json")) as fh:
            spec = json.load(fh)
        eff = EFFECTS.get(c["id"], "NOT YET REVIEWED")
        truth = {
            "case": c["id"], "id": c["id"], "slug": c["slug"], "kind": c["kind"], "description": c["description"],
            "entries": [dict(e, runtime_effect=eff) for e in spec["entries"]],
            "expected_first_divergence": spec["divergence"],
            "metrics": {"base": metrics_of(b[0]), "case": metrics_of(r[0])},
            "metrics_seed1": {"base": metrics_of(b[1]), "case": metrics_of(r[1])},
            "observed_differences": diffs,
            "runtime_observations": r[0]["observations"],
            "run": c["run"], "seeds": list(SEEDS),
        }
        with open(os.path.join(ROOT, "cases", c["id"], "truth.json"), "w") as fh:
            json.dump(truth, fh, indent=2)
    with open(os.path.join(RES, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1, default=str)
    print("written", len(summary) - 1, "cases")


if __name__ == "__main__":
    main()
