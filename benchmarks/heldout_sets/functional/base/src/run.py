"""Entry point: stage 1 (GraphMAE pretraining) then stage 2 (linear probe)."""
import argparse
import json
import sys

from config import load_config
from state import seed_everything
import linear_probe
import pretrain


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--config", default=None)
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args(argv)
    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    if args.max_steps is not None:
        overrides.append(f"train.max_steps={args.max_steps}")
    cfg = load_config(overrides, args.config)
    seed_everything(cfg["seed"])
    rec, ckpt, data = pretrain.main(cfg)
    probe = linear_probe.main(cfg, ckpt, data)
    print(json.dumps({**rec, **probe}))


if __name__ == "__main__":
    main(sys.argv[1:])
