"""Values that arrive from configuration (auditor/static/config_values.py), asked by GM301, GM401
and GM402: each a small program run through the real `gm-audit check`; the bug is reported where
its value is written or used, its twin with a harmless configured value is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import check_tree


check = check_tree


def _argparse_script(default: str) -> dict[str, str]:
    """An option whose name says nothing of weights, passed by keyword into the loss."""
    return {"train.py": (
        "import argparse\n"
        "import torch.nn.functional as F\n"
        "\n"
        "def fit(model, batches, opt, rec_coef=1.0):\n"
        "    for x, y in batches:\n"
        "        out = model(x)\n"
        "        loss = rec_coef * F.mse_loss(out, x) + F.l1_loss(out, y)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "def main(model, batches, opt):\n"
        "    parser = argparse.ArgumentParser()\n"
        f"    parser.add_argument('--rec', type=float, default={default})\n"
        "    args = parser.parse_args()\n"
        "    fit(model, batches, opt, rec_coef=args.rec)\n"
    )}


@pytest.mark.parametrize("default, expected", [("0.0", [("GM402", "train.py", 14)]), ("1.0", [])])
def test_argparse_default_weight(tmp_path: Path, default: str, expected: list) -> None:
    assert check(tmp_path, _argparse_script(default), "GM402") == expected


def _dataclass_config(construct: str) -> dict[str, str]:
    return {
        "settings.py": (
            "from dataclasses import dataclass\n"
            "\n"
            "@dataclass\n"
            "class TrainConfig:\n"
            "    epochs: int = 10\n"
            "    feature_term: float = 0.0\n"
        ),
        "train.py": (
            "import torch.nn.functional as F\n"
            "from settings import TrainConfig\n"
            "\n"
            "def run(model, batches, opt):\n"
            f"    cfg = {construct}\n"
            "    for x, y in batches:\n"
            "        out = model(x)\n"
            "        loss = F.mse_loss(out, y) + cfg.feature_term * F.l1_loss(out, x)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


@pytest.mark.parametrize("construct, expected", [
    ("TrainConfig()", [("GM402", "settings.py", 6)]),
    ("TrainConfig(feature_term=0.5)", []),
])
def test_dataclass_default_weight(tmp_path: Path, construct: str, expected: list) -> None:
    assert check(tmp_path, _dataclass_config(construct), "GM402") == expected


def _reduction_from_module(mode: str) -> dict[str, str]:
    return {
        "settings.py": f"LOSS = {{'reduce': '{mode}', 'margin': 1.0}}\n",
        "step.py": (
            "import torch.nn.functional as F\n"
            "from settings import LOSS\n"
            "\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask], x[mask], reduction=LOSS['reduce'])\n"
            "    loss.backward()\n"
        ),
    }


@pytest.mark.parametrize("mode, expected", [("sum", [("GM401", "step.py", 6)]), ("mean", [])])
def test_reduction_from_a_config_module(tmp_path: Path, mode: str, expected: list) -> None:
    assert check(tmp_path, _reduction_from_module(mode), "GM401") == expected


def _dtype_table(choice: str) -> dict[str, str]:
    return {"train.py": (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "\n"
        "DTYPES = {'half': torch.float16, 'full': torch.float32}\n"
        "\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
        "\n"
        "def build(options):\n"
        "    model = Net()\n"
        "    return model.to(DTYPES[options.get('dtype', 'full')])\n"
        "\n"
        "def main(batches, make_opt):\n"
        f"    model = build({{'dtype': '{choice}', 'epochs': 3}})\n"
        "    opt = make_opt(model.parameters())\n"
        "    for x in batches:\n"
        "        loss = F.mse_loss(model(x), x)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}


@pytest.mark.parametrize("choice, expected", [("half", [("GM301", "train.py", 16)]), ("full", [])])
def test_dtype_chosen_by_configuration(tmp_path: Path, choice: str, expected: list) -> None:
    assert check(tmp_path, _dtype_table(choice), "GM301") == expected


def _extra_term(config: str) -> dict[str, str]:
    return {"train.py": (
        "import torch.nn.functional as F\n"
        "\n"
        "def fit(model, batches, opt, cfg):\n"
        "    for x in batches:\n"
        "        z, out = model(x)\n"
        "        loss = F.mse_loss(out, x)\n"
        "        ortho = (z.T @ z).pow(2).mean()\n"
        "        loss += cfg.get('ortho', 2.0) * ortho\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "def main(model, batches, opt):\n"
        f"    fit(model, batches, opt, {config})\n"
    )}


@pytest.mark.parametrize("config, expected", [
    ("{'lr': 0.01}", [("GM402", "train.py", 8)]),
    ("{'lr': 0.01, 'ortho': 0.01}", []),
])
def test_extra_term_weighted_by_an_unset_default(tmp_path: Path, config: str, expected: list) -> None:
    assert check(tmp_path, _extra_term(config), "GM402") == expected
