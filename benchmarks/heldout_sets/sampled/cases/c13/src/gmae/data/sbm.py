"""One large stochastic-block-model graph; node features = block centroid + noise."""
from dataclasses import dataclass

import dgl
import numpy as np
import torch


@dataclass
class FeatureStats:
    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x):
        return (x - self.mean) / self.std


class SBMNodeDataset:
    def __init__(self, cfg, seed):
        rng = np.random.default_rng(seed + 1000)
        n, k, d = cfg.num_nodes, cfg.num_blocks, cfg.feat_dim
        labels = rng.integers(0, k, size=n)
        same = labels[:, None] == labels[None, :]
        prob = np.where(same, cfg.p_in, cfg.p_out).astype(np.float32)
        upper = np.triu(rng.random((n, n), dtype=np.float32) < prob, k=1)
        src, dst = np.nonzero(upper)
        g = dgl.graph((np.concatenate([src, dst]), np.concatenate([dst, src])), num_nodes=n)
        # the convolution averages over in-neighbours including the node itself
        g = dgl.add_self_loop(g)

        centroids = rng.normal(0.0, 1.0, size=(k, d))
        raw = centroids[labels] + cfg.noise * rng.normal(size=(n, d))
        raw = raw * rng.uniform(0.5, 3.0, size=d) + rng.normal(0.0, 2.0, size=d)
        g.ndata["feat"] = torch.tensor(raw, dtype=torch.float32)
        g.ndata["label"] = torch.tensor(labels, dtype=torch.long)

        perm = rng.permutation(n)
        n_tr = int(cfg.label_rate * n)
        n_va = int(0.15 * n)
        self.train_idx = torch.tensor(np.sort(perm[:n_tr]))
        self.val_idx = torch.tensor(np.sort(perm[n_tr:n_tr + n_va]))
        self.test_idx = torch.tensor(np.sort(perm[n_tr + n_va:]))
        # fixed set of nodes whose features are hidden when measuring reconstruction
        self.recon_eval_idx = torch.tensor(np.sort(rng.permutation(n)[: n // 5]))

        self.graph = g
        self.num_classes = k
        feats = g.ndata["feat"]
        self.stats = FeatureStats(feats.mean(0), feats.std(0))

    @property
    def in_dim(self):
        return self.graph.ndata["feat"].shape[1]

    def normalized_features(self):
        return self.stats.apply(self.graph.ndata["feat"])
