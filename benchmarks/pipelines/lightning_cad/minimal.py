"""Minimal GraphMAE on the synthetic CAD curve graphs: plain PyTorch loop, no Lightning.

Same data (data.py, data_seed 0, same split) and same model shape as train.py.
"""
import argparse
import json
import random

import dgl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv

from data import K, build_graph, generate_parts

parser = argparse.ArgumentParser()
parser.add_argument("--max-steps", type=int, default=200)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.set_num_threads(1)  # tiny graphs: extra CPU threads only add overhead
random.seed(args.seed); np.random.seed(args.seed); torch.manual_seed(args.seed); dgl.seed(args.seed)

parts = generate_parts(300, seed=0)
train_parts, test_parts = parts[:240], parts[270:]  # 240 train / 30 val (unused) / 30 test
xyz = np.concatenate([f[:, :3 * K].reshape(-1, 3) for f, _, _ in train_parts])
mean, std = torch.tensor(xyz.mean(0)), torch.tensor(xyz.std(0))


def prep(f, s, d):
    f = torch.as_tensor(f).clone()
    f[:, :3 * K] = ((f[:, :3 * K].view(-1, K, 3) - mean) / std).view(-1, 3 * K)
    return build_graph(f, s, d)


train_graphs = [prep(*p) for p in train_parts]
test_g = dgl.batch([prep(*p) for p in test_parts])


class GraphMAE(nn.Module):
    def __init__(self, d=9 * K, h=64, heads=4):
        super().__init__()
        self.gat1 = GATConv(d, h // heads, heads, residual=True)
        self.gat2 = GATConv(h, h // heads, heads, residual=True)
        self.bn1, self.bn2 = nn.BatchNorm1d(h), nn.BatchNorm1d(h)
        self.act1, self.act2 = nn.PReLU(), nn.PReLU()
        self.e2d = nn.Linear(h, h, bias=False)
        self.dec = GATConv(h, d, 1)
        self.mask_token = nn.Parameter(torch.zeros(1, d))

    def forward(self, g, x, mask):
        x = x.clone()
        x[mask] = self.mask_token
        h = self.act1(self.bn1(self.gat1(g, x).flatten(1)))
        h = self.act2(self.bn2(self.gat2(g, h).flatten(1)))
        h = self.e2d(h)
        h[mask] = 0.0  # re-mask
        return self.dec(g, h).squeeze(1)


def split(x):
    return x[:, :3 * K].view(-1, K, 3), x[:, 3 * K:6 * K].view(-1, K, 3), x[:, 6 * K:].view(-1, K, 3)


def loss_fn(pred, target):
    (px, pt, pn), (tx, tt, tn) = split(pred), split(target)
    sce = lambda a, b: (1 - F.cosine_similarity(a, b, dim=-1)).pow(2).mean()
    return F.mse_loss(px, tx) + sce(pt, tt) + sce(pn, tn)


model = GraphMAE()
opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-4)
mask_rate, batch_size = 0.3, 16
for step in range(args.max_steps):
    g = dgl.batch(random.sample(train_graphs, batch_size))
    x = g.ndata["feat"]
    mask = torch.randperm(g.num_nodes())[: int(mask_rate * g.num_nodes())]
    loss = loss_fn(model(g, x, mask)[mask], x[mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")

# held-out reconstruction with a fixed mask
model.eval()
with torch.no_grad():
    x = test_g.ndata["feat"]
    mask = torch.randperm(test_g.num_nodes(), generator=torch.Generator().manual_seed(1234))
    mask = mask[: int(mask_rate * test_g.num_nodes())]
    (px, pt, pn), (tx, tt, tn) = split(model(test_g, x, mask)[mask]), split(x[mask])
    true_xyz = tx * std + mean
    metrics = {
        "recon_coord_err": (px * std + mean - true_xyz).norm(dim=-1).mean().item(),
        "mean_predictor_coord_err": (mean - true_xyz).norm(dim=-1).mean().item(),
        "recon_tangent_cos": F.cosine_similarity(pt, tt, dim=-1).mean().item(),
        "recon_normal_cos": F.cosine_similarity(pn, tn, dim=-1).mean().item(),
        "final_loss": loss.item(),
    }
print(json.dumps(metrics))
