from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable

import yaml


@dataclass
class DataConfig:
    num_graphs: int = 600
    min_nodes: int = 10
    max_nodes: int = 30
    feat_dim: int = 16
    num_fields: int = 6
    num_classes: int = 3
    radius: float = 0.35
    noise: float = 0.05
    test_fraction: float = 0.2
    batch_size: int = 32


@dataclass
class ModelConfig:
    encoder: str = "gin"
    hidden_dim: int = 64
    num_layers: int = 2
    dropout: float = 0.1
    norm: str = "batchnorm"
    mask_rate: float = 0.5
    alpha_l: float = 2.0
    freeze_encoder: bool = False


@dataclass
class OptimConfig:
    name: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    scheduler: str = "cosine"


@dataclass
class TrainConfig:
    epochs: int = 30
    eval_every: int = 5
    log_every: int = 20
    ckpt_dir: str = "checkpoints"
    probe_epochs: int = 300
    probe_lr: float = 0.01
    probe_weight_decay: float = 1e-4


@dataclass
class Config:
    seed: int = 0
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


def _merge(obj: Any, values: dict) -> Any:
    for key, value in values.items():
        if not hasattr(obj, key):
            raise KeyError(f"unknown config key: {key}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current) and isinstance(value, dict):
            _merge(current, value)
        else:
            setattr(obj, key, value)
    return obj


def _apply_override(cfg: Config, override: str) -> None:
    key, _, raw = override.partition("=")
    *parents, leaf = key.strip().split(".")
    target = cfg
    for name in parents:
        target = getattr(target, name)
    if not hasattr(target, leaf):
        raise KeyError(f"unknown config key: {key}")
    setattr(target, leaf, yaml.safe_load(raw))


def load_config(path: str | None = None, overrides: Iterable[str] = ()) -> Config:
    cfg = Config()
    if path:
        with open(path) as fh:
            _merge(cfg, yaml.safe_load(fh) or {})
    for item in overrides:
        _apply_override(cfg, item)
    return cfg


def to_dict(cfg: Config) -> dict:
    return dataclasses.asdict(cfg)
