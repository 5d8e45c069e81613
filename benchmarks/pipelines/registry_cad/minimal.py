"""Minimal GraphMAE baseline: same data as main.py (data.py, seed 0), GAT encoder/decoder,
plain training loop, constant learning rate, last weights evaluated on the test split."""
import argparse
import json
import random

import dgl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv

from data import build_datasets

K = 8
parser = argparse.ArgumentParser()
parser.add_argument("--max-steps", type=int, default=200)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.set_num_threads(1)
random.seed(args.seed)
np.random.seed(args.seed)
torch.manual_seed(args.seed)
dgl.seed(args.seed)

datasets, stats = build_datasets({"num_points": K})
train_graphs = datasets["train"].graphs
test_g = dgl.batch(datasets["test"].graphs)
mean, std = stats["mean"], stats["std"]


class GraphMAE(nn.Module):
    def __init__(self, d=9 * K, h=64, heads=4):
        super().__init__()
        self.enc1 = GATConv(d, h // heads, heads, residual=True)
        self.enc2 = GATConv(h, h // heads, heads, residual=True)
        self.post1 = nn.Sequential(nn.BatchNorm1d(h), nn.PReLU())
        self.post2 = nn.Sequential(nn.BatchNorm1d(h), nn.PReLU())
        self.enc_to_dec = nn.Linear(h, h, bias=False)
        self.dec = GATConv(h, d, 1)
        self.mask_token = nn.Parameter(torch.zeros(1, d))

    def forward(self, g, x, mask):
        x = x.clone()
        x[mask] = self.mask_token
        h = self.post1(self.enc1(g, x).flatten(1))
        h = self.post2(self.enc2(g, h).flatten(1))
        h = self.enc_to_dec(h)
        h[mask] = 0.0
        return self.dec(g, h).squeeze(1)


def parts(x):
    return x[:, :3 * K].reshape(-1, K, 3), x[:, 3 * K:6 * K].reshape(-1, K, 3), x[:, 6 * K:].reshape(-1, K, 3)


def sce(a, b):
    return (1 - F.cosine_similarity(a, b, dim=-1)).pow(2).mean()


model = GraphMAE()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-4)
for step in range(args.max_steps):
    g = dgl.batch(random.sample(train_graphs, 16))
    x = g.ndata["feat"]
    mask = torch.randperm(g.num_nodes())[: int(0.3 * g.num_nodes())]
    (px, pt, pn), (tx, tt, tn) = parts(model(g, x, mask)[mask]), parts(x[mask])
    loss = F.mse_loss(px, tx) + sce(pt, tt) + sce(pn, tn)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x = test_g.ndata["feat"]
    mask = torch.randperm(test_g.num_nodes(), generator=torch.Generator().manual_seed(1234))
    mask = mask[: int(0.3 * test_g.num_nodes())]
    (px, pt, pn), (tx, tt, tn) = parts(model(test_g, x, mask)[mask]), parts(x[mask])
    true_xyz = tx * std + mean
    print(json.dumps({
        "recon_coord_err": (px * std + mean - true_xyz).norm(dim=-1).mean().item(),
        "mean_predictor_coord_err": (mean - true_xyz).norm(dim=-1).mean().item(),
        "recon_tangent_cos": F.cosine_similarity(pt, tt, dim=-1).mean().item(),
        "recon_normal_cos": F.cosine_similarity(pn, tn, dim=-1).mean().item(),
        "final_loss": loss.item(),
    }))
