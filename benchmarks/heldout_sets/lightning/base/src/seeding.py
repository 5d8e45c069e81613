import os

import dgl
import pytorch_lightning as pl
from dgl.utils import set_num_threads


def seed_everything(seed, deterministic=True):
    """Seed python, numpy and torch (via Lightning) and DGL's own generator."""
    if deterministic:
        # DGL keeps one generator per OpenMP thread and its CPU kernels reduce in
        # thread order: run DGL on a single thread (set before seeding) so that
        # reruns are bit-identical. The graphs are small, the cost is low.
        set_num_threads(1)
    os.environ["PYTHONHASHSEED"] = str(seed)
    pl.seed_everything(seed, workers=True)
    dgl.seed(seed)
