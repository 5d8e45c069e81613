"""Synthetic molecule-like graphs: random geometric graphs whose node features
are noisy, badly scaled projections of smooth spatial fields.  The graph label
sets the spatial frequency of the fields."""
from __future__ import annotations

from dataclasses import dataclass

import dgl
import numpy as np
import torch
from dgl.dataloading import GraphDataLoader

from .config import DataConfig

CLASS_FREQUENCIES = (1.0, 1.2, 1.4)


@dataclass
class FieldBasis:
    directions: np.ndarray  # (2, num_fields)
    phases: np.ndarray  # (num_fields,)
    projection: np.ndarray  # (num_fields, feat_dim)
    scale: np.ndarray  # (feat_dim,)
    offset: np.ndarray  # (feat_dim,)


def make_basis(cfg: DataConfig) -> FieldBasis:
    return FieldBasis(
        directions=np.random.randn(2, cfg.num_fields) * 1.5,
        phases=np.random.uniform(0, 2 * np.pi, cfg.num_fields),
        projection=np.random.randn(cfg.num_fields, cfg.feat_dim) / np.sqrt(cfg.num_fields),
        scale=np.exp(np.random.uniform(-1.0, 3.0, cfg.feat_dim)),
        offset=np.random.randn(cfg.feat_dim) * 10.0,
    )


def make_graph(label: int, basis: FieldBasis, cfg: DataConfig) -> dgl.DGLGraph:
    n = np.random.randint(cfg.min_nodes, cfg.max_nodes + 1)
    pos = np.random.rand(n, 2)
    dist = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=-1)
    adj = (dist < cfg.radius) & ~np.eye(n, dtype=bool)
    src, dst = np.nonzero(adj)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)

    freq = CLASS_FREQUENCIES[label]
    fields = np.sin(freq * pos @ basis.directions + basis.phases)
    feat = fields @ basis.projection + cfg.noise * np.random.randn(n, cfg.feat_dim)
    feat = feat * basis.scale + basis.offset
    g.ndata["feat"] = torch.tensor(feat, dtype=torch.float32)

    g = dgl.remove_self_loop(g)
    g = dgl.add_self_loop(g)
    return g


class SyntheticGraphDataset(torch.utils.data.Dataset):
    def __init__(self, graphs, labels):
        self.graphs = graphs
        self.labels = torch.as_tensor(labels, dtype=torch.long)

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, idx):
        return self.graphs[idx], self.labels[idx]

    @property
    def feat_dim(self) -> int:
        return self.graphs[0].ndata["feat"].shape[1]


class FeatureScaler:
    """Per-dimension standardisation of node features."""

    def __init__(self, eps: float = 1e-6):
        self.eps = eps
        self.mean = None
        self.std = None

    def fit(self, dataset: SyntheticGraphDataset) -> "FeatureScaler":
        feats = torch.cat([g.ndata["feat"] for g in dataset.graphs], dim=0)
        self.mean = feats.mean(dim=0)
        self.std = feats.std(dim=0)
        return self

    def __call__(self, feat: torch.Tensor) -> torch.Tensor:
        return (feat - self.mean) / (self.std + self.eps)


class Collator:
    def __init__(self, scaler: FeatureScaler):
        self.scaler = scaler

    def __call__(self, samples):
        graphs, labels = map(list, zip(*samples))
        batched = dgl.batch(graphs)
        batched.ndata["feat"] = self.scaler(batched.ndata["feat"])
        return batched, torch.stack(labels)


def build_datasets(cfg: DataConfig):
    basis = make_basis(cfg)
    labels = np.random.randint(0, cfg.num_classes, cfg.num_graphs)
    graphs = [make_graph(int(y), basis, cfg) for y in labels]

    order = np.random.permutation(cfg.num_graphs)
    n_test = int(cfg.test_fraction * cfg.num_graphs)
    test_idx, train_idx = order[:n_test], order[n_test:]
    train_set = SyntheticGraphDataset([graphs[i] for i in train_idx], labels[train_idx])
    test_set = SyntheticGraphDataset([graphs[i] for i in test_idx], labels[test_idx])
    return train_set, test_set


def build_loaders(train_set, test_set, cfg: DataConfig):
    scaler = FeatureScaler().fit(train_set)
    collate = Collator(scaler)
    train_loader = GraphDataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                                   drop_last=False, collate_fn=collate)
    train_eval_loader = GraphDataLoader(train_set, batch_size=cfg.batch_size, shuffle=False,
                                        collate_fn=collate)
    test_loader = GraphDataLoader(test_set, batch_size=cfg.batch_size, shuffle=False,
                                  collate_fn=collate)
    return train_loader, train_eval_loader, test_loader
