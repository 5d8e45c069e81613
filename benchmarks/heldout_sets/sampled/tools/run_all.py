"""Run base + every case (one at a time) under tools/observe.py and write
cases/cNN/truth.json.  python tools/run_all.py [cNN ...]"""
import json, os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402
PY = sys.executable
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
LOGS = os.path.join(ROOT, "logs")
os.makedirs(LOGS, exist_ok=True)


def observe(src, name, repeat=1):
    out = os.path.join(LOGS, name + ".json")
    with open(os.path.join(LOGS, name + ".log"), "w") as log:
        subprocess.run([PY, os.path.join(HERE, "observe.py"), src, "--out", out, "--repeat", str(repeat)],
                       env=ENV, stdout=log, stderr=subprocess.STDOUT, check=True)
    return json.load(open(out))


only = set(sys.argv[1:])
base_path = os.path.join(LOGS, "base.json")
if not os.path.exists(base_path) or "base" in only:
    observe(os.path.join(ROOT, "base", "src"), "base", repeat=2)
base = json.load(open(base_path))
for c in CASES:
    if only and c["id"] not in only:
        continue
    m = observe(os.path.join(ROOT, "cases", c["id"], "src"), c["id"], c.get("repeat", 1))
    print(c["id"], {k: m[k] for k in ("recon_cos", "recon_mse", "final_loss", "probe_acc")}, flush=True)
