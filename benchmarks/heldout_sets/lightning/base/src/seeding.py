import os

import dgl
import pytorch_lightning as pl
import torch
from dgl.utils import set_num_threads


def seed_everything(seed, deterministic=True):
    """Seed python, numpy and torch (via Lightning) and DGL's own generator."""
    os.environ["PYTHONHASHSEED"] = str(seed)
    pl.seed_everything(seed, workers=True)
    dgl.seed(seed)
    if deterministic:
        # DGL's CPU message-passing kernels and some torch CPU kernels reduce
        # across threads in a nondeterministic order; one thread keeps reruns
        # bit-identical (the graphs are small, the cost is low).
        set_num_threads(1)
        torch.set_num_threads(1)
