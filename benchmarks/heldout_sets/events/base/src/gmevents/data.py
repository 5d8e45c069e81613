"""Synthetic graph-classification set: small graphs of four structural families whose nodes carry
badly scaled continuous attributes and a categorical type."""
import random

import dgl
import numpy as np
import torch
from dgl.dataloading import GraphDataLoader
from torch.utils.data import Dataset

from .registry import TRANSFORMS

ATTR_DIM = 8
NUM_TYPES = 4
NUM_CLASSES = 4


@TRANSFORMS.register("add_self_loop")
def add_self_loop(g):
    return dgl.add_self_loop(g)


@TRANSFORMS.register("remove_self_loop")
def remove_self_loop(g):
    return dgl.remove_self_loop(g)


def family_edges(kind, n, rng):
    """Undirected edge list of one graph of family `kind` (0 ring+chords, 1 tree, 2 two
    communities, 3 ladder), with a few random rewirings."""
    edges = set()
    if kind == 0:
        edges |= {(i, (i + 1) % n) for i in range(n)}
        for _ in range(n // 5):
            a, b = rng.integers(0, n, 2)
            edges.add((a, b))
    elif kind == 1:
        edges |= {(i, int(rng.integers(0, i))) for i in range(1, n)}
    elif kind == 2:
        half = n // 2
        for i in range(n):
            for j in range(i + 1, n):
                p = 0.35 if (i < half) == (j < half) else 0.03
                if rng.random() < p:
                    edges.add((i, j))
        edges |= {(i, i + 1) for i in range(n - 1)} if len(edges) < n else set()
    else:
        half = n // 2
        edges |= {(i, i + 1) for i in range(half - 1)} | {(i, i + 1) for i in range(half, n - 1)}
        edges |= {(i, i + half) for i in range(half)}
    for _ in range(n // 3):
        a, b = rng.integers(0, n, 2)
        edges.add((a, b))
    edges = [(int(a), int(b)) for a, b in edges if a != b]
    src = [a for a, b in edges] + [b for a, b in edges]
    dst = [b for a, b in edges] + [a for a, b in edges]
    return src, dst


def node_table(kind, src, dst, n, rng, mix):
    """Raw attributes (smooth over the graph, structure dependent) and node types."""
    deg = np.bincount(np.asarray(dst, dtype=np.int64), minlength=n).astype(np.float64)
    z = rng.normal(size=(n, 3))
    for _ in range(2):
        agg = z.copy()
        np.add.at(agg, np.asarray(dst, dtype=np.int64), z[np.asarray(src, dtype=np.int64)])
        z = agg / (deg[:, None] + 1.0)
    nbr = np.zeros(n)
    np.add.at(nbr, np.asarray(dst, dtype=np.int64), deg[np.asarray(src, dtype=np.int64)])
    nbr = nbr / np.maximum(deg, 1.0)
    base = np.concatenate([np.log1p(deg)[:, None], np.log1p(nbr)[:, None], z], 1)
    attr = np.tanh(base @ mix["w"]) + mix["class"][kind] + 0.15 * rng.normal(size=(n, ATTR_DIM))
    attr = attr * mix["scale"] + mix["offset"]
    logits = mix["type_bias"][kind] + np.log1p(deg)[:, None] * mix["type_deg"] + rng.gumbel(size=(n, NUM_TYPES))
    return attr.astype(np.float32), logits.argmax(1)


def generate_graphs(dcfg):
    rng = np.random.default_rng(dcfg.data_seed)
    mix = {
        "w": rng.normal(0.0, 0.8, size=(5, ATTR_DIM)),
        "class": rng.normal(0.0, 0.1, size=(NUM_CLASSES, ATTR_DIM)),
        "scale": np.exp(rng.uniform(-1.0, 2.5, size=ATTR_DIM)),
        "offset": rng.uniform(-15.0, 15.0, size=ATTR_DIM),
        "type_bias": rng.normal(0.0, 0.3, size=(NUM_CLASSES, NUM_TYPES)),
        "type_deg": rng.normal(0.0, 1.0, size=NUM_TYPES),
    }
    graphs, labels = [], []
    for i in range(dcfg.num_graphs):
        kind = i % NUM_CLASSES
        n = int(rng.integers(dcfg.min_nodes, dcfg.max_nodes + 1))
        src, dst = family_edges(kind, n, rng)
        attr, types = node_table(kind, src, dst, n, rng, mix)
        g = dgl.graph((torch.tensor(src, dtype=torch.int64), torch.tensor(dst, dtype=torch.int64)), num_nodes=n)
        g.ndata["attr"] = torch.from_numpy(attr)
        g.ndata["type"] = torch.from_numpy(types).long()
        graphs.append(g)
        labels.append(kind)
    return graphs, labels


class FeatureStats:
    """Per-dimension attribute statistics over all nodes of the training graphs."""

    def __init__(self, graphs):
        attr = torch.cat([g.ndata["attr"] for g in graphs])
        self.mean = attr.mean(0, keepdim=True)
        self.std = attr.std(0, keepdim=True) + 1e-6


class GraphSet(Dataset):
    def __init__(self, name, graphs, labels, transforms=()):
        self.name = name
        self.graphs, self.labels = graphs, labels
        self.transforms = list(transforms)

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, i):
        g = self.graphs[i]
        for fn in self.transforms:
            g = fn(g)
        return g, self.labels[i]


class Collate:
    """Batch graphs and build the model input [standardised attributes | one-hot type]."""

    def __init__(self, stats):
        self.stats = stats

    def __call__(self, samples):
        graphs, labels = map(list, zip(*samples))
        bg = dgl.batch(graphs)
        attr = bg.ndata["attr"]
        attr = (attr - self.stats.mean) / self.stats.std
        onehot = torch.nn.functional.one_hot(bg.ndata["type"], NUM_TYPES).float()
        bg.ndata["feat"] = torch.cat([attr, onehot], 1)
        return bg, torch.tensor(labels)


def build_datasets(dcfg):
    graphs, labels = generate_graphs(dcfg)
    order = list(range(len(graphs)))
    random.shuffle(order)
    cut = int(len(order) * (1.0 - dcfg.test_frac))
    train_idx, test_idx = sorted(order[:cut]), sorted(order[cut:])
    transforms = [TRANSFORMS.get(name) for name in dcfg.get("transforms", [])]
    train = GraphSet("train", [graphs[i] for i in train_idx], [labels[i] for i in train_idx], transforms)
    test = GraphSet("test", [graphs[i] for i in test_idx], [labels[i] for i in test_idx], transforms)
    collate = Collate(FeatureStats(train.graphs))
    info = {"attr_dim": ATTR_DIM, "in_dim": ATTR_DIM + NUM_TYPES, "num_classes": NUM_CLASSES}
    return train, test, collate, info


def make_loader(dataset, collate, batch_size, shuffle):
    return GraphDataLoader(dataset, batch_size=batch_size, shuffle=shuffle, collate_fn=collate, drop_last=False)


def fixed_batches(dataset, collate, batch_size):
    """Pre-collated batches in dataset order (no sampler, no RNG)."""
    return [collate([dataset[i] for i in range(s, min(s + batch_size, len(dataset)))])
            for s in range(0, len(dataset), batch_size)]
