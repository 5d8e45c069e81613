"""Probe overhead on the clean GraphMAE fixture, the validation set's clean pipeline and a real
corpus pipeline run offline.

    python benchmarks/probe_bench.py [--steps 40] [--rounds 3] [--only fixture|validation|corpus]

1. Time per training step, bare versus under `gm-audit probe`, side by side (``--rounds``
   bare/probed pairs, alternating, so that the load of a shared machine falls on both):
   - fixture: a driver builds the clean fixture's model and times each step of its loop;
   - validation: the validation set's clean pipeline (``graphmae-cad/base``,
     ``src/train.py --steps N``; ``GM_AUDIT_VALIDATION`` as for ``benchmarks/validation.py``),
   - corpus: GraphMAE2's ``main_full_batch.py`` (cora stand-in, as the runtime score runs it:
     ``benchmarks/ecosystem/runtime/pipelines.py``),
   both timed between consecutive steps of their first optimizer (a global optimizer step hook:
   the same in both runs).
   Wall and CPU times (``time.process_time``: less sensitive to the load of a shared machine)
   go to a JSON file (the probe captures the program's output). Reported for each: median
   ms/step after the first step, the ratio (target: at most 1.2x); and the 1-minute load average.
2. Total wall time of `gm-audit probe --steps auto` on each, against the bare run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from auditor.processes import gm_audit_command  # noqa: E402
from benchmarks.ecosystem.corpus import repo_path  # noqa: E402
from benchmarks.ecosystem.runtime.pipelines import PIPELINES  # noqa: E402
from benchmarks.validation import VALIDATION  # noqa: E402

CORPUS_PIPELINE = "graphmae2-full-batch"
# one thread for the model's kernels in both runs: steadier figures on a shared machine
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

FIXTURE_DRIVER = """
import json, sys, time
from dataclasses import replace
import torch
from config import Config
from data import make_datasets, make_loader
from model import GraphMAE
from utils import seed_everything

out, steps = sys.argv[1], int(sys.argv[2])
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
        t, c = time.perf_counter(), time.process_time()
        loss, _ = model(g, g.ndata["feat"])  # the fixture's own step (engine.Trainer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append([time.perf_counter() - t, time.process_time() - c])
        with open(out, "w") as fh:
            json.dump(times, fh)
        if len(times) >= steps:
            break
"""

# runs a pipeline's offline wrapper; times the steps of the first optimizer that steps
CORPUS_DRIVER = """
import json, os, runpy, sys, time
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

out, wrapper = sys.argv[1], sys.argv[2]
sys.argv = [wrapper, *sys.argv[3:]]
sys.path.insert(0, os.path.dirname(os.path.abspath(wrapper)))  # as `python wrapper` has it
marks, first = [], []

def timed(optimizer, args, kwargs):
    if not first:
        first.append(id(optimizer))
    if id(optimizer) == first[0]:
        marks.append((time.perf_counter(), time.process_time()))
        with open(out, "w") as fh:
            json.dump([[b[0] - a[0], b[1] - a[1]] for a, b in zip(marks, marks[1:])], fh)

