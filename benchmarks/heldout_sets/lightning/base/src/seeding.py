import os

import dgl
import pytorch_lightning as pl
from dgl.utils import set_num_threads


def seed_everything(seed, deterministic=True):
    """Seed python, numpy and torch (via Lightning) and DGL's own generator."""
    os.environ["PYTHONHASHSEED"] = str(seed)
    pl.seed_everything(seed, workers=True)
    dgl.seed(seed)
    if deterministic:
        # DGL's CPU message-passing kernels reduce with OpenMP threads in a
        # nondeterministic order; a single thread keeps reruns bit-identical.
        set_num_threads(1)
