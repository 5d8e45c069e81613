"""Tiny hydra-like config: nested dict defaults <- conf/base.json <- key.sub=value overrides."""
import copy
import json
import os

DEFAULTS = {
    "seed": 0,
    "out_dir": os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runs"),
    "data": {
        "num_graphs": 600,
        "min_nodes": 10,
        "max_nodes": 20,
        "num_types": 6,
        "num_cont": 4,
        "edge_drop": 0.1,
        "val_frac": 0.2,
    },
    "model": {
        "hidden": 64,
        "num_layers": 2,
        "mask_rate": 0.5,
        "ema_decay": 0.99,
    },
    "loss": {
        "name": "mse",
        "alpha": 2.0,
        "weights": {"recon": 1.0, "latent": 0.1},
    },
    "train": {
        "lr": 0.003,
        "weight_decay": 0.0,
        "batch_size": 64,
        "max_steps": 300,
        "warmup": 20,
        "clip": 5.0,
        "eval_every": 100,
    },
    "probe": {
        "steps": 300,
        "lr": 0.01,
        "freeze_encoder": True,
    },
}


def _merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v
    return dst


def _parse_value(s):
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        return s


def apply_override(cfg, item):
    key, _, value = item.partition("=")
    node = cfg
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = _parse_value(value)
    return cfg


def load_config(overrides=(), path=None):
    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conf", "base.json")
    if os.path.exists(path):
        with open(path) as f:
            _merge(cfg, json.load(f))
    for item in overrides:
        apply_override(cfg, item)
    return cfg
