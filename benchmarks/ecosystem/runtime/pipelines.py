"""The real corpus pipelines the runtime score runs: how to launch each offline, and its loss.

A clean run is the unchanged corpus copy; ``run`` launches its wrapper from the copy's root (the
folder the probe's static pass covers, so findings' paths are the corpus's own).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from auditor.processes import gm_audit_command
from benchmarks.ecosystem.runtime.offline import LINES_ENV

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Pipeline:
    name: str
    repo: str  # corpus folder
    wrapper: str  # file in this folder
    argv: tuple[str, ...]  # the script's own flags: few epochs, small model, CPU
    loss: str  # regex whose group 1 is one training loss, in output order
    # the probe's step budget: every optimiser step of the short run, so a mutant in a later
    # loop (GraphMAE2's linear probe after pre-training) runs before the probe stops the script
    max_steps: int

    def command(self) -> list[str]:
        return [sys.executable, str(HERE / self.wrapper), *self.argv]

    def losses(self, output: str) -> list[float]:
        values = [float(v) for v in re.findall(self.loss, output.replace("\r", "\n"))]
        # a progress bar redraws its last description: drop repeats that are redraws, not steps
        return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


PIPELINES = {
    p.name: p for p in [
        Pipeline("graphmae2-full-batch", "THUDM+GraphMAE2", "graphmae2.py",
                 ("--dataset", "cora", "--device", "-1", "--seeds", "0", "--max_epoch", "20",
                  "--max_epoch_f", "10", "--num_hidden", "32", "--num_heads", "2",
                  "--lr", "0.005", "--mask_rate", "0.5"),
                 r"# Epoch \d+: train_loss: ([0-9.]+)", max_steps=32),
        # the same script with its own --norm batchnorm: BatchNorm statistics an extra forward
        # can move (GM202; the default configuration has no normalisation layers)
        Pipeline("graphmae2-full-batch-bn", "THUDM+GraphMAE2", "graphmae2.py",
                 ("--dataset", "cora", "--device", "-1", "--seeds", "0", "--max_epoch", "20",
                  "--max_epoch_f", "10", "--num_hidden", "32", "--num_heads", "2",
                  "--lr", "0.005", "--mask_rate", "0.5", "--norm", "batchnorm"),
                 r"# Epoch \d+: train_loss: ([0-9.]+)", max_steps=32),
        # --filename: the script saves its results there at the end (into the copy), so a
        # checkpoint reload after that save runs (GM602)
        Pipeline("lifesci-ogbg-ppa", "awslabs+dgl-lifesci", "lifesci_ogbg.py",
                 ("--epochs", "4", "--n_layers", "2", "--hidden_feats", "64",
                  "--batch_size", "16", "--filename", "results.pt"),
                 r"train_loss: ([0-9.]+)", max_steps=26),
    ]
}


@dataclass
class CleanRun:
    exit_code: int
    losses: list[float]
    lines: dict[str, set[int]]  # corpus file (relative to the copy) -> lines it executed
    output: str

    @property
    def trains(self) -> bool:
        """The loss fell: the mean of the last quarter of steps below that of the first."""
        k = max(1, len(self.losses) // 4)
        return self.exit_code == 0 and len(self.losses) >= 2 and (
            sum(self.losses[-k:]) / k < sum(self.losses[:k]) / k)


def run(pipeline: Pipeline, root: Path, timeout: float = 600) -> CleanRun:
    """Run ``pipeline`` bare in ``root`` (a corpus copy): exit code, losses, lines it ran."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "lines.json"
        proc = subprocess.run(pipeline.command(), cwd=root, capture_output=True, text=True,
                              timeout=timeout,
                              env={**os.environ, LINES_ENV: str(record)})
        ran = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
    output = proc.stdout + proc.stderr
    return CleanRun(proc.returncode, pipeline.losses(output),
                    {k: set(v) for k, v in ran.items()}, output)


def probe(pipeline: Pipeline, root: Path, timeout: float, max_steps: Optional[int] = None) -> dict:
    """``gm-audit probe --steps N`` on the pipeline's command in ``root``, N its whole short run:
    the score asks what the run can show, and ``--steps auto`` would stop once the static
    findings' lines ran, before a bug the static pass missed (in the linear probe after
    pre-training, say) had run; the JSON report."""
    max_steps = max_steps or pipeline.max_steps
    proc = subprocess.run(
        [*gm_audit_command(), "probe", "--format", "json", "--no-cache", "--exit-zero",
         "--steps", str(max_steps), "--timeout", str(timeout), "--",
         *pipeline.command()],
        cwd=root, capture_output=True, text=True, timeout=timeout + 300)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"findings": [], "error": f"probe exit {proc.returncode}: {proc.stderr[-1500:]}"}
