"""Synthetic CAD-part graphs and the Lightning data module.

Each part is a random star-shaped profile (line segments and outward-bulging
arcs) extruded along z (parts are z-up, as in most CAD exports), then randomly
rotated about z, scaled and translated.
Every curve (bottom profile, top profile, vertical edge) is a node whose
feature is K points sampled along the curve:

    [xyz * K | unit tangent * K | unit normal * K]   -> 9 * K floats

Two curves are connected when they share an endpoint; self loops are added once.
"""
import numpy as np
import torch
import dgl
import pytorch_lightning as pl
from dgl.dataloading import GraphDataLoader

K = 8  # points sampled per curve


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True).clip(1e-9)


def _random_yaw(rng):
    a = rng.uniform(0, 2 * np.pi)
    return np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])


def _profile_curve(p0, p1, bulge):
    """Sample a 2D curve from p0 to p1. bulge=0 gives a line, otherwise an arc
    of `bulge` radians bulging to the right of p0->p1 (outside for a CCW profile)."""
    t = np.linspace(0.0, 1.0, K)
    if bulge == 0.0:
        pts = p0[None] + t[:, None] * (p1 - p0)[None]
        tan = np.repeat(_unit(p1 - p0)[None], K, axis=0)
    else:
        chord = p1 - p0
        half = np.linalg.norm(chord) / 2
        radius = half / np.sin(bulge / 2)
        left = np.array([-chord[1], chord[0]]) / (2 * half)
        centre = (p0 + p1) / 2 + left * radius * np.cos(bulge / 2)
        a0 = np.arctan2(*(p0 - centre)[::-1])
        ang = a0 + t * bulge  # counter-clockwise around the centre
        pts = centre + radius * np.stack([np.cos(ang), np.sin(ang)], -1)
        tan = np.stack([-np.sin(ang), np.cos(ang)], -1)
    normal = np.stack([tan[:, 1], -tan[:, 0]], -1)  # outward, in the profile plane
    return pts, tan, normal


def make_part(rng):
    """Return (features [N, 9K], src, dst) for one random extruded part."""
    n = int(rng.integers(3, 7))
    ang = np.sort(rng.uniform(0, 2 * np.pi, n))
    ang = (ang + np.linspace(0, 2 * np.pi, n, endpoint=False)) / 2  # keep vertices spread out
    rad = rng.uniform(0.5, 1.0, n)
    verts = np.stack([rad * np.cos(ang), rad * np.sin(ang)], -1)
    height = rng.uniform(0.3, 1.5)

    curves = []  # (points[K,3], tangents[K,3], normals[K,3])
    vert_normal = np.zeros((n, 2))
    profile = []
    for i in range(n):
        bulge = 0.0 if rng.random() < 0.6 else rng.uniform(0.3, 1.5)
        pts, tan, nrm = _profile_curve(verts[i], verts[(i + 1) % n], bulge)
        profile.append((pts, tan, nrm))
        vert_normal[i] += nrm[0]
        vert_normal[(i + 1) % n] += nrm[-1]
    for z in (0.0, height):  # bottom loop, then top loop
        for pts, tan, nrm in profile:
            zc = np.full((K, 1), z)
            curves.append((np.hstack([pts, zc]), np.hstack([tan, 0 * zc]), np.hstack([nrm, 0 * zc])))
    t = np.linspace(0.0, height, K)[:, None]
    for i in range(n):  # vertical edges, bottom -> top
        pts = np.hstack([np.repeat(verts[i][None], K, 0), t])
        tan = np.tile([0.0, 0.0, 1.0], (K, 1))
        nrm = np.hstack([np.repeat(_unit(vert_normal[i])[None], K, 0), np.zeros((K, 1))])
        curves.append((pts, tan, nrm))

    # random similarity transform
    rot = _random_yaw(rng)
    scale = rng.uniform(0.5, 2.0)
    shift = rng.uniform(-1.0, 1.0, 3)
    feats = []
    for pts, tan, nrm in curves:
        pts = (pts - [0, 0, height / 2]) @ rot.T * scale + shift
        feats.append(np.concatenate([pts.ravel(), (tan @ rot.T).ravel(), (nrm @ rot.T).ravel()]))

    # curve adjacency: shared endpoints
    src, dst = [], []
    for i in range(n):
        j = (i + 1) % n
        pairs = [(i, j), (n + i, n + j),                  # consecutive profile curves
                 (i, 2 * n + i), (i, 2 * n + j),           # bottom curve - its vertical edges
                 (n + i, 2 * n + i), (n + i, 2 * n + j)]   # top curve - its vertical edges
        for a, b in pairs:
            src += [a, b]
            dst += [b, a]
    return np.asarray(feats, dtype=np.float32), np.asarray(src), np.asarray(dst)


def build_graph(feats, src, dst):
    g = dgl.graph((torch.as_tensor(src), torch.as_tensor(dst)), num_nodes=len(feats))
    g = dgl.add_self_loop(g)
    g.ndata["feat"] = torch.as_tensor(feats)
    return g


def generate_parts(num_parts, seed):
    rng = np.random.default_rng(seed)
    return [make_part(rng) for _ in range(num_parts)]


class CADGraphDataModule(pl.LightningDataModule):
    """Generates the parts once, splits them, and normalises the coordinates
    with statistics from the training split (directions stay unit vectors)."""

    def __init__(self, num_graphs=300, val_fraction=0.1, test_fraction=0.1,
                 batch_size=16, data_seed=0):
        super().__init__()
        self.num_graphs = num_graphs
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.batch_size = batch_size
        self.data_seed = data_seed
        self.coord_mean = None
        self.coord_std = None

    def setup(self, stage=None):
        if self.coord_mean is not None:
            return
        parts = generate_parts(self.num_graphs, self.data_seed)
        n_val = int(self.num_graphs * self.val_fraction)
        n_test = int(self.num_graphs * self.test_fraction)
        n_train = self.num_graphs - n_val - n_test
        train_parts = parts[:n_train]

        xyz = np.concatenate([f[:, :3 * K].reshape(-1, 3) for f, _, _ in train_parts])
        self.coord_mean = torch.tensor(xyz.mean(0), dtype=torch.float32)
        self.coord_std = torch.tensor(xyz.std(0), dtype=torch.float32)

        graphs = [build_graph(self.normalise(torch.as_tensor(f)), s, d) for f, s, d in parts]
        self.train_set = graphs[:n_train]
        self.val_set = graphs[n_train:n_train + n_val]
        self.test_set = graphs[n_train + n_val:]

    def normalise(self, feats):
        feats = feats.clone()
        xyz = feats[:, :3 * K].view(-1, K, 3)
        feats[:, :3 * K] = ((xyz - self.coord_mean) / self.coord_std).view(-1, 3 * K)
        return feats

    def denormalise_xyz(self, xyz):
        """[N, K, 3] normalised coordinates back to part units."""
        return xyz * self.coord_std + self.coord_mean

    def train_dataloader(self):
        return GraphDataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return GraphDataLoader(self.val_set, batch_size=self.batch_size, shuffle=False)

    def test_dataloader(self):
        return GraphDataLoader(self.test_set, batch_size=self.batch_size, shuffle=False)
