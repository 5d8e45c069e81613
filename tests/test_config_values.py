"""Values that arrive from configuration (auditor/static/config_values.py), asked by GM301, GM401
and GM402: each a small program run through the real `gm-audit check`; the bug is reported where
its value is written or used, its twin with a harmless configured value is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.static.config_files import MAX_CANDIDATES, config_file, tree_configs
from auditor.suppression import parse_config_ignores
from tests.conftest import run_cli
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


def _nested_dataclass_switch(default: str) -> dict[str, str]:
    """A section of the configuration built by ``field(default_factory=...)``; its switch
    freezes the encoder where the model is built, the optimizer takes every parameter."""
    return {
        "settings.py": (
            "from dataclasses import dataclass, field\n"
            "\n"
            "@dataclass\n"
            "class ModelConfig:\n"
            "    hidden: int = 16\n"
            f"    freeze_encoder: bool = {default}\n"
            "\n"
            "@dataclass\n"
            "class Config:\n"
            "    model: ModelConfig = field(default_factory=ModelConfig)\n"
        ),
        "train.py": (
            "import torch\n"
            "from torch import nn\n"
            "from settings import Config\n"
            "\n"
            "def build(mcfg):\n"
            "    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n"
            "    if mcfg.freeze_encoder:\n"
            "        model[0].requires_grad_(False)\n"
            "    return model\n"
            "\n"
            "def main(batches):\n"
            "    cfg = Config()\n"
            "    model = build(cfg.model)\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    for x in batches:\n"
            "        loss = model(x).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    main([torch.ones(4)])\n"
        ),
    }


@pytest.mark.parametrize("default, expected", [
    ("True", [("GM103", "settings.py", 6)]),
    ("False", []),
])
def test_switch_in_a_nested_dataclass_section(tmp_path: Path, default: str, expected: list) -> None:
    # the section's default_factory builds an object of the section's class: its defaults hold
    assert check(tmp_path, _nested_dataclass_switch(default), "GM103") == expected


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


@pytest.mark.parametrize("mode, expected", [("sum", [("GM401", "settings.py", 1)]), ("mean", [])])
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


def _yaml_config_script(opened: str, loader: str = "yaml.safe_load(f)") -> dict[str, str]:
    """The reduction chosen in a configuration file the program opens by a literal path."""
    return {"train.py": (
        "import json\n"
        "import yaml\n"
        "import torch.nn.functional as F\n"
        "\n"
        "def fit(model, batches, opt, cfg):\n"
        "    for g, x in batches:\n"
        "        out = model(g, x)\n"
        "        mask = g.ndata['mask']\n"
        "        loss = F.mse_loss(out[mask], x[mask], reduction=cfg['loss']['reduction'])\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "def main(model, batches, opt):\n"
        f"    with open({opened!r}) as f:\n"
        f"        cfg = {loader}\n"
        "    fit(model, batches, opt, cfg)\n"
    )}


@pytest.mark.parametrize("mode, expected", [("sum", [("GM401", "configs/train.yaml", 4)]), ("mean", [])])
def test_yaml_file_reduction(tmp_path: Path, mode: str, expected: list) -> None:
    files = {**_yaml_config_script("configs/train.yaml"),
             "configs/train.yaml": f"epochs: 10\nloss:\n  weight: 0.5\n  reduction: {mode}\n"}
    assert check(tmp_path, files, "GM401") == expected


def test_json_file_reduction(tmp_path: Path) -> None:
    files = {**_yaml_config_script("cfg.json", "json.load(f)"),
             "cfg.json": '{\n  "epochs": 10,\n  "loss": {\n    "reduction": "sum"\n  }\n}\n'}
    assert check(tmp_path, files, "GM401") == [("GM401", "cfg.json", 4)]
    # the finding names where the value is written: each key's line in the file
    found = config_file("cfg.json", "train.py", tmp_path)
    assert found is not None and found.lines[("loss", "reduction")] == 4
    (tmp_path / "cfg.yaml").write_text("epochs: 10\nloss:\n\n  reduction: sum\n")
    assert config_file("cfg.yaml", "train.py", tmp_path).lines[("loss", "reduction")] == 4


def test_toml_file_reduction(tmp_path: Path) -> None:
    files = {**_yaml_config_script("conf/train.toml", "tomllib.load(f)"),
             "conf/train.toml": '# run\nepochs = 10\n\n[loss]\nweight = 0.5\nreduction = "sum"\n'}
    files["train.py"] = "import tomllib\n" + files["train.py"].replace("open('conf/train.toml')",
                                                                      "open('conf/train.toml', 'rb')")
    assert check(tmp_path, files, "GM401") == [("GM401", "conf/train.toml", 6)]
    found = config_file("conf/train.toml", "train.py", tmp_path)
    assert found is not None and found.lines[("loss", "reduction")] == 6
    assert found.lines[("loss",)] == 4 and found.data["loss"]["weight"] == 0.5
    # dotted keys and quoted ones; a file that is not valid TOML is no configuration
    (tmp_path / "d.toml").write_text('[a]\nb.c = 1\n"d.e" = 2\n')
    lines = config_file("d.toml", "train.py", tmp_path).lines
    assert lines[("a", "b", "c")] == 2 and lines[("a", "d.e")] == 3
    (tmp_path / "bad.toml").write_text("[a\nb = \n")
    assert config_file("bad.toml", "train.py", tmp_path) is None


def _toml_weights(key: str, guard: bool) -> dict[str, str]:
    """A trainer that reads an optional term's weight from a TOML table, as a float."""
    add = "        if self.w_vis > 0:\n            loss = loss + self.w_vis * F.l1_loss(out, x)\n" if guard \
        else "        loss = loss + self.w_vis * F.l1_loss(out, x)\n"
    return {
        "configs/run.toml": "[loss]\nmask_weight = 1.0\nvisible_weight = 0.0\n",
        "train.py": (
            "import tomllib\n"
            "import torch.nn.functional as F\n"
            "\n"
            "class Trainer:\n"
            "    def __init__(self, model, opt, cfg):\n"
            "        self.model, self.opt = model, opt\n"
            "        self.w_mask = float(cfg['loss'].get('mask_weight', 1.0))\n"
            f"        self.w_vis = float(cfg['loss'].get({key!r}, 1.0))\n"
            "\n"
            "    def step(self, x):\n"
            "        out = self.model(x)\n"
            "        loss = self.w_mask * F.mse_loss(out, x)\n"
            f"{add}"
            "        self.opt.zero_grad()\n"
            "        loss.backward()\n"
            "        self.opt.step()\n"
            "\n"
            "def main(model, opt, batches):\n"
            "    with open('configs/run.toml', 'rb') as f:\n"
            "        cfg = tomllib.load(f)\n"
            "    trainer = Trainer(model, opt, cfg)\n"
            "    for x in batches:\n"
            "        trainer.step(x)\n"
        ),
    }


