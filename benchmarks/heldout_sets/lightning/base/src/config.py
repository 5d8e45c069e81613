"""YAML config + command-line overrides.

    python src/train.py --seed 1 --max-steps 100 --set optim.lr=0.001 --set model.heads=2
"""
import argparse
import copy
from pathlib import Path

import yaml

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "graphmae.yaml"


def _set_dotted(cfg, dotted, raw):
    keys = dotted.split(".")
    node = cfg
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = yaml.safe_load(raw)


def load_config(argv=None):
    parser = argparse.ArgumentParser(description="GraphMAE pretraining")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    with open(args.config) as fh:
        cfg = copy.deepcopy(yaml.safe_load(fh))
    if args.seed is not None:
        cfg["seed"] = args.seed
    if args.max_steps is not None:
        cfg["trainer"]["max_steps"] = args.max_steps
    for item in args.set:
        key, _, value = item.partition("=")
        _set_dotted(cfg, key, value)
    return cfg
