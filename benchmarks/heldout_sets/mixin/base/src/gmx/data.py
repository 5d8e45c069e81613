"""Synthetic molecule-like graphs: a random tree of 'atoms' plus a few ring closures; atom types follow a
class-dependent Markov chain along the tree; node features are noisy type embeddings plus a degree feature."""
from dataclasses import dataclass

import dgl
import numpy as np
import torch
from torch.utils.data import DataLoader


@dataclass
class Batch:
    graph: dgl.DGLGraph
    feat: torch.Tensor
    label: torch.Tensor


def _make_graph(rng, n, trans, emb):
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    types = np.zeros(n, dtype=np.int64)
    types[0] = rng.integers(0, len(emb))
    for i in range(1, n):
        types[i] = rng.choice(len(emb), p=trans[types[parent[i - 1]]])
    src, dst = list(range(1, n)), parent
    for _ in range(int(rng.integers(1, 4))):          # ring closures
        a, b = rng.choice(n, 2, replace=False)
        src.append(int(a))
        dst.append(int(b))
    g = dgl.to_bidirected(dgl.graph((src, dst), num_nodes=n))   # simple, no self loops
    deg = g.in_degrees().float().numpy()[:, None]
    x = emb[types] + 0.35 * rng.standard_normal((n, emb.shape[1])) + 0.3 * deg
    g.ndata["x"] = torch.tensor(x, dtype=torch.float32)
    return g


def build_dataset(cfg):
    """Returns (graphs, labels, splits). Features standardised with training-graph statistics; every graph
    gets its self loops here, once."""
    rng = np.random.default_rng(cfg.seed)
    emb = rng.standard_normal((cfg.n_types, cfg.feat_dim))
    trans = [rng.dirichlet(np.full(cfg.n_types, 0.4), size=cfg.n_types) for _ in range(cfg.n_classes)]
    graphs, labels = [], []
    for _ in range(cfg.n_graphs):
        c = int(rng.integers(0, cfg.n_classes))
        n = int(rng.integers(cfg.min_nodes, cfg.max_nodes + 1))
        graphs.append(_make_graph(rng, n, trans[c], emb))
        labels.append(c)
    perm = np.random.permutation(cfg.n_graphs)
    n_tr, n_va = int(0.6 * cfg.n_graphs), int(0.2 * cfg.n_graphs)
    splits = {"train": perm[:n_tr], "val": perm[n_tr:n_tr + n_va], "test": perm[n_tr + n_va:]}
    train_x = torch.cat([graphs[i].ndata["x"] for i in splits["train"]])
    mean, std = train_x.mean(0), train_x.std(0)
    for i, g in enumerate(graphs):
        g.ndata["x"] = (g.ndata["x"] - mean) / std
        graphs[i] = dgl.add_self_loop(g)
    return graphs, torch.tensor(labels), splits


class GraphSet(torch.utils.data.Dataset):
    def __init__(self, graphs, labels, index):
        self.graphs = [graphs[i] for i in index]
        self.labels = labels[torch.as_tensor(index)]

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, i):
        return self.graphs[i], self.labels[i]


def collate(items):
    graphs, labels = zip(*items)
    g = dgl.batch(graphs)
    return Batch(g, g.ndata["x"], torch.stack(labels))


def make_loaders(graphs, labels, splits, cfg, seed):
    gen = torch.Generator().manual_seed(seed)
    sets = {k: GraphSet(graphs, labels, v) for k, v in splits.items()}
    train = DataLoader(sets["train"], batch_size=cfg.batch_size, shuffle=True, collate_fn=collate, generator=gen)
    return train, sets


def heldout_masks(g, rate, seed):
    """Fixed per-graph masks of a held-out batch (same for every run and every evaluation)."""
    gen = torch.Generator().manual_seed(seed)
    return node_mask(g, rate, gen)


def node_mask(g, rate, gen):
    """Masks round(rate * n) nodes of every graph of the batch."""
    mask = torch.zeros(g.num_nodes(), dtype=torch.bool)
    start = 0
    for n in g.batch_num_nodes().tolist():
        k = max(1, int(round(rate * n)))
        mask[start + torch.randperm(n, generator=gen)[:k]] = True
        start += n
    return mask
