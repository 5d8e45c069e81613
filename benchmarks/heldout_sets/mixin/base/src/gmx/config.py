"""Nested dataclass configuration, a TOML override file and `--section.field value` flags."""
import argparse
import json
import tomllib
from dataclasses import dataclass, field, fields, asdict
from pathlib import Path


@dataclass
class DataCfg:
    n_graphs: int = 320
    min_nodes: int = 8
    max_nodes: int = 30
    n_types: int = 6
    feat_dim: int = 16
    n_classes: int = 3
    batch_size: int = 32
    seed: int = 7


@dataclass
class ModelCfg:
    encoder: str = "gcn"
    hidden: int = 64
    num_layers: int = 2
    norm: str = "batchnorm"
    bn_momentum: float = 0.1
    dropout: float = 0.1
    mask_rate: float = 0.5
    alpha: float = 2.0
    grad_checkpoint: bool = False


@dataclass
class OptimCfg:
    lr: float = 0.01
    weight_decay: float = 1e-4
    clip: float = 1.0
    warmup_steps: int = 10


@dataclass
class TrainCfg:
    seed: int = 0
    init_seed: int = 0
    epochs: int = 30
    accum_steps: int = 2
    precision: str = "fp32"
    reduction: str = "mean"
    ema_decay: float = 0.98
    eval_every: int = 10
    feat_noise: float = 0.0
    freeze: list = field(default_factory=list)
    freeze_encoder_epochs: int = 0
    init_from: str = ""


@dataclass
class Config:
    data: DataCfg = field(default_factory=DataCfg)
    model: ModelCfg = field(default_factory=ModelCfg)
    optim: OptimCfg = field(default_factory=OptimCfg)
    train: TrainCfg = field(default_factory=TrainCfg)


def _parse_value(text, default):
    if isinstance(default, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(default, (list, dict)):
        return json.loads(text)
    return type(default)(text)


def build_parser(cfg=None):
    cfg = cfg or Config()
    parser = argparse.ArgumentParser(description="graph-level GraphMAE pretraining")
    parser.add_argument("--config", default=str(Path(__file__).resolve().parent.parent / "configs" / "overrides.toml"))
    for section in fields(cfg):
        sub = getattr(cfg, section.name)
        for f in fields(sub):
            parser.add_argument(f"--{section.name}.{f.name}", dest=f"{section.name}.{f.name}", default=None,
                                metavar=type(getattr(sub, f.name)).__name__)
    return parser


def apply_overrides(cfg, overrides):
    for section, values in overrides.items():
        sub = getattr(cfg, section)
        for key, value in values.items():
            if not hasattr(sub, key):
                raise KeyError(f"unknown option {section}.{key}")
            setattr(sub, key, value)
    return cfg


def load_config(argv=None):
    args = build_parser().parse_args(argv)
    cfg = Config()
    if args.config and Path(args.config).exists():
        with open(args.config, "rb") as fh:
            apply_overrides(cfg, tomllib.load(fh))
    for dotted, text in vars(args).items():
        if "." not in dotted or text is None:
            continue
        section, key = dotted.split(".", 1)
        sub = getattr(cfg, section)
        setattr(sub, key, _parse_value(text, getattr(sub, key)))
    return cfg


def to_dict(cfg):
    return asdict(cfg)