@pytest.mark.parametrize("key, guard, expected", [
    # a key no configuration sets, a letter away from one it does: reported where it is read
    ("visible_weights", True, [("GM402", "train.py", 8)]),
    ("visible_weights", False, [("GM402", "train.py", 8)]),
    # the configured zero switches off a term added only when its weight is positive
    ("visible_weight", True, []),
    # unguarded, the configured zero is reported where it is written
    ("visible_weight", False, [("GM402", "configs/run.toml", 3)]),
])
def test_weight_read_by_a_misspelt_key_of_a_toml_table(tmp_path: Path, key: str, guard: bool,
                                                        expected: list) -> None:
    assert check(tmp_path, _toml_weights(key, guard), "GM402") == expected


def test_config_files_read_as_bounded_data_inside_the_tree(tmp_path: Path) -> None:
    """Four files the program opens, none followed: out of the tree, a link out of it, over
    the size bound, and a tag that would run a command (parsed as data, so it runs nothing)."""
    tree = tmp_path / "tree"
    setting = "loss:\n  reduction: sum\n"
    (tmp_path / "outside.yaml").write_text(setting)
    (tmp_path / "real.yaml").write_text(setting)
    files = _yaml_config_script("../outside.yaml")
    opened = ["linked.yaml", "big.yaml", "tagged.yaml"]
    files["train.py"] += "".join(
        f"\ndef main_{n}(model, batches, opt):\n    fit(model, batches, opt, yaml.safe_load(open({name!r})))\n"
        for n, name in enumerate(opened))
    files["big.yaml"] = setting + "# padding\n" * 40_000
    files["tagged.yaml"] = f"loss: !!python/object/apply:os.system ['touch {tmp_path / 'ran'}']\n"
    # nested past what PyYAML's recursive composer survives: skipped, no internal error
    files["train.py"] += "\ndef main_deep(model, batches, opt):\n    fit(model, batches, opt, yaml.safe_load(open('deep.yaml')))\n"
    files["deep.yaml"] = "loss: " + "[" * 50_000 + "]" * 50_000 + "\n"
    tree.mkdir()
    (tree / "linked.yaml").symlink_to(tmp_path / "real.yaml")
    assert check(tree, files, "GM401") == []
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("path", [
    "Path(__file__).resolve().parents[1] / 'configs' / 'train.yaml'",
    "os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'configs', 'train.yaml')",
    "str(Path(__file__).parent.parent.joinpath('configs', 'train.yaml'))",
    "os.path.dirname(__file__) + '/../configs/train.yaml'",
    "str(Path('configs/other.yaml').parent / 'train.yaml')",  # a literal path's folder
])
def test_config_file_found_from_the_scripts_own_path(tmp_path: Path, path: str) -> None:
    """The file is named by the script's place in the tree; an argparse default holds it."""
    script = _yaml_config_script("PLACEHOLDER")["train.py"]
    script = "import os\nfrom pathlib import Path\nimport argparse\n" + script.replace(
        "    with open('PLACEHOLDER') as f:\n",
        f"    parser = argparse.ArgumentParser()\n    parser.add_argument('--config', default={path})\n"
        "    with open(parser.parse_args().config) as f:\n")
    files = {"src/train.py": script, "configs/train.yaml": "loss:\n  reduction: sum\n"}
    assert check(tmp_path, files, "GM401") == [("GM401", "configs/train.yaml", 2)]


