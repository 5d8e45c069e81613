"""The probe's evidence of effects that GM106, GM202, GM402, GM502 and GM503 decide from: loss
components and their coefficients, BatchNorm statistics that cannot update, per-batch pinned
input statistics, graphs held across steps, samples changed in place, point-frame consistency."""

from __future__ import annotations

import math
import sys
import textwrap

import pytest

from auditor.probe.evidence import Evidence
from auditor.probe.launch import prepare, run_command

torch = pytest.importorskip("torch")

PROGRAM = """
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class Parts(Dataset):
    def __init__(self):
        self.items = [torch.randn(6, 18) for _ in range(8)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x = self.items[i]
        x += 0.01 * torch.randn_like(x)  # the cached sample itself
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(18, 16)
        self.bn = nn.BatchNorm1d(16, momentum=0.0)
        self.out = nn.Linear(16, 18)

    def forward(self, x):
        pred = self.out(self.bn(self.lin(x)))
        parts = {"xyz": (pred[:, :9] - x[:, :9]).pow(2).mean(),
                 "dirs": (pred[:, 9:] - x[:, 9:]).pow(2).mean()}
        return parts["xyz"] + 0.0 * parts["dirs"], parts


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Parts(), batch_size=4, shuffle=True, collate_fn=torch.cat)
total = 0.0
for epoch in range(3):
    for x in loader:
        x = (x - x.mean(0)) / x.std(0)
        loss, parts = model(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss
print("done")
"""


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> Evidence:
    tmp = tmp_path_factory.mktemp("effects")
    (tmp / "train.py").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    env = prepare(tmp / "run", tmp, "6", [], "cpu")
    outcome = run_command([sys.executable, "train.py"], env, tmp, 120, tmp / "log.txt")
    assert outcome.exit_code == 0, outcome.tail
    return Evidence.load(tmp / "run" / "evidence")


def test_loss_components_and_their_coefficients(evidence):
    comps = {c.name: c for c in evidence.steps[0].components}
    assert set(comps) == {"xyz", "dirs"}
    assert comps["xyz"].coef == pytest.approx(1.0) and comps["xyz"].share == pytest.approx(1.0)
    assert comps["dirs"].coef == 0.0 and comps["dirs"].dropped and comps["dirs"].value > 0


def test_batchnorm_that_cannot_update_is_stalled(evidence):
    stalled = [e for e in evidence.batchnorm if e.kind == "stalled"]
    assert [(e.module, e.detail) for e in stalled] == [("bn", "momentum=0")]


def test_per_batch_normalised_inputs_are_pinned(evidence):
    pinned = evidence.pinned_inputs()
    assert len(pinned) == 1 and pinned[0].input == "arg0"
    assert pinned[0].pinned["mean"] == list(range(18)) and pinned[0].pinned["std"] == list(range(18))
    assert "18 of 18 columns" in pinned[0].summary()


def test_loss_accumulated_with_its_graph_grows(evidence):
    growing = dict(evidence.growing_holders())
    assert "<module>.total" in growing
    nodes = [r.nodes for r in growing["<module>.total"]]
    assert nodes == sorted(nodes) and nodes[-1] > growing["<module>.total"][-1].loss_nodes


def test_cached_sample_changed_in_place(evidence):
    (parts,) = evidence.samples
    assert parts.dataset == "Parts" and parts.refetched >= 8 and parts.inplace == parts.refetched


def _line(k: int = 12) -> "torch.Tensor":
    """One straight entity of K points: xyz along (1, 2, 0), unit tangent along it, unit normal."""
    t = torch.linspace(0, 1, k)[:, None]
    direction = torch.tensor([1.0, 2.0, 0.0])
    tangent = direction / direction.norm()
    normal = torch.tensor([2.0, -1.0, 0.0]) / math.sqrt(5)
    pts = torch.cat([t * direction, tangent.expand(k, 3), normal.expand(k, 3)], dim=1)
    return pts.reshape(1, -1)


def test_frame_stats_of_point_features():
    from auditor.probe.recorder import _frame_stats

    x = _line().repeat(4, 1)
    clean = _frame_stats(torch, x)
    assert clean["tangent_alignment"] == pytest.approx(1.0, abs=1e-5)
    assert clean["tangent_norm_dev"] < 1e-5 and clean["tangent_normal_cos"] < 1e-5
    pts = x.reshape(4, 12, 9).clone()
    rotation = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    pts[..., :3] = pts[..., :3] @ rotation.T  # coordinates only
    rotated = _frame_stats(torch, pts.reshape(4, -1))
    assert rotated["tangent_alignment"] < 0.1 and rotated["tangent_norm_dev"] < 1e-5
    pts[..., 3:6] += 0.05  # noise on the tangents
    assert _frame_stats(torch, pts.reshape(4, -1))["tangent_norm_dev"] > 1e-3
