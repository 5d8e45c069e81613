"""Helpers for notebook.py (kept out of the notebook so they can be imported by minimal.py too)."""
import copy

import dgl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GraphConv


# ----------------------------------------------------------------------------- data
def make_point_cloud(n, feat_dim, n_classes, rng):
    """Points on a noisy swiss-roll sheet in 3-D.  Labels: position along the roll (quantile bins).
    Node attributes: smooth functions of the sheet coordinates, badly scaled and offset."""
    t = 1.5 * np.pi * (1.0 + 2.0 * rng.random(n))
    h = 12.0 * rng.random(n)
    pos = np.stack([t * np.cos(t), h, t * np.sin(t)], 1) + 0.25 * rng.standard_normal((n, 3))
    u = (t - t.min()) / (t.max() - t.min())
    v = h / 12.0
    freqs = rng.uniform(0.5, 3.0, size=(feat_dim, 2))
    phases = rng.uniform(0, 2 * np.pi, size=feat_dim)
    feats = np.sin(2 * np.pi * (np.outer(u, freqs[:, 0]) + np.outer(v, freqs[:, 1])) + phases)
    feats += 0.3 * rng.standard_normal((n, feat_dim))
    scale = np.exp(rng.uniform(-1.0, 2.5, size=feat_dim))
    offset = rng.uniform(-15, 15, size=feat_dim)
    feats = feats * scale + offset
    labels = np.digitize(u, np.quantile(u, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return (torch.tensor(pos, dtype=torch.float32), torch.tensor(feats, dtype=torch.float32),
            torch.tensor(labels, dtype=torch.long))


def knn_edges(pos, k):
    """Directed edges j -> i for the k nearest neighbours j of every point i."""
    d = torch.cdist(pos, pos)
    d.fill_diagonal_(float("inf"))
    nbr = d.topk(k, largest=False).indices
    dst = torch.arange(pos.shape[0]).repeat_interleave(k)
    return nbr.reshape(-1), dst


def split_nodes(n, frac=(0.6, 0.2)):
    perm = torch.from_numpy(np.random.permutation(n))
    n_tr, n_va = int(frac[0] * n), int(frac[1] * n)
    return perm[:n_tr].sort().values, perm[n_tr:n_tr + n_va].sort().values, perm[n_tr + n_va:].sort().values


def standardize(x, ref_idx=None):
    ref = x if ref_idx is None else x[ref_idx]
    return (x - ref.mean(0)) / ref.std(0).clamp_min(1e-6)


def self_loops_per_node(g):
    src, dst = g.edges()
    return float((src == dst).sum()) / g.num_nodes()


# ----------------------------------------------------------------------------- model pieces
NORMS = {
    "batchnorm": lambda d: nn.BatchNorm1d(d),
    "layernorm": lambda d: nn.LayerNorm(d),
    "none": lambda d: nn.Identity(),
}


class GCNStack(nn.Module):
    """GraphConv layers; every layer but (optionally) the last is followed by norm + PReLU."""

    def __init__(self, in_dim, hid, out_dim, n_layers, norm, dropout, last_act=True):
        super().__init__()
        dims = [in_dim] + [hid] * (n_layers - 1) + [out_dim]
        self.convs = nn.ModuleList(GraphConv(a, b, allow_zero_in_degree=True) for a, b in zip(dims[:-1], dims[1:]))
        n_act = n_layers if last_act else n_layers - 1
        self.norms = nn.ModuleList(NORMS[norm](dims[i + 1]) for i in range(n_act))
        self.acts = nn.ModuleList(nn.PReLU() for _ in range(n_act))
        self.drop = nn.Dropout(dropout)

    def forward(self, g, x):
        h = x
        for i, conv in enumerate(self.convs):
            h = conv(g, self.drop(h))
            if i < len(self.acts):
                h = self.acts[i](self.norms[i](h))
        return h


def remask(rep, mask_nodes):
    out = rep.clone()
    out[mask_nodes] = 0.0
    return out


def sample_mask(idx, rate, generator=None):
    perm = torch.randperm(idx.numel(), generator=generator)
    return idx[perm[: int(rate * idx.numel())]]


def jitter(x, std):
    return x + std * torch.randn_like(x)


def sce_loss(x, y, alpha=2.0, reduction="mean"):
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    loss = (1 - (x * y).sum(dim=-1)).pow(alpha)
    return loss.mean() if reduction == "mean" else loss.sum()


# ----------------------------------------------------------------------------- EMA
def make_ema(model):
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    return ema


@torch.no_grad()
def ema_update(ema, model, decay):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.lerp_(pm, 1.0 - decay)
    for be, bm in zip(ema.buffers(), model.buffers()):
        be.copy_(bm)


def count_trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
