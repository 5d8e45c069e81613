import json, sys
s = json.load(open("tools/results/summary.json"))
def short(v):
    t = json.dumps(v, default=str)
    return t if len(t) < 160 else t[:157] + "..."
for cid, v in s.items():
    if cid == "base":
        print("base", v["metrics"], "run-to-run:", v["run_to_run_metric_diffs"], list(v["run_to_run_obs_diffs"])); continue
    if sys.argv[1:] and cid not in sys.argv[1:]: continue
    print(f"== {cid} {v['slug']} [{v['kind']}] crashed={v['crashed']}", v["error"][-300:] if v["crashed"] else "")
    m = v["metric_diffs_vs_base"]
    print("   metrics:", {k: (d["base"], d["case"]) for k, d in m.items() if k != "val_cos_curve"}, "curve:", m.get("val_cos_curve", {}).get("case"))
    if v["metric_diffs_run1_vs_run2"]: print("   RERUN DIFFERS:", {k: (d["base"], d["case"]) for k, d in v["metric_diffs_run1_vs_run2"].items() if k!="val_cos_curve"})
    for k, d in v["obs_diffs_vs_base"].items():
        print(f"   {k}: {short(d['base'])} -> {short(d['case'])}")