def test_a_path_above_the_tree_is_not_followed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train.yaml").write_text("loss:\n  reduction: sum\n")
    files = _yaml_config_script("PLACEHOLDER")
    files["train.py"] = "from pathlib import Path\n" + files["train.py"].replace(
        "open('PLACEHOLDER')", "open(Path(__file__).resolve().parents[1] / 'configs' / 'train.yaml')")
    tree.mkdir()
    assert check(tree, files, "GM401") == []


def test_a_finding_at_a_configuration_line_follows_the_file(tmp_path: Path) -> None:
    """A finding reported at the YAML line that sets the value: kept runs are not reused once
    the file changes, and a `# noqa` comment on that line suppresses it."""
    files = {"train.py": (
        "import pytorch_lightning as pl\nimport yaml\n"
        "def main(module, data):\n"
        "    cfg = yaml.safe_load(open('cfg.yaml'))\n"
        "    pl.Trainer(precision=cfg['precision']).fit(module, data)\n"),
        "cfg.yaml": "precision: bf16-true\n"}
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)

    def found() -> list:
        proc = run_cli("check", ".", "--format", "json", "--exit-zero", "--select", "GM301", cwd=tmp_path)
        return [(f["path"], f["line"]) for f in json.loads(proc.stdout)["findings"]]

    assert found() == [("cfg.yaml", 1)]
    assert found() == [("cfg.yaml", 1)]  # the kept run
    (tmp_path / "cfg.yaml").write_text("precision: bf16-mixed\n")
    assert found() == []
    (tmp_path / "cfg.yaml").write_text("precision: bf16-true  # noqa: GM301\n")
    assert found() == []
    # inside a quoted YAML string the same text is no comment
    assert parse_config_ignores("a: 'x # noqa: GM301'\nb: 1 # noqa: GM301\n") == {2: frozenset({"GM301"})}


def _best_configs(default: str, reduction: str) -> dict[str, str]:
    """Options overwritten by the section of a YAML file a run-time key picks, with `setattr`
    over its items, in a function that takes and returns the options (GraphMAE's
    `load_best_configs`); the loss reads the option in another function."""
    return {
        "configs.yml": f"cora:\n  lr: 0.01\n  reduction: {reduction}\npubmed:\n  lr: 0.001\n",
        "train.py": (
            "import argparse\n"
            "import yaml\n"
            "import torch.nn.functional as F\n"
            "\n"
            "def load_best_configs(args, path):\n"
            "    with open(path) as f:\n"
            "        configs = yaml.safe_load(f)\n"
            "    configs = configs[args.dataset]\n"
            "    for k, v in configs.items():\n"
            "        setattr(args, k, v)\n"
            "    return args\n"
            "\n"
            "def fit(model, batches, opt, args):\n"
            "    for g, x in batches:\n"
            "        out = model(g, x)\n"
            "        mask = g.ndata['mask']\n"
            "        loss = F.mse_loss(out[mask], x[mask], reduction=args.reduction)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "\n"
            "def main(model, batches, opt):\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--dataset', default='cora')\n"
            f"    parser.add_argument('--reduction', default={default!r})\n"
            "    args = load_best_configs(parser.parse_args(), 'configs.yml')\n"
            "    fit(model, batches, opt, args)\n"
        ),
    }


@pytest.mark.parametrize("default, reduction, expected", [
    ("mean", "sum", [("GM401", "configs.yml", 3)]), ("sum", "mean", [])])
def test_options_set_in_bulk_from_a_file_section(tmp_path: Path, default: str, reduction: str,
                                                 expected: list) -> None:
    # the file's value replaces the option's default where the file sets the key
    assert check(tmp_path, _best_configs(default, reduction), "GM401") == expected


def _sectioned_dataclasses(default: str, reduction: str) -> dict[str, str]:
    """Nested dataclass sections overwritten field by field from a TOML file's tables, the
    section object picked by the table's name (`setattr(getattr(cfg, section), key, value)`)."""
    return {
        "overrides.toml": f"[train]\nepochs = 3\nreduction = \"{reduction}\"\n",
        "train.py": (
            "import tomllib\n"
            "from dataclasses import dataclass, field\n"
            "import torch.nn.functional as F\n"
            "\n"
            "@dataclass\n"
            "class TrainCfg:\n"
            "    epochs: int = 10\n"
            f"    reduction: str = {default!r}\n"
            "\n"
            "@dataclass\n"
            "class Config:\n"
            "    train: TrainCfg = field(default_factory=TrainCfg)\n"
            "\n"
            "def apply_overrides(cfg, overrides):\n"
            "    for section, values in overrides.items():\n"
            "        sub = getattr(cfg, section)\n"
            "        for key, value in values.items():\n"
            "            setattr(sub, key, value)\n"
            "    return cfg\n"
            "\n"
            "def load_config():\n"
            "    cfg = Config()\n"
            "    with open('overrides.toml', 'rb') as fh:\n"
            "        apply_overrides(cfg, tomllib.load(fh))\n"
            "    return cfg\n"
            "\n"
            "def fit(model, batches, opt, cfg):\n"
            "    for g, x in batches:\n"
            "        out = model(g, x)\n"
            "        mask = g.ndata['mask']\n"
            "        loss = F.mse_loss(out[mask], x[mask], reduction=cfg.train.reduction)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "\n"
            "def main(model, batches, opt):\n"
            "    fit(model, batches, opt, load_config())\n"
        ),
    }


