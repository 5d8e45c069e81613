import random

import dgl
import numpy as np
import torch


def seed_all(seed):
    """Seed every RNG the pipeline touches: python, numpy (loader shuffle),
    torch (init, masks) and dgl (neighbour sampling)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    dgl.seed(seed)


def make_reproducible():
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
