"""Write cases/cNN/truth.json from tools/cases.py, the edit locations and logs/*.json.
Measured-effect strings come from tools/effects.py (written after reading logs)."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402
from effects import EFFECTS, LINES  # noqa: E402

KEYS = ("recon_mse", "recon_cos", "mean_baseline_mse", "final_loss", "probe_acc", "best_epoch",
        "steps", "runtime", "repeat", "repeat_identical")


def pick(m):
    return {k: m[k] for k in KEYS if k in m}


WHERE = json.load(open(os.path.join(HERE, "where.json")))
base = json.load(open(os.path.join(ROOT, "logs", "base.json")))
for c in CASES:
    where = WHERE[c["id"]]
    m = json.load(open(os.path.join(ROOT, "logs", c["id"] + ".json")))
    truth = {
        "case": c["id"], "slug": c["slug"], "kind": c["kind"], "description": c["desc"],
        "entries": [{"rule": c["rule"], "path": where["path"], "lines": LINES.get(c["id"], where["lines"]),
                     "is_bug": c["kind"] == "bug", "runtime_effect": EFFECTS[c["id"]]}],
        "expected_first_divergence": c["div"],
        "metrics": {"base": pick(base), "case": pick(m)},
        "run": "python src/train.py" + (" (twice, same seed)" if c.get("repeat") else ""),
    }
    json.dump(truth, open(os.path.join(ROOT, "cases", c["id"], "truth.json"), "w"), indent=1)
print("ok")
