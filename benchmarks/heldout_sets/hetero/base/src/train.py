"""Pretrain HGMAE on the synthetic heterograph and report held-out reconstruction + linear probe.

usage: python src/train.py [--config configs/pretrain.yaml] [key.sub=value ...]
       python src/train.py runner.world_size=2          # DDP, gloo, one process per rank
"""
import os
import sys
import tempfile

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch.multiprocessing as mp  # noqa: E402

from hgmae.config import load_config, parse_args  # noqa: E402
from hgmae.trainer import run_worker  # noqa: E402


def main(argv=None):
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    world_size = cfg["runner"]["world_size"]
    cfg["runner"]["init_file"] = os.path.join(tempfile.mkdtemp(prefix="hgmae_dist_"), "init")
    if world_size > 1:
        mp.start_processes(run_worker, args=(world_size, cfg), nprocs=world_size, start_method="fork")
    else:
        run_worker(0, 1, cfg)


if __name__ == "__main__":
    main()
