import json, os, sys
RES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
K = ["final_loss", "recon_cos", "recon_mse", "probe_test_acc", "probe_train_acc", "trainable_params"]
def load(n): return json.load(open(os.path.join(RES, n + ".json")))
base = load("base_run1")
def fmt(m): return " ".join(f"{k}={m.get(k, float('nan')):.4g}" if isinstance(m.get(k), (int, float)) else f"{k}=NA" for k in K)
for f in sorted(os.listdir(RES)):
    r = json.load(open(os.path.join(RES, f)))
    o = r["obs"]; bo = base["obs"]
    diff = {k: v for k, v in o.items() if k not in ("max_rss_mb",) and bo.get(k) != v}
    print(f[:-5], fmt(r["metrics"]), "rss", o["max_rss_mb"])
    print("    obs diff:", json.dumps(diff, default=str)[:600])
