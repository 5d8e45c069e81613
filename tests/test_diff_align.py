"""The diff across a wrapper: a bare model in minimal.py against the same model held as
`self.model` by a LightningModule (tests/pipelines/wrapped). The runs are aligned by structure,
so identical training is no divergence, and a bug shows at its own stage."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

PIPELINE = Path(__file__).resolve().parent / "pipelines" / "wrapped"


def diff(tmp_path: Path, change: tuple[str, str] = ("", "")) -> dict:
    tree = tmp_path / "p"
    shutil.copytree(PIPELINE, tree)
    lit = tree / "lit.py"
    old, new = change
    if old:
        assert old in lit.read_text()
        lit.write_text(lit.read_text().replace(old, new))
    run = run_cli("diff", f"{sys.executable} minimal.py", f"{sys.executable} lit.py",
                  "--steps", "2", "--format", "json", cwd=tree, timeout=600)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return json.loads(run.stdout)


def test_the_same_model_inside_a_lightning_module_trains_identically(tmp_path):
    report = diff(tmp_path)
    assert report["first_divergence"] is None, report["stages"]
    assert any("aligned by structure" in n and "`model`" in n for n in report["notes"])
    init = next(s for s in report["stages"] if s["stage"] == "init")
    assert init["status"] == "same" and init["compared"] >= 6


@pytest.mark.parametrize("change, stage, name", [
    # the decoder re-initialised after the model was built
    (("        self.model = Net()\n",
      "        self.model = Net()\n        torch.nn.init.normal_(self.model.dec.weight)\n"),
     "init", "dec.weight"),
    # the batch scaled before the model sees it
    (("self.model(x), x)", "self.model(x * 2), x)"), "input", "features"),
    # BatchNorm's epsilon changed: same inputs, parameters and modes, another output
    (("        self.model = Net()\n", "        self.model = Net()\n        self.model.norm.eps = 1.0\n"),
     "forward", "norm"),
    # the loss scaled
    (("return torch.nn.functional.mse_loss(", "return 2 * torch.nn.functional.mse_loss("),
     "loss", "loss"),
    # another learning rate: the first gradients agree, the parameters after the step do not
    (("lr=1e-2", "lr=1e-3"), "update", "enc.weight"),
    # the encoder frozen inside the wrapper: its parameters get no gradient
    (("        self.model = Net()\n",
      "        self.model = Net()\n        self.model.enc.requires_grad_(False)\n"),
     "grad", "enc.weight"),
    # BatchNorm put in eval mode when training starts
    (("    def configure_optimizers(self):",
      "    def on_train_start(self):\n        self.model.norm.eval()\n\n"
      "    def configure_optimizers(self):"),
     "mode", "norm"),
])
def test_a_bug_inside_the_wrapper_shows_at_its_stage_under_the_aligned_name(tmp_path, change,
                                                                             stage, name):
    first = diff(tmp_path, change)["first_divergence"]
    assert first is not None and first["stage"] == stage, first
    assert first["name"].startswith(name), first


def test_aligned_names_keep_what_the_candidate_run_itself_calls_graphs_masks_and_rngs():
    # the explanation of an `input` divergence reads these names as the candidate's evidence
    # does: the module a graph enters takes the prefix, the run's own masks and RNGs do not
    from auditor.diff.align import Alignment

    aligned = Alignment(reference="", candidate="model.", matched=4)
    assert aligned.candidate_name("graph→encoder") == "graph→model.encoder"
    assert aligned.candidate_name("mask[0]") == "mask[0]"
    assert aligned.candidate_name("rng torch") == "rng torch"
    assert aligned.candidate_name("enc.weight") == "model.enc.weight"
