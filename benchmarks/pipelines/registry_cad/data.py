"""Synthetic dataset of extruded CAD parts as curve graphs.

A part = random star-shaped 2D profile whose edges are lines or outward arcs,
extruded along +z, then rotated about z, scaled and shifted. Nodes are the
curves (bottom loop, top loop, vertical edges); edges join curves that share an
endpoint, plus one self loop per node. Node feature for K sampled points:
[xyz * K | unit tangent * K | unit normal * K]  (normal = outward, horizontal).
"""
import dgl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class ExtrudedPartGenerator:
    def __init__(self, num_points=8, seed=0, arc_prob=0.4, min_sides=3, max_sides=6):
        self.k = num_points
        self.rng = np.random.default_rng(seed)
        self.arc_prob = arc_prob
        self.min_sides, self.max_sides = min_sides, max_sides

    def _edge(self, a, b):
        """Points/tangents along the profile edge a->b (2D): a line or an arc
        bulging to the right of a->b, i.e. outwards for a CCW profile."""
        t = np.linspace(0.0, 1.0, self.k)[:, None]
        if self.rng.random() >= self.arc_prob:
            d = (b - a) / np.linalg.norm(b - a)
            return a + t * (b - a), np.repeat(d[None], self.k, 0)
        sweep = self.rng.uniform(0.3, 1.5)
        chord = b - a
        r = 0.5 * np.linalg.norm(chord) / np.sin(sweep / 2)
        inward = np.array([-chord[1], chord[0]]) / np.linalg.norm(chord)
        c = 0.5 * (a + b) + inward * r * np.cos(sweep / 2)
        phi = np.arctan2(a[1] - c[1], a[0] - c[0]) + t[:, 0] * sweep
        pts = c + r * np.stack([np.cos(phi), np.sin(phi)], 1)
        return pts, np.stack([-np.sin(phi), np.cos(phi)], 1)

    def sample(self):
        k, rng = self.k, self.rng
        n = int(rng.integers(self.min_sides, self.max_sides + 1))
        # spread angles: average a sorted uniform sample with a regular one
        theta = 0.5 * (np.sort(rng.uniform(0, 2 * np.pi, n)) + np.arange(n) * 2 * np.pi / n)
        radius = rng.uniform(0.5, 1.0, n)
        verts = np.stack([radius * np.cos(theta), radius * np.sin(theta)], 1)
        height = rng.uniform(0.3, 1.5)

        profile = [self._edge(verts[i], verts[(i + 1) % n]) for i in range(n)]
        outward = [np.stack([tan[:, 1], -tan[:, 0]], 1) for _, tan in profile]
        corner_normal = [outward[i - 1][-1] + outward[i][0] for i in range(n)]

        zeros = np.zeros((k, 1))
        xyz, tan, nrm = [], [], []
        for z in (-height / 2, height / 2):
            for (p, d), o in zip(profile, outward):
                xyz.append(np.hstack([p, zeros + z]))
                tan.append(np.hstack([d, zeros]))
                nrm.append(np.hstack([o, zeros]))
        for i in range(n):
            xyz.append(np.hstack([np.repeat(verts[i][None], k, 0),
                                  np.linspace(-height / 2, height / 2, k)[:, None]]))
            tan.append(np.tile([0.0, 0.0, 1.0], (k, 1)))
            cn = corner_normal[i] / np.linalg.norm(corner_normal[i])
            nrm.append(np.hstack([np.repeat(cn[None], k, 0), zeros]))
        xyz, tan, nrm = np.stack(xyz), np.stack(tan), np.stack(nrm)  # [3n, k, 3]

        yaw = rng.uniform(0, 2 * np.pi)
        rot = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
        xyz = xyz @ rot.T * rng.uniform(0.5, 2.0) + rng.uniform(-1.0, 1.0, 3)
        tan, nrm = tan @ rot.T, nrm @ rot.T
        feat = np.concatenate([xyz.reshape(3 * n, -1), tan.reshape(3 * n, -1), nrm.reshape(3 * n, -1)], 1)

        # bottom i: node i, top i: node n+i, vertical at vertex i: node 2n+i
        edges = []
        for i in range(n):
            j = (i + 1) % n
            edges += [(i, j), (n + i, n + j), (i, 2 * n + i), (i, 2 * n + j),
                      (n + i, 2 * n + i), (n + i, 2 * n + j)]
        src, dst = map(np.array, zip(*edges))
        g = dgl.graph((np.concatenate([src, dst]), np.concatenate([dst, src])), num_nodes=3 * n)
        g = dgl.add_self_loop(g)
        g.ndata["feat"] = torch.tensor(feat, dtype=torch.float32)
        return g


class CurveGraphDataset(Dataset):
    def __init__(self, graphs):
        self.graphs = graphs

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, idx):
        return self.graphs[idx]


def coordinate_stats(graphs, num_points):
    xyz = torch.cat([g.ndata["feat"][:, :3 * num_points].reshape(-1, 3) for g in graphs])
    return xyz.mean(0), xyz.std(0)


def normalize_(graphs, mean, std, num_points):
    for g in graphs:
        f = g.ndata["feat"]
        xyz = f[:, :3 * num_points].reshape(-1, num_points, 3)
        f[:, :3 * num_points] = ((xyz - mean) / std).reshape(-1, 3 * num_points)


def build_datasets(cfg):
    """Returns train/val/test datasets and the coordinate stats (train split only)."""
    data_cfg = cfg.get("data", {})
    k = cfg.get("num_points", 8)
    gen = ExtrudedPartGenerator(num_points=k, seed=data_cfg.get("seed", 0),
                                arc_prob=data_cfg.get("arc_prob", 0.4))
    graphs = [gen.sample() for _ in range(data_cfg.get("num_graphs", 300))]
    n_train = int(len(graphs) * data_cfg.get("train_frac", 0.8))
    n_val = int(len(graphs) * data_cfg.get("val_frac", 0.1))
    splits = {"train": graphs[:n_train], "val": graphs[n_train:n_train + n_val],
              "test": graphs[n_train + n_val:]}
    mean, std = coordinate_stats(splits["train"], k)
    for part in splits.values():
        normalize_(part, mean, std, k)
    return {name: CurveGraphDataset(gs) for name, gs in splits.items()}, {"mean": mean, "std": std}


def make_loader(dataset, batch_size, shuffle):
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=shuffle,
                      collate_fn=dgl.batch)
