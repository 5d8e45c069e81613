"""Defects whose loss looks normal, confirmed by what the run shows at the step: parameters
trained in bfloat16 with a float32 loss (GM301), BatchNorm statistics averaged over the whole
run (GM202), an extra loss term weighted by a default and a large-weighted term inside one
named component (GM402), coordinates rotated without their
frames in a block feature layout (GM503); and a finding on a def line whose function never ran
(the def itself ran at import) left unexercised. Each program runs once under `gm-audit probe`."""

from __future__ import annotations

import sys

import pytest

from tests.test_probe import by_rule, probe, write
from tests.test_probe_causes import line_of

PY = sys.executable
pytest.importorskip("torch")

BF16 = """
import torch, torch.nn as nn, torch.nn.functional as F


def apply_precision(model, precision):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    return model.to(dtype)


def reconstruction_loss(pred, target):
    pred, target = pred.float(), target.float()
    return F.mse_loss(pred, target)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
model = apply_precision(model, "bf16")
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(20):
    x = torch.randn(32, 6).to(torch.bfloat16)
    loss = reconstruction_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

BN_AND_TERMS = """
import torch, torch.nn as nn, torch.nn.functional as F

cfg = {"lr": 0.01}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 16, bias=False)
        self.bn = nn.BatchNorm1d(16)
        self.dec = nn.Linear(16, 6)

    def forward(self, x):
        return self.dec(torch.relu(self.bn(self.enc(x))))


def weighted_loss(pred, x, w_coord=1.0, w_rest=0.0):
    return w_coord * F.mse_loss(pred[:, :3], x[:, :3]) + w_rest * F.mse_loss(pred[:, 3:], x[:, 3:])


torch.manual_seed(0)
model = Net()
for module in model.modules():
    if isinstance(module, nn.BatchNorm1d):
        module.momentum = None
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
for step in range(20):
    x = torch.randn(32, 6)
    pred = model(x)
    loss = F.mse_loss(pred, x) if step < 100 else weighted_loss(pred, x)
    smooth = (pred[1:] - pred[:-1]).pow(2).mean()
    loss = loss + cfg.get("smooth_weight", 1.0) * smooth
    drift = 1e-5 * pred.mean().abs()
    loss = loss + cfg.get("drift_weight", 1.0) * drift
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

# a large-weighted term added into one named component of the reconstruction loss
DOMINANT = """
import torch, torch.nn as nn, torch.nn.functional as F


def reconstruction_loss(pred, target):
    coord = F.mse_loss(pred[:, :3], target[:, :3]) + 100 * F.l1_loss(pred[:, :3], target[:, :3])
    direction = (1 - F.cosine_similarity(pred[:, 3:], target[:, 3:], dim=-1)).mean()
    return coord + direction, coord, direction


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(20):
    x = torch.randn(32, 6)
    loss, coord, direction = reconstruction_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

# K points of an arc, then their K unit tangents, then their K unit normals (block layout)
ROTATE = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader

K = 6
COORD = slice(0, 3 * K)


def arc(i):
    g = torch.Generator().manual_seed(i)
    t = torch.linspace(0, 1.5, K) + float(torch.rand(1, generator=g))
    xyz = torch.stack([2 * t.cos() + 1, 2 * t.sin(), torch.zeros(K)], 1)
    tangent = torch.stack([-t.sin(), t.cos(), torch.zeros(K)], 1)
    normal = torch.stack([t.cos(), t.sin(), torch.zeros(K)], 1)
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=g))
    return torch.cat([(v @ q.T).reshape(-1) for v in (xyz, tangent, normal)])


def random_rotation(gen):
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=gen))
    return q


class RandomRotation:
    def __init__(self, seed=0):
        self.gen = torch.Generator().manual_seed(seed)

    def __call__(self, items):
        feat = torch.stack(items)
        n = feat.shape[0]
        rot = random_rotation(self.gen)
        xyz = feat[:, COORD].reshape(n, -1, 3) @ rot.T
        feat[:, COORD] = xyz.reshape(n, -1)
        return feat


torch.manual_seed(0)
data = [arc(i) for i in range(64)]
model = nn.Sequential(nn.Linear(9 * K, 32), nn.ReLU(), nn.Linear(32, 9 * K))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(data, batch_size=16, shuffle=True, collate_fn=RandomRotation(0))
for epoch in range(3):
    for x in loader:
        loss = F.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def run(cli, tmp_path, program: str) -> tuple[str, dict]:
    text = program.lstrip("\n")
    write(tmp_path, {"train.py": text})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    return text, data


def statuses(data: dict, rule: str) -> dict[int, str]:
    return {f["line"]: f["status"] for f in by_rule(data, rule) if f["path"] == "train.py"}


def test_parameters_trained_in_bfloat16_with_a_float32_loss(cli, tmp_path):
    text, data = run(cli, tmp_path, BF16)
    cast = line_of(text, "return model.to(dtype)")
    assert statuses(data, "GM301") == {cast: "confirmed"}
    (f,) = by_rule(data, "GM301")
    assert any("steps bfloat16 parameters, its state bfloat16" in e for e in f["evidence"])


def test_cumulative_batchnorm_and_extra_loss_terms(cli, tmp_path):
    text, data = run(cli, tmp_path, BN_AND_TERMS)
    assert statuses(data, "GM202") == {line_of(text, "module.momentum = None"): "confirmed"}
    (bn,) = by_rule(data, "GM202")
    assert any("momentum=None" in e for e in bn["evidence"])
    # the term that weighs in the loss is confirmed; the one that carries nothing is refuted
    # a signature whose function never ran is unexercised, though its def ran at import
    assert statuses(data, "GM402") == {line_of(text, '"smooth_weight"'): "confirmed",
                                       line_of(text, '"drift_weight"'): "refuted",
                                       line_of(text, "def weighted_loss"): "unexercised"}


# the same term inside a dict of named parts
DOMINANT_IN_DICT = """
import torch, torch.nn as nn, torch.nn.functional as F


def reconstruction_loss(pred, target):
    parts = {"coord": F.mse_loss(pred[:, :3], target[:, :3])
             + 100 * F.l1_loss(pred[:, :3], target[:, :3]),
             "direction": (1 - F.cosine_similarity(pred[:, 3:], target[:, 3:], dim=-1)).mean()}
    return parts["coord"] + parts["direction"], parts


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(20):
    x = torch.randn(32, 6)
    loss, parts = reconstruction_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("program", [DOMINANT, DOMINANT_IN_DICT], ids=["name", "dict-entry"])
def test_a_dominating_term_is_weighed_by_the_component_it_is_added_to(cli, tmp_path, program):
    text, data = run(cli, tmp_path, program)
    assert statuses(data, "GM402") == {line_of(text, "100 * F.l1_loss"): "confirmed"}
    (f,) = by_rule(data, "GM402")
    assert any(e.startswith("coord carries") for e in f["evidence"]), f["evidence"]


def test_coordinates_rotated_without_their_frames(cli, tmp_path):
    text, data = run(cli, tmp_path, ROTATE)
    assert statuses(data, "GM503") == {line_of(text, "@ rot.T"): "confirmed"}
