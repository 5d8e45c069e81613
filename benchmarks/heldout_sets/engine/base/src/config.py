"""Config: dataclass defaults <- configs/*.json <- --key value CLI overrides."""
import argparse
import dataclasses
import json
import os
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Config:
    # data
    num_train: int = 400
    num_val: int = 80
    min_nodes: int = 10
    max_nodes: int = 20
    feat_dim: int = 16
    num_communities: int = 3
    # model
    num_hidden: int = 64
    num_layers: int = 2
    num_heads: int = 4
    mask_rate: float = 0.5
    feat_drop: float = 0.1
    attn_drop: float = 0.1
    loss_fn: str = "mse"
    sce_alpha: float = 2.0
    pretrain: bool = True
    # optimisation
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 32
    max_epochs: int = 50
    max_steps: int = 200
    eval_every: int = 50
    lr_gamma: float = 1.0
    log_every: int = 50
    loss_weights: dict = field(default_factory=lambda: {"rec": 1.0})
    # misc
    seed: int = 0
    out_dir: str = "runs/default"
    config: str = "configs/default.json"


def _flatten(d):
    flat = {}
    for k, v in d.items():
        if isinstance(v, dict) and k != "loss_weights":
            flat.update(_flatten(v))
        else:
            flat[k] = v
    return flat


def _coerce(value, default):
    if isinstance(default, bool):
        return str(value).lower() in ("1", "true", "yes")
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, dict):
        return json.loads(value)
    return value


def load_config(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=Config.config)
    known, rest = parser.parse_known_args(argv)
    cfg = Config()
    path = known.config if os.path.isabs(known.config) else os.path.join(ROOT, known.config)
    with open(path) as fh:
        file_values = _flatten(json.load(fh))
    names = {f.name for f in dataclasses.fields(Config)}
    for k, v in file_values.items():
        if k not in names:
            raise KeyError(f"unknown config key {k!r} in {path}")
        setattr(cfg, k, v)
    cfg.config = known.config
    # --key value overrides
    it = iter(rest)
    for tok in it:
        if not tok.startswith("--"):
            raise ValueError(f"unexpected argument {tok}")
        key = tok[2:].replace("-", "_")
        if key not in names:
            raise KeyError(f"unknown override --{key}")
        setattr(cfg, key, _coerce(next(it), getattr(Config(), key)))
    return cfg
