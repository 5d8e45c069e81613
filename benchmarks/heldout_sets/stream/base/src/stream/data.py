"""Synthetic stochastic-block-model graph with community-dependent, badly scaled features."""
from types import SimpleNamespace

import dgl
import numpy as np
import torch

from .registry import register, lookup


@register("add_self_loop")
def _add_self_loop(g):
    return dgl.add_self_loop(g)


@register("remove_self_loop")
def _remove_self_loop(g):
    return dgl.remove_self_loop(g)


@register("to_simple")
def _to_simple(g):
    return dgl.to_simple(g, copy_ndata=True)


def sbm_edges(labels, p_in, p_out, rng):
    n = labels.shape[0]
    same = labels[:, None] == labels[None, :]
    prob = np.where(same, p_in, p_out)
    upper = np.triu(rng.random((n, n)) < prob, k=1)
    src, dst = np.nonzero(upper)
    return np.concatenate([src, dst]), np.concatenate([dst, src])


def smooth_latent(src, dst, n, k, rng, hops=3):
    """A k-dim latent per node, averaged over the graph a few times so neighbours agree."""
    z = rng.normal(size=(n, k))
    deg = np.bincount(dst, minlength=n) + 1.0
    for _ in range(hops):
        agg = z.copy()
        np.add.at(agg, dst, z[src])
        z = agg / deg[:, None]
    return (z - z.mean(0)) / z.std(0)


def raw_features(labels, latent, dim, num_blocks, noise, rng):
    centroids = rng.normal(0.0, 1.0, size=(num_blocks, dim))
    w1 = rng.normal(0.0, 1.0, size=(latent.shape[1], 16))
    w2 = rng.normal(0.0, 1.0 / 4.0, size=(16, dim))
    clean = centroids[labels] + 1.5 * np.tanh(latent @ w1) @ w2
    x = clean + noise * rng.normal(size=clean.shape)
    scale = np.exp(rng.uniform(-1.0, 2.5, size=dim))   # per-dimension units
    offset = rng.uniform(-20.0, 20.0, size=dim)
    return x * scale + offset


class Standardizer:
    """Feature statistics of the training nodes, applied to every node."""

    def __init__(self, x):
        self.mean = x.mean(0, keepdims=True)
        self.std = x.std(0, keepdims=True) + 1e-6

    def __call__(self, x):
        return (x - self.mean) / self.std


def split_nodes(num_nodes, train_frac):
    perm = np.random.permutation(num_nodes)
    cut = int(train_frac * num_nodes)
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def build_dataset(dcfg):
    rng = np.random.default_rng(dcfg.seed)
    labels = rng.integers(0, dcfg.num_blocks, size=dcfg.num_nodes)
    src, dst = sbm_edges(labels, dcfg.p_in, dcfg.p_out, rng)
    latent = smooth_latent(src, dst, dcfg.num_nodes, 4, rng)
    raw = raw_features(labels, latent, dcfg.feat_dim, dcfg.num_blocks, dcfg.noise, rng)

    train_idx, test_idx = split_nodes(dcfg.num_nodes, dcfg.train_frac)
    norm = Standardizer(raw[train_idx])
    feats = torch.tensor(norm(raw), dtype=torch.float32)

    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=dcfg.num_nodes)
    g = dgl.add_self_loop(g)
    for name in dcfg.transforms:
        g = lookup(name)(g)

    return SimpleNamespace(
        graph=g,
        feats=feats,
        labels=torch.from_numpy(labels).long(),
        train_idx=torch.from_numpy(train_idx).long(),
        test_idx=torch.from_numpy(test_idx).long(),
        num_classes=dcfg.num_blocks,
    )
