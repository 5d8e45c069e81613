"""Configuration: nested defaults, an optional YAML override file, dotted command-line overrides."""
import argparse
import copy
import os

import yaml

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULTS = {
    "seed": 0,
    "data": {
        "num_nodes": {"paper": 360, "author": 200, "subject": 20},
        "feat_dims": {"paper": 24, "author": 12, "subject": 6},
        "num_classes": 4,
        "latent_dim": 8,
        "cites_per_paper": 3,
        "authors_per_paper": 2,
        "split": [0.6, 0.2, 0.2],
        "self_loop": True,
    },
    "model": {
        "name": "hgmae",
        "cls": "HGMAE",
        "hidden": 32,
        "num_layers": 2,
        "dropout": 0.1,
        "mask_rate": {"paper": 0.5, "author": 0.5, "subject": 0.5},
        "encoder": {
            "_target_": "hgmae.models.layers.HeteroEncoder",
            "conv": {"_target_": "dgl.nn.GraphConv", "_partial_": True, "norm": "both",
                     "allow_zero_in_degree": True},
            "norm": {"_target_": "torch.nn.BatchNorm1d", "_partial_": True},
            "aggregate": "mean",
        },
        "decoder": {
            "_target_": "hgmae.models.layers.HeteroDecoder",
            "conv": {"_target_": "dgl.nn.GraphConv", "_partial_": True, "norm": "both",
                     "allow_zero_in_degree": True},
            "aggregate": "mean",
        },
        "freeze": [],
    },
    "loss": {
        "name": "sce",
        "alpha": 2.0,
        "reduction": "mean",
        "weights": {"paper": 1.0, "author": 0.5},
    },
    "aug": {"feat_noise": 0.1},
    "optim": {"_target_": "torch.optim.AdamW", "lr": 0.005, "weight_decay": 1e-4},
    "sched": {"_target_": "torch.optim.lr_scheduler.CosineAnnealingLR", "T_max": 80, "eta_min": 1e-4},
    "runner": {
        "mixed_precision": "no",
        "grad_accum_steps": 2,
        "max_grad_norm": 1.0,
        "world_size": 1,
        "backend": "gloo",
    },
    "trainer": {"epochs": 80, "eval_every": 15, "freeze_bn": False},
    "probe": {"epochs": 60, "lr": 0.02, "batch_size": 64},
}


def merge(base, override):
    """Recursive dict update (override wins); returns base."""
    for k, v in (override or {}).items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def set_dotted(cfg, key, value):
    node = cfg
    *parents, leaf = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value


def load_config(path=None, overrides=()):
    cfg = copy.deepcopy(DEFAULTS)
    if path:
        if not os.path.isabs(path):
            path = os.path.join(SRC, path)
        with open(path) as fh:
            merge(cfg, yaml.safe_load(fh))
    for item in overrides:
        key, _, raw = item.partition("=")
        set_dotted(cfg, key.strip(), yaml.safe_load(raw))
    return cfg


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="HGMAE pretraining")
    ap.add_argument("--config", default="configs/pretrain.yaml")
    ap.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. trainer.epochs=20")
    return ap.parse_args(argv)
