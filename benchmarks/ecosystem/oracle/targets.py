"""The pipelines the live score runs, and how: where each one's clean source comes from, the
command that trains it for a few steps from the root of a copy, and its entry script."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchmarks.ecosystem import corpus
from benchmarks.ecosystem.runtime.pipelines import PIPELINES
from benchmarks.ecosystem.static_score import source_root

PIPELINES_DIR = corpus.REPO / "benchmarks" / "pipelines"


@dataclass(frozen=True)
class Target:
    name: str
    repo: str  # the label mutants carry
    source: Callable[[Path], Path]  # scratch folder -> the clean source tree
    command: Callable[[int], list[str]]  # optimizer steps -> the command, run from a copy's root
    entry: str  # the script the command runs, relative to the root
    ready: Callable[[], bool] = lambda: True

    def __str__(self) -> str:
        return self.name


def _corpus(name: str, entry: str) -> Target:
    pipeline = PIPELINES[name]
    return Target(name, pipeline.repo, lambda _: corpus.repo_path(pipeline.repo),
                  lambda steps: pipeline.command(), entry,
                  lambda: corpus.repo_path(pipeline.repo).is_dir())


def _bundled(name: str, entry: str) -> Target:
    """A pipeline of ``benchmarks/pipelines/`` taking ``--max-steps N --seed S``; ready once its
    README is there (it is being written while this runs)."""
    folder = PIPELINES_DIR / name
    return Target(name, name, lambda _: folder,
                  lambda steps: [sys.executable, entry, "--max-steps", str(steps), "--seed", "0"],
                  entry, lambda: (folder / "README.md").exists() and (folder / entry).exists())


TARGETS = {t.name: t for t in [
    Target("fixture", corpus.FIXTURE, lambda scratch: source_root(corpus.FIXTURE, scratch),
           lambda steps: [sys.executable, "train.py", "--epochs", "1"], "train.py"),
    _corpus("graphmae2-full-batch", "main_full_batch.py"),
    _corpus("lifesci-ogbg-ppa", "examples/property_prediction/ogbg_ppa/main.py"),
    _bundled("lightning_cad", "train.py"),
    _bundled("registry_cad", "main.py"),
]}
