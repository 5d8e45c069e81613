"""Print tools/results/summary.json compactly (metric diffs and observation diffs per case)."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
s = json.load(open(os.path.join(HERE, "results", "summary.json")))
only = set(sys.argv[1:])
for b in ("base", "base_ddp"):
    print(b, json.dumps(s[b]["metrics"]), "run-to-run:", s[b]["run_to_run_metric_diffs"] or "identical")
for k, v in s.items():
    if k in ("base", "base_ddp") or (only and k not in only):
        continue
    print(f"\n=== {k} {v['kind']} {v['slug']} crashed={v['crashed']} {v['error'][-300:] if v['crashed'] else ''}")
    print("  metrics:", json.dumps({m: [d['base'], d['case']] for m, d in v["metric_diffs_vs_base"].items()}))
    if v["metric_diffs_run1_vs_run2"]:
        print("  RERUN DIFFERS:", json.dumps(v["metric_diffs_run1_vs_run2"]))
    for o, d in v["obs_diffs_vs_base"].items():
        print(f"  obs {o}: {json.dumps(d['base'])[:300]} -> {json.dumps(d['case'])[:300]}")
