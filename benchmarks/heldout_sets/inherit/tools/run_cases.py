"""Run base (twice) and every case under tools/observe.py; results in tools/results/."""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/work/main/.venv/bin/python"
RES = os.path.join(ROOT, "tools", "results")


def run(name, src, tag=""):
    out = os.path.join(RES, f"{name}{tag}.json")
    ckpt = f"/tmp/gmae2_ckpt_{name}{tag}"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    p = subprocess.run([PY, os.path.join(ROOT, "tools", "observe.py"), src, ckpt, out],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(name, "FAILED", p.stderr[-2000:])
    return name + tag


if __name__ == "__main__":
    os.makedirs(RES, exist_ok=True)
    names = sys.argv[1:] or (["base"] + sorted(os.listdir(os.path.join(ROOT, "cases"))))
    jobs = []
    for n in names:
        src = os.path.join(ROOT, "base", "src") if n == "base" else os.path.join(ROOT, "cases", n, "src")
        jobs.append((n, src, "_run1"))
        if n in ("base", "c19"):
            jobs.append((n, src, "_run2"))
    with ThreadPoolExecutor(2) as ex:
        for r in ex.map(lambda j: run(*j), jobs):
            print("done", r, flush=True)
