"""The probe under a loop Lightning owns (tests/pipelines/wrapped/lit.py): the mode at the
backwards Lightning makes and the optimizer it steps are seen as in a hand-written loop, and a
cause is reported at the module's own hook or constructor, never at a line inside Lightning."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.test_probe import probe

pytest.importorskip("pytorch_lightning")
PIPELINE = Path(__file__).resolve().parent / "pipelines" / "wrapped"


def probe_lit(cli, tmp_path: Path, old: str = "", new: str = "", *more: str,
              steps: int = 3) -> tuple[str, dict]:
    """The wrapped pipeline probed with ``old`` replaced by ``new`` in lit.py (and each further
    old/new pair of ``more``)."""
    tree = tmp_path / "p"
    shutil.copytree(PIPELINE, tree)
    lit = tree / "lit.py"
    pairs = [(old, new), *zip(more[::2], more[1::2])] if old else []
    for a, b in pairs:
        assert a in lit.read_text()
        lit.write_text(lit.read_text().replace(a, b))
    _, data = probe(cli, tree, sys.executable, "lit.py", options=("--steps", str(steps)))
    assert data["run"]["steps"] >= 2, data["run"]
    return lit.read_text(), data


def raised(data: dict) -> list[tuple[str, str, int]]:
    return sorted((f["rule"], f["path"], f["line"]) for f in data["findings"]
                  if f["status"] in ("confirmed", "runtime"))


def test_clean_lightning_module_raises_nothing(cli, tmp_path):
    _, data = probe_lit(cli, tmp_path)
    assert raised(data) == []


@pytest.mark.parametrize("old, new, rule, needle", [
    # BatchNorm of the held model put in eval mode by the module's start hook
    ("    def configure_optimizers(self):",
     "    def on_train_start(self):\n        self.model.norm.eval()\n\n    def configure_optimizers(self):",
     "GM201", "self.model.norm.eval()"),
    # the encoder frozen in the constructor while the optimizer is given every parameter
    ("        self.model = Net()\n", "        self.model = Net()\n        self.model.enc.requires_grad_(False)\n",
     "GM103", "requires_grad_(False)"),
])
def test_cause_in_a_hook_or_constructor_is_reported_at_its_own_line(cli, tmp_path, old, new, rule,
                                                                    needle):
    text, data = probe_lit(cli, tmp_path, old, new)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    assert raised(data) == [(rule, "lit.py", line)]


_STEP = "        return torch.nn.functional.mse_loss(self.model(x), x)\n"


def test_submodules_called_by_the_step_belong_to_the_module(cli, tmp_path):
    # training_step runs the held model's parts itself, no forward of the model as a whole: the
    # trained model is the LightningModule that holds them, so the encoder's parameters, cut
    # off by the detach, are seen to get no gradient
    text, data = probe_lit(cli, tmp_path, _STEP, (
        "        h = torch.relu(self.model.norm(self.model.enc(x)))\n"
        "        return torch.nn.functional.mse_loss(self.model.dec(h.detach()), x)\n"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "h.detach()" in ln)
    assert raised(data) == [("GM101", "lit.py", line)]


def test_losses_kept_on_the_module_are_seen_growing(cli, tmp_path):
    # the step has returned when Lightning runs the backward: the list is found on the module
    text, data = probe_lit(
        cli, tmp_path, _STEP, ("        loss = torch.nn.functional.mse_loss(self.model(x), x)\n"
                               "        self.losses.append(loss)\n        return loss\n"),
        "        self.model = Net()\n", "        self.model = Net()\n        self.losses = []\n",
        steps=5)  # a list that grows over several recorded steps
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "self.losses.append" in ln)
    assert raised(data) == [("GM106", "lit.py", line)]
