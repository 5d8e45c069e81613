"""Lightning's fit loop as a training loop of the model (auditor/static/frameworks.py): one textual
bug per copy of the Lightning pipeline, each reported at its line by the real ``gm-audit check``;
the clean copy reports no error. A second, differently shaped tree (``import lightning as L``, a
project base class, manual optimization, a dict return, a callback in another file) keeps the
modelling from fitting one layout.

Every copy is checked by one CLI run over a folder holding them all (each is its own program):
one start-up and one project instead of a dozen."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

PIPELINE = REPO / "benchmarks" / "pipelines" / "lightning_cad"

# name: (file, old text, new text, rule, text that marks the line the rule must report)
MUTANTS = {
    "detach": ("module.py", "reconstruction_loss(recon[mask], x[mask],",
               "reconstruction_loss(recon[mask].detach(), x[mask],", "GM101", ".detach()"),
    "frozen": ("module.py", "self.model = GraphMAE(**model_cfg)\n",
               "self.model = GraphMAE(**model_cfg)\n        self.model.encoder.requires_grad_(False)\n",
               "GM103", "requires_grad_(False)"),
    "no_grad": ("module.py", "        loss, coord, direction = self._shared_step(batch)\n        self.log_dict({\"train",
                "        with torch.no_grad():\n            loss, coord, direction = self._shared_step(batch)\n"
                "        self.log_dict({\"train", "GM102", "self._shared_step(batch)"),
    "epoch_eval": ("module.py", "    def configure_optimizers(self):",
                   "    def on_train_epoch_start(self):\n        self.model.eval()\n\n"
                   "    def configure_optimizers(self):", "GM201", "self.model.eval()"),
    "callback_eval": ("callbacks.py", "    def on_train_batch_end(",
                      "    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):\n"
                      "        pl_module.model.eval()\n\n    def on_train_batch_end(",
                      "GM201", "pl_module.model.eval()"),
    "accumulate": ("module.py", "        self.last_train_loss = loss.item()\n",
                   "        self.last_train_loss = loss.item()\n        self.running += loss\n",
                   "GM106", "self.running += loss"),
    "sum": ("model.py", "coord = F.mse_loss(p_xyz, t_xyz)", "coord = F.mse_loss(p_xyz, t_xyz, reduction=\"sum\")",
            "GM401", "reduction=\"sum\""),
    "hook_forward": ("module.py", "    def configure_optimizers(self):",
                     "    def on_train_batch_end(self, outputs, batch, batch_idx):\n"
                     "        self.model(batch, batch.ndata[\"feat\"])\n\n"
                     "    def configure_optimizers(self):", "GM202", "self.model(batch, batch.ndata"),
}

# A second layout: `import lightning as L`, a project base class, a callback in its own file,
# manual optimization, a dict returned by training_step and by configure_optimizers.
SECOND = {
    "lit/__init__.py": "",
    "lit/base.py": """
        import lightning as L
        import torch
        import torch.nn as nn


        class Base(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 1))

            def configure_optimizers(self):
                opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
                sched = torch.optim.lr_scheduler.StepLR(opt, 10)
                return {"optimizer": opt, "lr_scheduler": sched}
        """,
    "lit/modules.py": """
        import torch
        import torch.nn.functional as F

        from lit.base import Base


        class DictModule(Base):
            def training_step(self, batch, batch_idx):
                x, y = batch
                loss = F.mse_loss(self.net(x), y)
                err = (self.net(x) - y).abs().mean()
                return {"loss": loss, "err": err.detach()}


        class ManualModule(Base):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                x, y = batch
                loss = F.mse_loss(self.net(x), y)
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
        """,
    "lit/hooks.py": """
        from lightning.pytorch.callbacks import Callback


        class Report(Callback):
            def on_train_epoch_end(self, trainer, pl_module):
                print(trainer.current_epoch)
        """,
    "run.py": """
        import lightning as L
        import torch

        from lit.hooks import Report
        from lit.modules import DictModule, ManualModule


        def main():
            data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
            for cls in (DictModule, ManualModule):
                trainer = L.Trainer(max_epochs=2, callbacks=[Report()])
                trainer.fit(cls(), data)


        if __name__ == "__main__":
            main()
        """,
}
# name: (file, old, new, rule, marker)
SECOND_MUTANTS = {
    "dict_detach": ("lit/modules.py", '{"loss": loss,', '{"loss": loss.detach(),', "GM101",
                    '"loss": loss.detach()'),
    "manual_no_reset": ("lit/modules.py", "        opt.zero_grad()\n", "", "GM104",
                        "self.manual_backward(loss)"),
    "callback_eval": ("lit/hooks.py", "print(trainer.current_epoch)",
                      "print(trainer.current_epoch)\n    def on_train_epoch_start(self, trainer, pl_module):\n"
                      "        pl_module.net.eval()", "GM201", "pl_module.net.eval()"),
}


def _mutate(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (rel, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _line_of(root: Path, rel: str, marker: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if marker in line)


def _write_second(root: Path) -> None:
    for rel, text in SECOND.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """Every copy under one folder, checked by one `gm-audit check` run: (folder, findings)."""
    root = tmp_path_factory.mktemp("lightning")
    shutil.copytree(PIPELINE, root / "clean")
    for name, (rel, old, new, _, _) in MUTANTS.items():
        shutil.copytree(PIPELINE, root / name)
        _mutate(root / name, rel, old, new)
    _write_second(root / "second")
    for name, (rel, old, new, _, _) in SECOND_MUTANTS.items():
        _write_second(root / f"second_{name}")
        _mutate(root / f"second_{name}", rel, old, new)
    done = run_cli("check", ".", "--output-format", "json", "--no-cache", cwd=root, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert not report["errors"], report["errors"]
    return root, report["findings"]


def _at(findings: list[dict], folder: str) -> list[dict]:
    return [f for f in findings if f["path"].startswith(folder + "/")]


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_pipeline_mutant_is_reported_at_its_line(audited, name: str) -> None:
    root, findings = audited
    rel, _, _, rule, marker = MUTANTS[name]
    line = _line_of(root / name, rel, marker)
    found = [(f["rule"], f["path"], f["line"]) for f in _at(findings, name)]
    assert (rule, f"{name}/{rel}", line) in found, found


@pytest.mark.parametrize("name", sorted(SECOND_MUTANTS))
def test_second_layout_mutant_is_reported_at_its_line(audited, name: str) -> None:
    root, findings = audited
    folder = f"second_{name}"
    rel, _, _, rule, marker = SECOND_MUTANTS[name]
    line = _line_of(root / folder, rel, marker)
    found = [(f["rule"], f["path"], f["line"]) for f in _at(findings, folder)]
    assert (rule, f"{folder}/{rel}", line) in found, found


@pytest.mark.parametrize("folder", ["clean", "second"])
def test_clean_trees_have_no_error(audited, folder: str) -> None:
    _, findings = audited
    errors = [f for f in _at(findings, folder) if f["severity"] == "error"]
    assert not errors, errors


def test_no_finding_asks_for_lightnings_own_steps(audited) -> None:
    """Automatic optimization: Lightning zero_grads, backpropagates and steps; GM104 stays
    silent on every copy but the manual one that forgot its reset."""
    _, findings = audited
    gm104 = [f["path"] for f in findings if f["rule"] == "GM104"]
    assert all(p.startswith("second_manual_no_reset/") for p in gm104), gm104
