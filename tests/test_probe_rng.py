"""Draws the probe sees at their call (GM603): DGL's own generator, whose state cannot be read, and
numpy generators built from OS entropy. Each case a small program of its own, run by
`gm-audit probe`."""

from __future__ import annotations

import sys

import pytest

from tests.test_probe import probe, write
from tests.test_probe_causes import at, errors, line_of

PY = sys.executable
pytest.importorskip("torch")
pytest.importorskip("dgl")

PROGRAM = """
import dgl
import numpy as np
import torch

torch.manual_seed(0)
{seed}
graph = dgl.graph((torch.arange(12).repeat(3), torch.arange(12).roll(1).repeat(3)))
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(12, 4)
for step in range(4):
    {draw}
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def run(cli, tmp_path, draw: str, seed: str = "") -> tuple[str, dict]:
    text = PROGRAM.format(seed=seed, draw=draw)
    write(tmp_path, {"train.py": text})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    return text, data


@pytest.mark.parametrize("draw", [
    "drawn = dgl.rand_graph(8, 16)",  # dgl.random.choice underneath
    "drawn = dgl.sampling.sample_neighbors(graph, torch.arange(4), 2)",
    # a call the static pass cannot name: the probe alone reports it
    "drawn = getattr(dgl.sampling, 'random_' + 'walk')(graph, torch.arange(4), length=3)",
])
def test_unseeded_dgl_draw_is_gm603_at_the_runs_seeding(cli, tmp_path, draw):
    """Reported where the run seeds the other RNGs (where `dgl.seed` belongs), naming the draw."""
    text, data = run(cli, tmp_path, draw)
    found = at(data, "GM603", "train.py", line_of(text, "torch.manual_seed(0)"))
    assert found, data["findings"]
    assert any(f"DGL's random generator is drawn from (4x, first at train.py:{line_of(text, 'drawn = ')})" in e
               for f in found for e in f["evidence"] + [f["message"]])
    assert not at(data, "GM603", "train.py", line_of(text, "drawn = ")), data["findings"]


@pytest.mark.parametrize("draw, seed", [
    ("drawn = dgl.rand_graph(8, 16)", "dgl.seed(0)"),
    # a fan-out of -1 takes every neighbour: DGL's generator is not drawn from
    ("drawn = dgl.sampling.sample_neighbors(graph, torch.arange(4), -1)", ""),
])
def test_seeded_or_drawless_dgl_calls_are_no_gm603(cli, tmp_path, draw, seed):
    _, data = run(cli, tmp_path, draw, seed)
    assert not errors(data, "GM603"), errors(data, "GM603")


def test_fresh_numpy_generator_is_gm603_where_it_is_built(cli, tmp_path):
    text, data = run(cli, tmp_path, "drawn = np.random.default_rng().permutation(8)")
    found = at(data, "GM603", "train.py", line_of(text, "drawn = "))
    assert found and found[0]["status"] == "confirmed", data["findings"]
    assert any("default_rng() ran 4x here without a seed" in e for e in found[0]["evidence"])


@pytest.mark.parametrize("draw", [
    "drawn = np.random.default_rng(step).permutation(8)",  # seeded: private and reproducible
    "drawn = np.random.default_rng().permutation(8)",  # ...but the run seeds nothing
])
def test_seeded_generator_or_unseeded_run_is_no_gm603(cli, tmp_path, draw):
    text = PROGRAM.format(seed="", draw=draw)
    if "(step)" not in draw:
        text = text.replace("torch.manual_seed(0)\n", "")
    write(tmp_path, {"train.py": text})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    # (a run that seeds nothing gets the static "nothing seeds" finding at the model, not here)
    assert not at(data, "GM603", "train.py", line_of(text, "drawn = ")), data["findings"]