register_optimizer_step_post_hook(timed)
runpy.run_path(wrapper, run_name="__main__")
"""


def materialise_fixture(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.materialize("clean", dest)
    (dest / "bench_driver.py").write_text(FIXTURE_DRIVER, encoding="utf-8")


def materialise_corpus(dest: Path) -> None:
    shutil.copytree(repo_path(PIPELINES[CORPUS_PIPELINE].repo), dest)
    (dest / "bench_driver.py").write_text(CORPUS_DRIVER, encoding="utf-8")


def materialise_validation(dest: Path) -> bool:
    base = VALIDATION / "graphmae-cad" / "base"
    if not base.is_dir():
        print(f"validation: no validation set at {VALIDATION} (set GM_AUDIT_VALIDATION)")
        return False
    shutil.copytree(base, dest)
    (dest / "bench_driver.py").write_text(CORPUS_DRIVER, encoding="utf-8")
    return True


def gm_audit(*options: str) -> list[str]:
    return [*gm_audit_command(), "probe", "--format", "json", "--no-cache",
            "--exit-zero", *options, "--"]


def per_step(cmd: list[str], cwd: Path, out: Path) -> list[float]:
    out.unlink(missing_ok=True)
    subprocess.run(cmd, cwd=cwd, check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=ENV)
    return json.loads(out.read_text()) if out.exists() else []


def side_by_side(name: str, root: Path, driver: list[str], rounds: int, budget: int) -> None:
    """Bare and probed runs of ``driver`` (its first argument: the JSON file of step times)
    alternating ``rounds`` times; medians after the first step."""
    probed_cmd = gm_audit("--steps", str(budget), "--max-steps", str(budget))
    bare, probed, loads = [], [], []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        b_run = per_step([sys.executable, "bench_driver.py", "bare.json", *driver], root,
                         root / "bare.json")
        p_run = per_step([*probed_cmd, sys.executable, "bench_driver.py", "probe.json", *driver],
                         root, root / "probe.json")
        if len(b_run) < 2 or len(p_run) < 2:
            print(f"{name}: a run recorded fewer than 2 steps (bare {len(b_run)}, probed "
                  f"{len(p_run)})")
            return
        bare.append(b_run)
        probed.append(p_run)
    for k, clock in enumerate(("wall", "CPU")):
        ratios = [statistics.median(p[k] for p in p_run[1:]) /
                  statistics.median(b[k] for b in b_run[1:]) for b_run, p_run in zip(bare, probed)]
        b = statistics.median(t[k] for run in bare for t in run[1:])
        p = statistics.median(t[k] for run in probed for t in run[1:])
        print(f"{name}: {clock} time per step (median after the first, {rounds} x {len(bare[0])} "
              f"steps): bare {1e3 * b:.1f} ms, probe {1e3 * p:.1f} ms, ratio {p / b:.2f}x (per "
              f"round: {', '.join(f'{r:.2f}x' for r in ratios)}; first step: bare "
              f"{1e3 * bare[0][0][k]:.0f} ms, probe {1e3 * probed[0][0][k]:.0f} ms)", flush=True)
    print(f"{name}: load average at each round: {', '.join(f'{x:.1f}' for x in loads)}")


def auto_wall(name: str, root: Path, command: list[str], bare: list[str], max_steps: int) -> None:
    """`gm-audit probe --steps auto` on ``command``, against ``bare`` (the whole bare run)."""
    start = time.perf_counter()
    proc = subprocess.run([*gm_audit("--steps", "auto", "--max-steps", str(max_steps)), *command],
                          cwd=root, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - start
    run = json.loads(proc.stdout)["run"] if proc.stdout.strip() else {}
    start = time.perf_counter()
    subprocess.run(bare, cwd=root, capture_output=True, env=ENV)
    bare_wall = time.perf_counter() - start
    print(f"{name}: gm-audit probe --steps auto: {wall:.1f} s wall, {run.get('steps')} steps, "
          f"stopped: {run.get('stopped')} (bare run: {bare_wall:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per run (fixture, validation base)")
    parser.add_argument("--rounds", type=int, default=3, help="bare/probed pairs, alternating")
    parser.add_argument("--only", choices=("fixture", "validation", "corpus"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "fixture"):
            root = Path(tmp) / "fixture"
            root.mkdir()
            materialise_fixture(root)
            side_by_side("fixture", root, [str(args.steps)], args.rounds, args.steps + 5)
            auto_wall("fixture", root, [sys.executable, "train.py"],
                      [sys.executable, "train.py", "--epochs", "1"], 20)
        root = Path(tmp) / "validation"
        if args.only in (None, "validation") and materialise_validation(root):
            train = [sys.executable, "src/train.py"]
            side_by_side("validation base", root, ["src/train.py", "--steps", str(args.steps)],
                         args.rounds, args.steps + 5)
            auto_wall("validation base", root, train, [*train, "--steps", "20"], 20)
        if args.only in (None, "corpus"):
            pipeline = PIPELINES[CORPUS_PIPELINE]
            root = Path(tmp) / "corpus"
            materialise_corpus(root)
            command = pipeline.command()
            side_by_side(f"corpus {pipeline.name}", root, command[1:], args.rounds,
                         pipeline.max_steps + 5)
            auto_wall(f"corpus {pipeline.name}", root, command, command, pipeline.max_steps)


if __name__ == "__main__":
    main()
