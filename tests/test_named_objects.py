"""Objects a program finds by names its settings give (``auditor/static/named_objects.py``): a
plugin module imported by a configured name and a class of it looked up by a configured
attribute name; the trained model reached through a wrapper that hands its arguments back; and
two values that are no tensors or no runs. Each through the real ``gm-audit check``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import check_tree

REGISTRY = (
    "import importlib\n"
    "\n"
    "def load_plugin(package, name, attr):\n"
    "    module = importlib.import_module(f'{package}.{name}')\n"
    "    return getattr(module, attr)\n"
)

MODELS_INIT = (
    "from ..registry import load_plugin\n"
    "\n"
    "def build_model(cfg):\n"
    "    cls = load_plugin(__package__, cfg['name'], cfg['cls'])\n"
    "    return cls(hidden=cfg['hidden'])\n"
)

NET = (
    "import torch\n"
    "\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self, hidden=8):\n"
    "        super().__init__()\n"
    "        self.enc = torch.nn.Linear(4, hidden)\n"
    "        self.dec = torch.nn.Linear(hidden, 4)\n"
    "\n"
    "    def forward(self, g, x):\n"
    "        h = self.enc(x)\n"
    "        return self.dec(h{cut})\n"
)

RUNNER = (
    "class Runner:\n"
    "    def prepare(self, model, optimizer):\n"
    "        model = model.to('cpu')\n"
    "        return model, optimizer\n"
    "\n"
    "    def backward(self, loss):\n"
    "        loss.backward()\n"
)

TRAIN = (
    "import torch\n"
    "from pkg.models import build_model\n"
    "from pkg.runner import Runner\n"
    "\n"
    "DEFAULTS = {'model': {'name': 'net', 'cls': 'Net', 'hidden': 8}}\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, cfg, runner):\n"
    "        self.runner = runner\n"
    "        model = build_model(cfg['model'])\n"
    "        opt = torch.optim.Adam(model.parameters())\n"
    "        self.model, self.opt = runner.prepare(model, opt)\n"
    "\n"
    "    def step(self, g, x, mask):\n"
    "        loss = torch.nn.functional.mse_loss(self.model(g, x)[mask], x[mask])\n"
    "        self.opt.zero_grad()\n"
    "        self.runner.backward(loss)\n"
    "        self.opt.step()\n"
    "\n"
    "def main(batches):\n"
    "    trainer = Trainer(DEFAULTS, Runner())\n"
    "    for g, x in batches:\n"
    "        trainer.step(g, x, g.ndata['mask'])\n"
    "\n"
    "if __name__ == '__main__':\n"
    "    main([])\n"
)


def _plugin_tree(cut: str) -> dict[str, str]:
    return {"pkg/__init__.py": "", "pkg/registry.py": REGISTRY, "pkg/models/__init__.py": MODELS_INIT,
            "pkg/models/net.py": NET.format(cut=cut), "pkg/runner.py": RUNNER, "train.py": TRAIN}


@pytest.mark.parametrize("cut, expected", [(".detach()", [("GM101", "pkg/models/net.py", 11)]),
                                           ("", [])])
def test_a_plugin_class_found_by_configured_names_is_the_trained_model(
        tmp_path: Path, cut: str, expected: list) -> None:
    # the model class is looked up by the names the settings give, built in a trainer, handed
    # through a wrapper that returns it, and backpropagated through the wrapper's backward: the
    # plugin module runs in the entry script's program, so the finding is an error there
    assert check_tree(tmp_path, _plugin_tree(cut), "GM101", levels=("error",)) == expected


FREEZE_BN = (
    "import torch\n"
    "\n"
    "CFG = {'freeze_bn': FLAG}\n"
    "\n"
    "def train(model, opt, batches, cfg=CFG):\n"
    "    for x in batches:\n"
    "        model.train()\n"
    "        if cfg['freeze_bn']:\n"
    "            for m in model.modules():\n"
    "                if isinstance(m, torch.nn.BatchNorm1d):\n"
    "                    m.eval()\n"
    "        loss = model(x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "\n"
    "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))\n"
    "train(model, torch.optim.SGD(model.parameters(), lr=0.1), [])\n"
)


@pytest.mark.parametrize("flag, expected", [("True", [("GM202", "train.py", 11)]), ("False", [])])
def test_a_batchnorm_freeze_behind_a_switch_no_run_turns_on_is_no_finding(
        tmp_path: Path, flag: str, expected: list) -> None:
    assert check_tree(tmp_path, {"train.py": FREEZE_BN.replace("FLAG", flag)}, "GM202") == expected


def test_a_constant_of_a_tuple_display_is_a_number_not_a_graph(tmp_path: Path) -> None:
    train = (
        "import torch\n"
        "SEED, ACCUM, LR = 0, 2, 0.01\n"
        "model = torch.nn.Linear(4, 4)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=LR)\n"
        "hist = []\n"
        "for epoch in range(3):\n"
        "    tot = 0.0\n"
        "    for micro in range(ACCUM):\n"
        "        loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "        (loss / ACCUM).backward()\n"
        "        tot += loss.item()\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n"
        "    hist.append(tot / ACCUM)\n"
    )
    assert check_tree(tmp_path, {"train.py": train}, "GM106") == []


INSTANTIATE = (
    "import copy\n"
    "import importlib\n"
    "\n"
    "def locate(path):\n"
    "    module = importlib.import_module(path.rsplit('.', 1)[0])\n"
    "    return getattr(module, path.rsplit('.', 1)[1])\n"
    "\n"
    "def instantiate(cfg, **kwargs):\n"
    "    cfg = dict(cfg)\n"
    "    target = locate(cfg.pop('_target_'))\n"
    "    return target(**cfg, **kwargs)\n"
)

TARGET_TRAIN = (
    "import torch\n"
    "from pkg.instantiate import instantiate\n"
    "from pkg.runner import Runner\n"
    "\n"
    "CFG = {'optim': {'_target_': 'torch.optim.AdamW', 'lr': 0.01}}\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, cfg, model, runner):\n"
    "        self.runner = runner\n"
    "        optimizer = instantiate(cfg['optim'], params=model.parameters())\n"
    "        self.model, self.opt = runner.prepare(model, optimizer)\n"
    "\n"
    "    def step(self, x):\n"
    "        loss = self.model(x).pow(2).mean()\n"
    "        self.opt.zero_grad()\n"
    "        self.runner.backward(loss)\n"
    "        self.opt.step()\n"
    "\n"
    "def main(batches):\n"
    "    trainer = Trainer(CFG, torch.nn.Linear(4, 4), Runner())\n"
    "    for x in batches:\n"
    "        trainer.step(x)\n"
    "\n"
    "if __name__ == '__main__':\n"
    "    main([])\n"
)


@pytest.mark.parametrize("placed, expected", [
    ("model = model.to('cpu')", []),
    ("model = copy.deepcopy(model).to('cpu')", [("GM105", "pkg/runner.py", 4)]),
])
def test_an_optimizer_a_target_names_and_a_wrapper_that_copies_the_model(
        tmp_path: Path, placed: str, expected: list) -> None:
    # the optimizer is built from its `_target_`; the wrapper hands the model back as itself,
    # or as a copy the optimizer never saw (reported at the copy)
    runner = "import copy\n" + RUNNER.replace("model = model.to('cpu')", placed)
    files = {"pkg/__init__.py": "", "pkg/instantiate.py": INSTANTIATE, "pkg/runner.py": runner,
             "train.py": TARGET_TRAIN}
    assert check_tree(tmp_path, files, "GM105") == expected


def _norm_from_config(momentum: str) -> dict[str, str]:
    """A layer's BatchNorm built by a hand-written `instantiate` from a `_target_` node of the
    defaults, the YAML file overriding one of its entries."""
    return {
        "config.yaml": f"model:\n  norm:\n    momentum: {momentum}\n",
        "registry.py": (
            "import copy\n"
            "import importlib\n"
            "\n"
            "def instantiate(cfg, **kwargs):\n"
            "    cfg = copy.deepcopy(cfg)\n"
            "    module, _, attr = cfg.pop('_target_').rpartition('.')\n"
            "    return getattr(importlib.import_module(module), attr)(**cfg, **kwargs)\n"
        ),
        "train.py": (
            "import torch\n"
            "import yaml\n"
            "from registry import instantiate\n"
            "\n"
            "DEFAULTS = {'model': {'norm': {'_target_': 'torch.nn.BatchNorm1d', 'momentum': 0.1}}}\n"
            "\n"
            "def merge(base, over):\n"
            "    for k, v in over.items():\n"
            "        if isinstance(v, dict) and isinstance(base.get(k), dict):\n"
            "            merge(base[k], v)\n"
            "        else:\n"
            "            base[k] = v\n"
            "    return base\n"
            "\n"
            "def main():\n"
            "    cfg = merge(DEFAULTS, yaml.safe_load(open('config.yaml')))\n"
            "    norm = instantiate(cfg['model']['norm'], num_features=16)\n"
            "    return torch.nn.Sequential(torch.nn.Linear(4, 16), norm)\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
        ),
    }


@pytest.mark.parametrize("momentum, expected", [("null", [("GM202", "config.yaml", 3)]), ("0.1", [])])
def test_batchnorm_momentum_of_a_configured_target(tmp_path: Path, momentum: str, expected: list) -> None:
    assert check_tree(tmp_path, _norm_from_config(momentum), "GM202") == expected
