"""Probe overhead on the clean GraphMAE fixture.

    python benchmarks/probe_bench.py [--steps 40] [--rounds 3]

1. Time per training step, bare versus under `gm-audit probe`, side by side (alternating runs,
   ``--rounds`` pairs): a driver builds the fixture's model and times each step of the fixture's
   loop itself (written to a JSON file, since the probe captures the program's output). Reported: median ms/step after the first step, and
   the ratio (target: at most 1.3x).
2. Total wall time of `gm-audit probe --steps auto -- python train.py` on the fixture.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

DRIVER = """
import json, sys, time
from dataclasses import replace
import torch
from config import Config
from data import make_datasets, make_loader
from model import GraphMAE
from utils import seed_everything

steps, out = int(sys.argv[1]), sys.argv[2]
torch.set_num_threads(1)  # steadier figures on a shared machine
cfg = replace(Config(), epochs=1)
seed_everything(cfg.seed)
train_set, test_set = make_datasets(cfg.num_train, cfg.num_test, cfg.seed, cfg.points_per_entity)
loader = make_loader(train_set, cfg.batch_size, shuffle=True, seed=cfg.seed)
model = GraphMAE.from_config(cfg, in_dim=train_set.feature_dim)
opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
model.train()
times = []
while len(times) < steps:
    for g in loader:
        t = time.perf_counter()
        loss, _ = model(g, g.ndata["feat"])  # the fixture's own step (engine.Trainer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
        with open(out, "w") as fh:
            json.dump(times, fh)
        if len(times) >= steps:
            break
"""


def materialise(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.materialize("clean", dest)
    (dest / "bench_driver.py").write_text(DRIVER, encoding="utf-8")


def per_step(cmd: list[str], cwd: Path, out: Path) -> list[float]:
    subprocess.run(cmd, cwd=cwd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3, help="bare/probed pairs, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        materialise(root)
        gm = [sys.executable, "-m", "auditor", "probe", "--format", "json", "--no-cache",
              "--paths", ".", "--steps", str(args.steps + 5), "--max-steps", str(args.steps + 5),
              "--"]
        # bare and probed runs alternate, so that the load of a shared machine falls on both
        bare, probed, ratios = [], [], []
        for _ in range(args.rounds):
            b_run = per_step([sys.executable, "bench_driver.py", str(args.steps), "bare.json"],
                             root, root / "bare.json")
            p_run = per_step([*gm, sys.executable, "bench_driver.py", str(args.steps),
                              "probe.json"], root, root / "probe.json")
            bare.append(b_run)
            probed.append(p_run)
            ratios.append(statistics.median(p_run[1:]) / statistics.median(b_run[1:]))
        b = statistics.median(t for run in bare for t in run[1:])
        p = statistics.median(t for run in probed for t in run[1:])
        print(f"per step (median after the first, {args.rounds} x {args.steps} steps each): "
              f"bare {1e3 * b:.1f} ms, probe {1e3 * p:.1f} ms, ratio {p / b:.2f}x "
              f"(per round: {', '.join(f'{r:.2f}x' for r in ratios)}; first step: bare "
              f"{1e3 * bare[0][0]:.0f} ms, probe {1e3 * probed[0][0]:.0f} ms)")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "auditor", "probe", "--format", "json",
                               "--no-cache", "--steps", "auto", "--", sys.executable, "train.py"],
                              cwd=root, capture_output=True, text=True)
        wall = time.perf_counter() - start
        run = json.loads(proc.stdout)["run"] if proc.stdout.strip() else {}
        start = time.perf_counter()
        subprocess.run([sys.executable, "train.py", "--epochs", "1"], cwd=root,
                       capture_output=True)
        bare_wall = time.perf_counter() - start
        print(f"gm-audit probe --steps auto: {wall:.1f} s wall, {run.get('steps')} steps, "
              f"stopped: {run.get('stopped')} (bare train.py --epochs 1: {bare_wall:.1f} s)")


if __name__ == "__main__":
    main()
