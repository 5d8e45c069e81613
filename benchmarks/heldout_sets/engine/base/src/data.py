"""Synthetic community-structured graph dataset (many small graphs)."""
import random

import dgl
import numpy as np
import torch
from dgl.dataloading import GraphDataLoader


def make_graph(rng, n_min, n_max, feat_dim, n_comm):
    n = rng.randint(n_min, n_max)
    comm = np.array([rng.randrange(n_comm) for _ in range(n)])
    src, dst = [], []
    for i in range(n):
        for j in range(i + 1, n):
            p = 0.45 if comm[i] == comm[j] else 0.02
            if rng.random() < p:
                src += [i, j]
                dst += [j, i]
    g = dgl.graph((torch.tensor(src, dtype=torch.int64), torch.tensor(dst, dtype=torch.int64)), num_nodes=n)
    # per-graph community prototypes + a fixed global offset/scale per dimension
    protos = np.random.normal(0.0, 1.5, size=(n_comm, feat_dim))
    offset = np.linspace(-4.0, 6.0, feat_dim)
    scale = np.linspace(0.5, 3.0, feat_dim)
    x = protos[comm] + 0.25 * np.random.normal(size=(n, feat_dim))
    g.ndata["feat"] = torch.tensor(x * scale + offset, dtype=torch.float32)
    return dgl.add_self_loop(g)


class SyntheticGraphs(torch.utils.data.Dataset):
    def __init__(self, num_graphs, cfg, seed_offset=0):
        rng = random.Random(random.random() + seed_offset)
        self.graphs = [make_graph(rng, cfg.min_nodes, cfg.max_nodes, cfg.feat_dim, cfg.num_communities)
                       for _ in range(num_graphs)]

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, idx):
        return self.graphs[idx]


class Normalizer:
    """Standardise node features with statistics of the training set."""

    def __init__(self, graphs):
        feats = torch.cat([g.ndata["feat"] for g in graphs], 0)
        self.mean = feats.mean(0)
        self.std = feats.std(0).clamp_min(1e-6)

    def __call__(self, graphs):
        bg = dgl.batch(graphs)
        feat = bg.ndata["feat"]
        bg.ndata["x"] = (feat - self.mean) / self.std
        return bg


def build_loaders(cfg):
    train_set = SyntheticGraphs(cfg.num_train, cfg, 0)
    val_set = SyntheticGraphs(cfg.num_val, cfg, 1)
    norm = Normalizer(train_set.graphs)
    train_loader = GraphDataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                                   drop_last=True, collate_fn=norm)
    val_loader = GraphDataLoader(val_set, batch_size=cfg.batch_size, shuffle=False, collate_fn=norm)
    return train_loader, val_loader, norm
