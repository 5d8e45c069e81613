"""The probe's evidence of effects that GM106, GM202, GM402, GM502 and GM503 decide from: loss
components and their coefficients, BatchNorm statistics that cannot update, per-batch pinned
input statistics, graphs held across steps, samples changed in place, point-frame consistency."""

from __future__ import annotations

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


def _arcs(n: int = 8, k: int = 8) -> "torch.Tensor":
    """``n`` arcs of ``k`` points, in random orientations: (n, k, 3) points, unit tangents and
    unit normals."""
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        t = torch.linspace(0, 2.0, k) + float(torch.rand(1, generator=g))
        pts = torch.stack([3 * t.cos() + 2, 3 * t.sin(), torch.zeros(k)], 1)
        tangent = torch.stack([-t.sin(), t.cos(), torch.zeros(k)], 1)
        normal = torch.stack([t.cos(), t.sin(), torch.zeros(k)], 1)
        q, _ = torch.linalg.qr(torch.randn(3, 3, generator=g))
        out.append(torch.stack([pts @ q.T, tangent @ q.T, normal @ q.T]))
    return torch.stack(out, 1)  # (3, n, k, 3)


def _block(parts) -> "torch.Tensor":
    """[xyz * K | tangent * K | normal * K] per row."""
    return torch.cat([p.reshape(p.shape[0], -1) for p in parts], 1)


def _interleaved(parts) -> "torch.Tensor":
    """K x (xyz, tangent, normal) per row."""
    return torch.cat(list(parts), -1).reshape(parts[0].shape[0], -1)


@pytest.mark.parametrize("layout", [_block, _interleaved])
def test_frame_stats_read_the_layout_from_the_values(layout):
    from auditor.probe.recorder import _frame_stats

    parts = _arcs()
    clean = _frame_stats(torch, layout(parts))
    assert clean["directions"] == 16 and clean["points"] == 8
    assert clean["tangent_alignment"] == pytest.approx(1.0, abs=1e-4)
    assert clean["direction_norm_dev"] < 1e-5
    rot = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    rotated_all = _frame_stats(torch, layout(parts @ rot.T))  # a consistent augmentation
    assert rotated_all["tangent_alignment"] == pytest.approx(1.0, abs=1e-4)
    coords_only = parts.clone()
    coords_only[0] = coords_only[0] @ rot.T
    rotated = _frame_stats(torch, layout(coords_only))
    assert rotated["tangent_alignment"] < 0.9 and rotated["direction_norm_dev"] < 1e-5
    noisy = parts.clone()
    noisy[1:] += 0.02 * torch.randn(noisy[1:].shape, generator=torch.Generator().manual_seed(1))
    assert _frame_stats(torch, layout(noisy))["direction_norm_typical_dev"] > 1e-3
    masked = layout(parts)
    masked[::2] = 0.0  # masked nodes (GraphMAE zeroes them before its encoder)
    assert _frame_stats(torch, masked)["direction_norm_dev"] < 1e-5


ACCUMULATING = """
import torch, torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def update():
    opt.step()  # the reset that belongs here is missing


for i in range(8):
    loss = model(torch.randn(3, 4)).pow(2).mean()
    (loss / 2).backward()
    if i % 2 == 1:  # gradient accumulation over two micro-steps
        update()
print("done")
"""


def test_gradients_kept_across_updates_under_accumulation_confirm_gm104(tmp_path):
    """Under gradient accumulation the micro-step after each update starts from the update's
    gradient when nothing resets it: the finding reported at the helper's step is confirmed."""
    from auditor.findings import Finding, Severity, Status
    from auditor.registry import all_rules

    (tmp_path / "train.py").write_text(textwrap.dedent(ACCUMULATING), encoding="utf-8")
    env = prepare(tmp_path / "run", tmp_path, "8", [("train.py", 10, 10)], "cpu")
    outcome = run_command([sys.executable, "train.py"], env, tmp_path, 120, tmp_path / "log.txt")
    assert outcome.exit_code == 0, outcome.tail
    evidence = Evidence.load(tmp_path / "run" / "evidence")
    rule = all_rules()["GM104"]
    finding = Finding(rule="GM104", name=rule.name, severity=Severity.ERROR, path="train.py",
                      line=10, column=5, end_line=10, end_column=15,
                      message="gradients are never reset in the training loop at train.py:13")
    verdict = rule.confirm(finding, evidence)
    assert verdict is not None and verdict.status == Status.CONFIRMED, verdict
