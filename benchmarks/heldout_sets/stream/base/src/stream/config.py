"""Configuration: module defaults <- JSON file <- command line, as a nested SimpleNamespace."""
import argparse
import copy
import json
from types import SimpleNamespace

DEFAULTS = {
    "seed": 0,
    "deterministic": True,
    "data": {
        "num_nodes": 2000,
        "num_blocks": 5,
        "feat_dim": 32,
        "p_in": 0.008,
        "p_out": 0.002,
        "noise": 0.5,
        "train_frac": 0.8,
        "seed": 11,
        "transforms": [],
    },
    "model": {
        "hidden": 64,
        "num_layers": 2,
        "feat_drop": 0.2,
        "mask_rate": 0.5,
        "alpha": 2.0,
        "latent_weight": 1.0,
        "ema_momentum": 0.99,
    },
    "train": {
        "steps": 200,
        "accum": 2,
        "lr": 1e-3,
        "weight_decay": 1e-4,
        "warmup": 20,
        "clip": 1.0,
        "precision": "fp32",
        "reduction": "mean",
        "eval_every": 50,
        "log_every": 25,
        "ckpt_dir": None,
    },
    "eval": {"mask_rate": 0.5, "mask_seed": 1234},
    "probe": {"epochs": 30, "lr": 1e-2, "batch_size": 64, "weight_decay": 1e-4},
}


def deep_merge(base, override):
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def to_namespace(obj):
    if isinstance(obj, dict):
        return SimpleNamespace(**{k: to_namespace(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [to_namespace(v) for v in obj]
    return obj


def _parse_value(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _set_dotted(tree, dotted, value):
    *parents, leaf = dotted.split(".")
    node = tree
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value


def load_config(argv=None):
    parser = argparse.ArgumentParser(description="GraphMAE pretraining + linear probe")
    parser.add_argument("--config", default=None, help="JSON file merged over the defaults")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted override, e.g. --set train.lr=1e-3")
    args = parser.parse_args(argv)

    tree = copy.deepcopy(DEFAULTS)
    if args.config:
        with open(args.config) as fh:
            tree = deep_merge(tree, json.load(fh))
    for item in args.set:
        key, _, value = item.partition("=")
        _set_dotted(tree, key, _parse_value(value))
    if args.seed is not None:
        tree["seed"] = args.seed
    if args.steps is not None:
        tree["train"]["steps"] = args.steps
    return to_namespace(tree)
