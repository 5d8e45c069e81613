"""Run base twice and every case twice under tools/observe.py (in the materialised case trees made by
make_cases.py), compare with base, write tools/results/<name>.json, tools/results/summary.json and
cases/cNN/truth.json.

usage: python tools/run_cases.py [--jobs 2] [--only c01 c02] [--truth-only]
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RES = os.path.join(HERE, "results")
SCRATCH = os.environ.get("HETSET_SCRATCH", "/tmp/heteroset")
PY = os.environ.get("HETSET_PY", "/work/main/.venv/bin/python")
sys.path.insert(0, HERE)
from cases import CASES, RUN, RUN_DDP  # noqa: E402
try:
    from effects import EFFECTS  # measured effects, written after reading summary.json
except ImportError:
    EFFECTS = {}

METRIC_KEYS = ["final_loss", "heldout_cos", "heldout_mse", "heldout_cos_by_type", "probe_acc", "steps",
               "trainable_params", "best_epoch", "val_cos_curve"]
BASES = {RUN: "base", RUN_DDP: "base_ddp"}   # which base runs a case is compared with
NOISY_OBS = {"wall_s", "max_rss_mb"}
SHOWN_OBS = ["self_loops_per_node[train]", "train_fwd_module_training", "train_epochs_with_eval_modules",
             "train_fwd_grad_enabled", "train_fwd_autocast", "train_fwd_dtypes", "loss_dtype", "train_grads_none",
             "params_unchanged_by_training", "frozen_params", "model_params_in_optimizer",
             "zero_grad_calls_per_step", "mean_grad_norm_before_clip", "first_loss", "first_loss_terms",
             "loss_targets_equal_clean_features", "live_autograd_nodes_after_fit", "ddp_wrapped_world_size",
             "train_forwards_through_ddp", "ranks_params_identical", "cudnn_flags_at_first_step",
             "torch_load", "load_state_dict", "train_split_hash"]


def observe(case_dir, out, run=RUN):
    env = dict(os.environ, OMP_NUM_THREADS="1", DGLBACKEND="pytorch")
    args = run.split()[2:]          # `python src/train.py ARGS...`
    p = subprocess.run(["nice", "-n", "19", PY, os.path.join(HERE, "observe.py"), case_dir, out] + args, env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0 or not os.path.exists(out):
        with open(out, "w") as fh:
            json.dump({"metrics": None, "observations": {}, "error": p.stderr[-4000:]}, fh)
    return out


def load(name):
    with open(os.path.join(RES, name + ".json")) as fh:
        return json.load(fh)


def metrics_of(r):
    m = r.get("metrics") or {}
    return {k: m.get(k) for k in METRIC_KEYS}


def compare(base, case):
    diffs = {}
    bo, co = base["observations"], case["observations"]
    for k in sorted(set(bo) | set(co)):
        if k in NOISY_OBS:
            continue
        if bo.get(k) != co.get(k):
            diffs[k] = {"base": bo.get(k), "case": co.get(k)}
    if bo.get("max_rss_mb") and co.get("max_rss_mb") and co["max_rss_mb"] > 1.2 * bo["max_rss_mb"]:
        diffs["max_rss_mb"] = {"base": bo["max_rss_mb"], "case": co["max_rss_mb"]}
    mdiff = {}
    bm, cm = metrics_of(base), metrics_of(case)
    for k in METRIC_KEYS:
        if bm[k] != cm[k]:
            mdiff[k] = {"base": bm[k], "case": cm[k]}
    return diffs, mdiff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--truth-only", action="store_true")
    args = ap.parse_args()
    os.makedirs(RES, exist_ok=True)
    cases = [c for c in CASES if not args.only or c["id"] in args.only]

    if not args.truth_only:
        jobs = []
        if not args.only:
            for run, name in BASES.items():
                jobs += [(os.path.join(ROOT, "base"), os.path.join(RES, f"{name}_run{i}.json"), run) for i in (1, 2)]
        for c in cases:
            case_dir = os.path.join(SCRATCH, "cases", c["id"])
            if not os.path.isdir(case_dir):
                subprocess.run([sys.executable, os.path.join(HERE, "make_cases.py"), c["id"]], check=True)
            jobs += [(case_dir, os.path.join(RES, f"{c['id']}_run{i}.json"), c["run"]) for i in (1, 2)]
        with ThreadPoolExecutor(args.jobs) as ex:
            for out in ex.map(lambda j: observe(*j), jobs):
                print("done", os.path.basename(out), flush=True)

    summary = {}
    for run, name in BASES.items():
        b1, b2 = load(f"{name}_run1"), load(f"{name}_run2")
        bd, bm = compare(b1, b2)
        summary[name] = {"run": run, "metrics": metrics_of(b1), "run_to_run_obs_diffs": bd,
                         "run_to_run_metric_diffs": bm}
    for c in CASES:
        bname = BASES[c["run"]]
        base1, base2 = load(f"{bname}_run1"), load(f"{bname}_run2")
        try:
            r1, r2 = load(f"{c['id']}_run1"), load(f"{c['id']}_run2")
        except FileNotFoundError:
            continue
        diffs, mdiff = compare(base1, r1)
        _, rerun_mdiff = compare(r1, r2)
        summary[c["id"]] = {
            "slug": c["slug"], "kind": c["kind"], "base": bname,
            "crashed": r1.get("error") is not None or r1.get("metrics") is None,
            "error": (r1.get("error") or "")[-600:],
            "obs_diffs_vs_base": diffs, "metric_diffs_vs_base": mdiff,
            "metric_diffs_run1_vs_run2": rerun_mdiff,
        }
        spec_path = os.path.join(ROOT, "cases", c["id"], "spec.json")
        with open(spec_path) as fh:
            spec = json.load(fh)
        eff = EFFECTS.get(c["id"], "NOT YET REVIEWED")
        entries = [dict(e, runtime_effect=eff) for e in spec["entries"]]
        truth = {
            "case": c["id"], "id": c["id"], "slug": c["slug"], "kind": c["kind"], "description": c["description"],
            "entries": entries,
            "expected_first_divergence": spec["divergence"],
            "metrics": {"base": metrics_of(base1), "case": metrics_of(r1)},
            "metrics_rerun": {"base": metrics_of(base2), "case": metrics_of(r2)},
            "observed_differences": diffs,
            "runtime_observations": {k: r1["observations"].get(k) for k in SHOWN_OBS},
            "run": c["run"],
        }
        with open(os.path.join(ROOT, "cases", c["id"], "truth.json"), "w") as fh:
            json.dump(truth, fh, indent=2)
    with open(os.path.join(RES, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1, default=str)
    print("written", len(summary) - len(BASES), "cases")


if __name__ == "__main__":
    main()