@pytest.mark.parametrize("default, reduction, expected", [
    ("mean", "sum", [("GM401", "overrides.toml", 3)]), ("sum", "mean", [])])
def test_dataclass_sections_set_in_bulk_from_a_file(tmp_path: Path, default: str, reduction: str,
                                                    expected: list) -> None:
    assert check(tmp_path, _sectioned_dataclasses(default, reduction), "GM401") == expected


def _weighted_loop(weights: str) -> str:
    """A training loop (in a function of ``model``, ``loader``, ``opt``) whose loss weighs its two
    terms by ``weights``' ``w_rec`` and ``w_sce``."""
    return (
        "    for x in loader:\n"
        "        recon = model(x)\n"
        "        sce = (1 - F.cosine_similarity(recon, x)).mean()\n"
        f"        loss = {weights}.w_rec * F.mse_loss(recon, x) + {weights}.w_sce * sce\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )


def _attribute_config(load: str, yaml_weight: str) -> dict[str, str]:
    """A weight read as an attribute of a mapping made by a configuration library."""
    return {
        "configs/train.yaml": f"loss:\n  w_rec: 1.0\n  w_sce: {yaml_weight}\n",
        "train.py": (
            "import torch.nn.functional as F\n"
            "import yaml\n"
            "from easydict import EasyDict\n"
            "from omegaconf import OmegaConf\n"
            "\n"
            "def main(model, loader, opt):\n"
            f"    {load}\n"
            + _weighted_loop("cfg.loss")
        ),
    }


@pytest.mark.parametrize("load, yaml_weight, expected", [
    ("cfg = OmegaConf.load('configs/train.yaml')", "0.0", [("GM402", "configs/train.yaml", 3)]),
    ("cfg = OmegaConf.load('configs/train.yaml')", "0.25", []),
    # a later mapping's keys win, nested ones key by key
    ("cfg = OmegaConf.merge(OmegaConf.load('configs/train.yaml'), "
     "OmegaConf.create({'loss': {'w_sce': 0.5}}))", "0.0", []),
    ("cfg = OmegaConf.merge(OmegaConf.load('configs/train.yaml'), "
     "OmegaConf.create({'loss': {'w_sce': 0.0}}))", "0.25", [("GM402", "train.py", 7)]),
    ("cfg = EasyDict(yaml.safe_load(open('configs/train.yaml')))", "0.0",
     [("GM402", "configs/train.yaml", 3)]),
])
def test_weights_read_as_attributes_of_a_configuration_library_mapping(
        tmp_path: Path, load: str, yaml_weight: str, expected: list) -> None:
    assert check(tmp_path, _attribute_config(load, yaml_weight), "GM402") == expected


def _hydra_app(group_weight: str, own: str = "") -> dict[str, str]:
    """A Hydra entry point (the script in `src/`, the configs in `conf/` beside it) composing a
    loss group from its defaults list; ``own``: keys of the primary config itself."""
    return {
        "conf/config.yaml": "defaults:\n  - loss: mae\n  - _self_\noptim:\n  lr: 0.01\n" + own,
        "conf/loss/mae.yaml": f"w_rec: 1.0\nw_sce: {group_weight}\n",
        "src/train.py": (
            "import hydra\n"
            "import torch\n"
            "import torch.nn.functional as F\n"
            "\n"
            "def fit(model, loader, cfg):\n"
            "    opt = torch.optim.Adam(model.parameters(), lr=cfg.optim.lr)\n"
            + _weighted_loop("cfg.loss") + "\n"
            "@hydra.main(config_path='../conf', config_name='config', version_base=None)\n"
            "def main(cfg):\n"
            "    fit(torch.nn.Linear(4, 4), [torch.randn(8, 4)], cfg)\n"
        ),
    }


@pytest.mark.parametrize("group_weight, own, expected", [
    ("0.0", "", [("GM402", "conf/loss/mae.yaml", 2)]),
    ("0.25", "", []),
    # the primary config's own keys come last: they win over the group's
    ("0.0", "loss:\n  w_sce: 0.5\n", []),
    ("0.5", "loss:\n  w_sce: 0.0\n", [("GM402", "conf/config.yaml", 7)]),
])
def test_weights_of_a_hydra_config_composed_from_its_defaults_list(
        tmp_path: Path, group_weight: str, own: str, expected: list) -> None:
    assert check(tmp_path, _hydra_app(group_weight, own), "GM402") == expected


def _object_config(make: str, yaml_weight: str) -> dict[str, str]:
    """A weight read as an attribute of an object built from a loaded YAML mapping."""
    return {
        "configs/t.yaml": f"w_rec: 1.0\nw_sce: {yaml_weight}\n",
        "train.py": (
            "import argparse\n"
            "import dataclasses\n"
            "import yaml\n"
            "import torch.nn.functional as F\n"
            "\n"
            "@dataclasses.dataclass\n"
            "class Cfg:\n"
            "    w_rec: float = 1.0\n"
            "    w_sce: float = 0.5\n"
            "\n"
            "def main(model, loader, opt):\n"
            "    with open('configs/t.yaml') as fh:\n"
            f"        cfg = {make}\n"
            + _weighted_loop("cfg")
        ),
    }


@pytest.mark.parametrize("make, yaml_weight, expected", [
    ("argparse.Namespace(**yaml.safe_load(fh))", "0.0", [("GM402", "configs/t.yaml", 2)]),
    ("argparse.Namespace(**yaml.safe_load(fh))", "0.25", []),
    ("Cfg(**yaml.safe_load(fh))", "0.0", [("GM402", "configs/t.yaml", 2)]),
    # a copy with other fields changed keeps the loaded ones
    ("dataclasses.replace(Cfg(**yaml.safe_load(fh)), w_rec=2.0)", "0.0",
     [("GM402", "configs/t.yaml", 2)]),
    ("dataclasses.replace(Cfg(**yaml.safe_load(fh)), w_sce=0.5)", "0.0", []),
])
def test_weights_of_objects_built_from_a_loaded_mapping(
        tmp_path: Path, make: str, yaml_weight: str, expected: list) -> None:
    assert check(tmp_path, _object_config(make, yaml_weight), "GM402") == expected


def _named_config(reduction: str) -> dict[str, str]:
    """Defaults deep-merged with a JSON file that only the command line names (no default)."""
    return {
        "configs/run.json": '{\n  "train": {\n    "reduction": "%s"\n  }\n}\n' % reduction,
        "train.py": (
            "import argparse\n"
            "import copy\n"
            "import json\n"
            "\n"
            "DEFAULTS = {'train': {'reduction': 'mean', 'lr': 0.1}}\n"
            "\n"
            "def merge(base, override):\n"
            "    out = copy.deepcopy(base)\n"
            "    for key, value in override.items():\n"
            "        if isinstance(value, dict) and isinstance(out.get(key), dict):\n"
            "            out[key] = merge(out[key], value)\n"
            "        else:\n"
            "            out[key] = value\n"
            "    return out\n"
            "\n"
            "def load():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--config')\n"
            "    args = parser.parse_args()\n"
            "    cfg = copy.deepcopy(DEFAULTS)\n"
            "    if args.config:\n"
            "        with open(args.config) as fh:\n"
            "            cfg = merge(cfg, json.load(fh))\n"
            "    return cfg\n"
            "\n"
            "def fit(model, batches, opt):\n"
            "    cfg = load()\n"
            "    reduction = cfg['train']['reduction']\n"
            "    for x, mask in batches:\n"
            "        out = model(x)\n"
            "        err = (out[mask] - x[mask]) ** 2\n"
            "        if reduction == 'sum':\n"
            "            loss = err.sum()\n"
            "        else:\n"
            "            loss = err.mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


@pytest.mark.parametrize("reduction, expected", [("sum", [("GM401", "configs/run.json", 3)]),
                                                 ("mean", [])])
def test_file_named_on_the_command_line(tmp_path: Path, reduction: str, expected: list) -> None:
    """`open(args.config)` of an option without a default may be any JSON file of the tree; the
    file's keys reach the defaults through a deep merge written as a loop over its items."""
    assert check(tmp_path, _named_config(reduction), "GM401") == expected


def _transforms(configured: str) -> dict[str, str]:
    return {"data.py": (
        "import dgl\n"
        "\n"
        "REGISTRY = {}\n"
        "CONFIG = {'transforms': %s}\n"
        "\n"
        "def register(name):\n"
        "    def deco(fn):\n"
        "        REGISTRY[name] = fn\n"
        "        return fn\n"
        "    return deco\n"
        "\n"
        "@register('self_loop')\n"
        "def add_loops(g):\n"
        "    return dgl.add_self_loop(g)\n"
        "\n"
        "def build(src, dst):\n"
        "    g = dgl.graph((src, dst))\n"
        "    g = dgl.add_self_loop(g)\n"
        "    for name in CONFIG['transforms']:\n"
        "        g = REGISTRY[name](g)\n"
        "    return g\n" % configured
    )}


@pytest.mark.parametrize("configured, expected", [("['self_loop']", [("GM501", "data.py", 14)]),
                                                  ("[]", [])])
def test_loop_over_an_empty_configured_list_never_runs(tmp_path: Path, configured: str,
                                                       expected: list) -> None:
    """The transforms a configured list names run in a loop over it: none when it is empty on
    every configured run."""
    assert check(tmp_path, _transforms(configured), "GM501") == expected


def test_tree_configs_a_path_may_name(tmp_path: Path) -> None:
    """The files a command-line path may be: of the loader's kind, outside hidden folders and
    virtual environments; in a tree of many data files, only those whose path says
    configuration, and none if still too many."""
    (tmp_path / "src" / "configs").mkdir(parents=True)
    (tmp_path / "src" / "configs" / "a.json").write_text("{}")
    (tmp_path / "src" / "configs" / "b.yaml").write_text("a: 1\n")
    (tmp_path / "src" / ".hidden").mkdir()
    (tmp_path / "src" / ".hidden" / "c.json").write_text("{}")
    (tmp_path / "src" / "env").mkdir()
    (tmp_path / "src" / "env" / "pyvenv.cfg").write_text("")
    (tmp_path / "src" / "env" / "d.json").write_text("{}")
    assert tree_configs(tmp_path, ["src/train.py"], {"json"}) == ["src/configs/a.json"]
    assert tree_configs(tmp_path, ["src/train.py"], {"yaml"}) == ["src/configs/b.yaml"]
    (tmp_path / "src" / "data").mkdir()
    for i in range(MAX_CANDIDATES):
        (tmp_path / "src" / "data" / f"sample{i}.json").write_text("{}")
    assert tree_configs(tmp_path, ["src/train.py"], {"json"}) == ["src/configs/a.json"]
    for i in range(MAX_CANDIDATES):
        (tmp_path / "src" / "configs" / f"run{i}.json").write_text("{}")
    assert tree_configs(tmp_path, ["src/train.py"], {"json"}) == []


def _inherited_precision(precision: str) -> dict[str, str]:
    """An experiment file naming its base in `defaults:`, composed by the program's own loader
    (recursive, over a loop of rebinding merges); the autocast flag a comparison stored in a
    name."""
    return {
        "configs/base.yaml": "train:\n  precision: bf16\n  lr: 0.1\n",
        "configs/exp/run.yaml": f"defaults: [../base.yaml]\ntrain:\n  precision: {precision}\n",
        "train.py": (
            "import argparse\n"
            "import os\n"
            "import torch\n"
            "import yaml\n"
            "\n"
            "def merge(base, over):\n"
            "    out = dict(base)\n"
            "    for k, v in over.items():\n"
            "        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v\n"
            "    return out\n"
            "\n"
            "def load(path):\n"
            "    with open(path) as fh:\n"
            "        raw = yaml.safe_load(fh) or {}\n"
            "    merged = {}\n"
            "    for parent in raw.pop('defaults', []):\n"
            "        merged = merge(merged, load(os.path.join(os.path.dirname(path), parent)))\n"
            "    return merge(merged, raw)\n"
            "\n"
            "def fit(model, batches, opt):\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--config', required=True)\n"
            "    cfg = load(parser.parse_args().config)\n"
            "    amp = cfg['train'].get('precision', 'fp32') == 'bf16'\n"
            "    for x, mask in batches:\n"
            "        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=amp):\n"
            "            out = model(x)\n"
            "            loss = ((out[mask] - x[mask]) ** 2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


@pytest.mark.parametrize("precision, expected", [("fp32", []),
                                                   ("bf16", [("GM301", "configs/exp/run.yaml", 3)])])
def test_autocast_switched_by_an_inherited_setting(tmp_path: Path, precision: str, expected: list) -> None:
    """The base file (bf16) is a set of defaults, not a run: the experiment file composed over
    it decides the `enabled=` flag, and a flag false on every configured run leaves the
    autocast off; a flag its setting turns on is reported at that setting."""
    assert check(tmp_path, _inherited_precision(precision), "GM301") == expected


def _loss_built_from_a_section() -> dict[str, str]:
    """A loss object whose constructor receives a configuration section unpacked
    (``Recon(**cfg["loss"])``); its ``reduction`` is the section's entry, else the default."""
    return {"train.py": (
        "import yaml\n"
        "import torch.nn.functional as F\n"
        "\n"
        "class Recon:\n"
        "    def __init__(self, weight=1.0, reduction='mean'):\n"
        "        self.weight = weight\n"
        "        self.reduction = reduction\n"
        "\n"
        "    def __call__(self, pred, target):\n"
        "        return self.weight * F.mse_loss(pred, target, reduction=self.reduction)\n"
        "\n"
        "def fit(model, batches, opt, crit):\n"
        "    for g, x in batches:\n"
        "        out = model(g, x)\n"
        "        mask = g.ndata['mask']\n"
        "        loss = crit(out[mask], x[mask])\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "def main(model, batches, opt):\n"
        "    with open('configs/train.yaml') as f:\n"
        "        cfg = yaml.safe_load(f)\n"
        "    fit(model, batches, opt, Recon(**cfg['loss']))\n"
    )}


@pytest.mark.parametrize("section, expected", [
    ("loss:\n  weight: 0.5\n  reduction: sum\n", [("GM401", "configs/train.yaml", 3)]),
    ("loss:\n  weight: 0.5\n", []),  # the key left out: the constructor's default
])
def test_a_section_unpacked_into_a_constructor_gives_its_parameters(
        tmp_path: Path, section: str, expected: list) -> None:
    files = {**_loss_built_from_a_section(), "configs/train.yaml": section}
    assert check(tmp_path, files, "GM401") == expected


_REGISTRY = (
    "class Registry:\n"
    "    def __init__(self):\n"
    "        self._items = {}\n"
    "\n"
    "    def register(self, name):\n"
    "        def deco(obj):\n"
    "            self._items[name] = obj\n"
    "            return obj\n"
    "        return deco\n"
    "\n"
    "    def build(self, section, **extra):\n"
    "        kwargs = dict(section)\n"
    "        cls = self._items[kwargs.pop('name')]\n"
    "        return cls(**kwargs, **extra)\n"
    "\n"
    "MODELS = Registry()\n"
    "LOSSES = Registry()\n"
)


def _registry_pipeline() -> dict[str, str]:
    """Objects built by name from configuration sections through registry objects: a loss
    whose weight and reduction are the section's (set by a tuple assignment), a model whose
    encoder a setting freezes, and an optimizer over weight-decay groups of the model."""
    return {
        "registry.py": _REGISTRY,
        "parts.py": (
            "import torch\n"
            "import torch.nn.functional as F\n"
            "from registry import LOSSES, MODELS\n"
            "\n"
            "@LOSSES.register('recon')\n"
            "class Recon:\n"
            "    def __init__(self, weight=1.0, reduction='mean'):\n"
            "        self.weight, self.reduction = weight, reduction\n"
            "\n"
            "    def __call__(self, pred, target):\n"
            "        return self.weight * F.mse_loss(pred, target, reduction=self.reduction)\n"
            "\n"
            "@MODELS.register('net')\n"
            "class Net(torch.nn.Module):\n"
            "    def __init__(self, hidden=8):\n"
            "        super().__init__()\n"
            "        self.encoder = torch.nn.Linear(4, hidden)\n"
            "        self.decoder = torch.nn.Linear(hidden, 4)\n"
            "\n"
            "    def forward(self, g, x):\n"
            "        return self.decoder(self.encoder(x))\n"
        ),
        "train.py": (
            "import yaml\n"
            "import torch\n"
            "from registry import LOSSES, MODELS\n"
            "import parts  # noqa: F401  (registers)\n"
            "\n"
            "def groups(model):\n"
            "    decay = [p for n, p in model.named_parameters() if p.ndim > 1]\n"
            "    plain = [p for n, p in model.named_parameters() if p.ndim <= 1]\n"
            "    return torch.optim.AdamW([{'params': decay}, {'params': plain, 'weight_decay': 0.0}])\n"
            "\n"
            "def main(batches):\n"
            "    with open('configs/train.yaml') as f:\n"
            "        cfg = yaml.safe_load(f)\n"
            "    model = MODELS.build(cfg['model'])\n"
            "    if cfg['train'].get('freeze_encoder', False):\n"
            "        model.encoder.requires_grad_(False)\n"
            "    opt = groups(model)\n"
            "    crit = LOSSES.build(cfg['loss'])\n"
            "    for g, x in batches:\n"
            "        mask = g.ndata['mask']\n"
            "        loss = crit(model(g, x)[mask], x[mask])\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


@pytest.mark.parametrize("setting, code, expected", [
    ("loss:\n  name: recon\n  reduction: sum\n", "GM401", [("GM401", "configs/train.yaml", 3)]),
    ("loss:\n  name: recon\n  weight: 0.0\n", "GM402", [("GM402", "configs/train.yaml", 3)]),
    ("loss:\n  name: recon\n", "GM401,GM402,GM103", []),
    ("loss:\n  name: recon\ntrain:\n  freeze_encoder: true\n", "GM103", [("GM103", "configs/train.yaml", 4)]),
])
def test_objects_built_by_name_through_registry_objects_take_their_sections(
        tmp_path: Path, setting: str, code: str, expected: list) -> None:
    files = {**_registry_pipeline(), "configs/train.yaml": "model:\n  name: net\n" + setting}
    expected = [(rule, path, line + 2 if path.endswith(".yaml") else line) for rule, path, line in expected]
    assert check(tmp_path, files, code) == expected


def _sum_switched_by_callers(mode: str) -> dict[str, str]:
    """A loss that sums under `if reduction == "sum":`, reached from a criterion object whose
    reduction a settings module gives, and from a plain loop that leaves the default."""
    return {
        "settings.py": f"LOSS = {{'reduction': '{mode}'}}\n",
        "train.py": (
            "from settings import LOSS\n"
            "\n"
            "def sce(x, y, reduction='mean'):\n"
            "    loss = (x - y).pow(2).sum(-1)\n"
            "    if reduction == 'sum':\n"
            "        return loss.sum()\n"
            "    return loss.mean()\n"
            "\n"
            "class Crit:\n"
            "    def __init__(self, reduction='mean'):\n"
            "        self.reduction = reduction\n"
            "\n"
            "    def __call__(self, pred, target):\n"
            "        return sce(pred, target, self.reduction)\n"
            "\n"
            "def fit(model, batches, opt):\n"
            "    crit = Crit(**LOSS)\n"
            "    for g, x in batches:\n"
            "        mask = g.ndata['mask']\n"
            "        loss = crit(model(g, x)[mask], x[mask])\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "\n"
            "def reference(model, batches, opt):\n"
            "    for g, x in batches:\n"
            "        mask = g.ndata['mask']\n"
            "        loss = sce(model(g, x)[mask], x[mask])\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


@pytest.mark.parametrize("mode, expected", [("sum", [("GM401", "settings.py", 1)]), ("mean", [])])
def test_a_sum_switched_on_by_the_calls_that_reach_it_is_reported_at_their_setting(
        tmp_path: Path, mode: str, expected: list) -> None:
    assert check(tmp_path, _sum_switched_by_callers(mode), "GM401") == expected


def test_a_batchnorm_freeze_switched_on_by_a_file_is_reported_at_its_setting(tmp_path: Path) -> None:
    train = (
        "import yaml\n"
        "import torch\n"
        "\n"
        "def train(model, opt, batches):\n"
        "    with open('configs/train.yaml') as f:\n"
        "        cfg = yaml.safe_load(f)\n"
        "    for x in batches:\n"
        "        model.train()\n"
        "        if cfg['trainer']['freeze_bn']:\n"
        "            for m in model.modules():\n"
        "                if isinstance(m, torch.nn.BatchNorm1d):\n"
        "                    m.eval()\n"
        "        loss = model(x).pow(2).mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    files = {"train.py": train, "configs/train.yaml": "trainer:\n  epochs: 3\n  freeze_bn: true\n"}
    assert check(tmp_path, files, "GM202") == [("GM202", "configs/train.yaml", 3)]


@pytest.mark.parametrize("prefixes, expected", [("[]", []), ("[enc]", [("GM103", "train.py", 7)])])
def test_a_freeze_by_name_prefixes_that_every_run_leaves_empty_never_runs(
        tmp_path: Path, prefixes: str, expected: list) -> None:
    train = (
        "import yaml\n"
        "import torch\n"
        "\n"
        "def freeze(model, prefixes):\n"
        "    for name, p in model.named_parameters():\n"
        "        if any(name.startswith(pre) for pre in prefixes):\n"
        "            p.requires_grad_(False)\n"
        "    return model\n"
        "\n"
        "def main(batches):\n"
        "    with open('configs/train.yaml') as f:\n"
        "        cfg = yaml.safe_load(f)\n"
        "    model = torch.nn.Sequential()\n"
        "    model.add_module('enc', torch.nn.Linear(4, 4))\n"
        "    freeze(model, cfg['freeze'])\n"
        "    opt = torch.optim.Adam(model.parameters())\n"
        "    for x in batches:\n"
        "        loss = model(x).pow(2).mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    files = {"train.py": train, "configs/train.yaml": f"freeze: {prefixes}\nlr: 0.01\n"}
    assert check(tmp_path, files, "GM103") == expected


def _per_type_weights(author: str) -> dict[str, str]:
    """Per-type loss weights in a YAML section, handed to a loss object by `**section`, read
    by each type's key in a loop over a dict of the per-type losses."""
    return {
        "config.yaml": f"loss:\n  weights:\n    paper: 1.0\n    author: {author}\n",
        "losses.py": (
            "import torch.nn.functional as F\n"
            "\n"
            "class PerTypeLoss:\n"
            "    def __init__(self, weights=None):\n"
            "        self.weights = dict(weights or {})\n"
            "\n"
            "    def __call__(self, recon, target):\n"
            "        per_type = {t: F.mse_loss(recon[t], target[t]) for t in target}\n"
            "        total = 0.0\n"
            "        for t, l in per_type.items():\n"
            "            w = self.weights.get(t, 1.0)\n"
            "            total = total + w * l\n"
            "        return total\n"
        ),
        "train.py": (
            "import yaml\n"
            "from losses import PerTypeLoss\n"
            "\n"
            "def main(model, batches, opt):\n"
            "    cfg = yaml.safe_load(open('config.yaml'))\n"
            "    criterion = PerTypeLoss(**cfg['loss'])\n"
            "    for g, x in batches:\n"
            "        loss = criterion(model(g, x), x)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    main(None, [], None)\n"
        ),
    }


@pytest.mark.parametrize("author, expected", [("0.0", [("GM402", "config.yaml", 4)]), ("0.5", [])])
def test_weight_looked_up_by_each_key_of_a_configured_table(tmp_path: Path, author: str, expected: list) -> None:
    assert check(tmp_path, _per_type_weights(author), "GM402") == expected
