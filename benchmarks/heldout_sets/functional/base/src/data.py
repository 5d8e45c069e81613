"""Synthetic molecule-like graphs: chain backbone + ring closures, Markov atom types."""
import random

import dgl
import numpy as np
import torch


def _make_graph(cfg_data, rng_label):
    n = np.random.randint(cfg_data["min_nodes"], cfg_data["max_nodes"] + 1)
    T = cfg_data["num_types"]
    stay = 0.9 if rng_label else 0.4
    types = np.zeros(n, dtype=np.int64)
    types[0] = np.random.randint(T)
    for i in range(1, n):
        types[i] = types[i - 1] if np.random.rand() < stay else np.random.randint(T)
    src = list(range(n - 1))
    dst = list(range(1, n))
    for _ in range(n // 4):  # ring closures between same-type atoms preferred
        a, b = np.random.randint(n, size=2)
        if abs(a - b) > 2 and (types[a] == types[b] or np.random.rand() < 0.3):
            src.append(a)
            dst.append(b)
    g = dgl.graph((src + dst, dst + src), num_nodes=n)
    g = dgl.add_self_loop(g)
    return g, types


def build_dataset(cfg):
    d = cfg["data"]
    T, C = d["num_types"], d["num_cont"]
    proto = np.random.randn(T, C) * 2.0
    graphs, labels = [], []
    for i in range(d["num_graphs"]):
        label = i % 2
        g, types = _make_graph(d, label)
        onehot = np.eye(T)[types]
        # continuous "charge/mass"-like features: own type + neighbourhood
        A = g.adj_external(scipy_fmt="csr").astype(np.float64)
        deg = np.asarray(A.sum(1)).ravel()
        nbr = (A @ proto[types]) / deg[:, None]
        cont = 0.6 * proto[types] + 0.4 * nbr + 0.3 * np.random.randn(len(types), C)
        g.ndata["x"] = torch.tensor(np.concatenate([onehot, cont], 1), dtype=torch.float32)
        graphs.append(g)
        labels.append(label)
    n_val = int(len(graphs) * d["val_frac"])
    perm = np.random.permutation(len(graphs))
    val_idx, train_idx = perm[:n_val], perm[n_val:]
    train = [(graphs[i], labels[i]) for i in train_idx]
    val = [(graphs[i], labels[i]) for i in val_idx]
    return train, val


def feature_stats(dataset, num_types):
    x = torch.cat([g.ndata["x"] for g, _ in dataset], 0)
    cont = x[:, num_types:]
    return {"mean": cont.mean(0), "std": cont.std(0) + 1e-6}


def normalize(x, stats, num_types):
    x = x.clone()
    x[:, num_types:] = (x[:, num_types:] - stats["mean"]) / stats["std"]
    return x


def drop_edges(bg, p):
    """Edge-dropping augmentation; self loops are always kept."""
    if p <= 0:
        return bg
    src, dst = bg.edges()
    keep = (torch.rand(bg.num_edges()) >= p) | (src == dst)
    return dgl.edge_subgraph(bg, keep, relabel_nodes=False)


def make_collate(stats, num_types, edge_drop=0.0):
    def collate(items):
        graphs, labels = zip(*items)
        bg = dgl.batch(list(graphs))
        x = normalize(bg.ndata["x"], stats, num_types)
        bg = drop_edges(bg, edge_drop)
        return {"graph": bg, "x": x, "label": torch.tensor(labels)}

    return collate


def iterate_batches(dataset, batch_size, collate, shuffle=True):
    """Infinite iterator over collated mini-batches."""
    idx = list(range(len(dataset)))
    while True:
        if shuffle:
            random.shuffle(idx)
        for s in range(0, len(idx) - batch_size + 1, batch_size):
            yield collate([dataset[i] for i in idx[s:s + batch_size]])
