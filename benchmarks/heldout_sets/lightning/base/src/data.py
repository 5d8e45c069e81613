"""Synthetic community graphs for masked-feature pretraining.

Every graph has 2-4 dense blocks (Erdos-Renyi inside a block, a couple of random
edges between blocks). A node's feature is its block's prototype (drawn per graph)
plus noise, so a masked node can be recovered from its neighbours. Raw features go
through a fixed per-dimension affine distortion; the datamodule standardises them
with statistics of the training split.
"""
import random

import dgl
import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader


def _distortion(dim):
    scale = np.linspace(0.5, 4.0, dim)
    shift = np.linspace(-3.0, 5.0, dim)
    return scale, shift


def make_graph(dcfg):
    dim = dcfg["feat_dim"]
    n = random.randint(dcfg["min_nodes"], dcfg["max_nodes"])
    k = random.randint(*dcfg["blocks"])
    cuts = sorted(random.sample(range(1, n), k - 1))
    sizes = np.diff([0] + cuts + [n])

    src, dst, block = [], [], []
    start = 0
    for b, size in enumerate(sizes):
        size = int(size)
        m = max(1, int(dcfg["p_in"] * size * (size - 1) / 2))
        u, v = dgl.rand_graph(size, m).edges()
        src.append(u + start)
        dst.append(v + start)
        block += [b] * size
        start += size
    cross = torch.from_numpy(np.random.randint(0, n, size=(2, dcfg["cross_edges"] * k)))
    src.append(cross[0])
    dst.append(cross[1])

    g = dgl.graph((torch.cat(src), torch.cat(dst)), num_nodes=n)
    g = dgl.to_simple(dgl.add_reverse_edges(g))
    g = dgl.remove_self_loop(g)
    g = dgl.add_self_loop(g)

    protos = np.random.randn(k, dim)
    x = protos[np.asarray(block)] + dcfg["noise"] * np.random.randn(n, dim)
    scale, shift = _distortion(dim)
    g.ndata["feat"] = torch.tensor(x * scale + shift, dtype=torch.float32)
    return g


class Standardize:
    """Collate: batch the graphs and standardise node features with fixed statistics."""

    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, graphs):
        g = dgl.batch(graphs)
        x = (g.ndata["feat"] - self.mean) / self.std
        return g, x


class SyntheticGraphDataModule(pl.LightningDataModule):
    def __init__(self, dcfg):
        super().__init__()
        self.dcfg = dcfg
        self.train_set = None
        self.val_set = None
        self.collate = None

    def setup(self, stage=None):
        if self.train_set is not None:
            return
        self.train_set = [make_graph(self.dcfg) for _ in range(self.dcfg["num_train"])]
        self.val_set = [make_graph(self.dcfg) for _ in range(self.dcfg["num_val"])]
        feats = torch.cat([g.ndata["feat"] for g in self.train_set])
        self.collate = Standardize(feats.mean(0), feats.std(0))

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.dcfg["batch_size"], shuffle=True,
                          collate_fn=self.collate, drop_last=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.dcfg["batch_size"], shuffle=False,
                          collate_fn=self.collate)
