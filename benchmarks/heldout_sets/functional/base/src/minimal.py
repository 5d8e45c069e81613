"""Minimal plain GraphMAE loop (stage 1 only) on the same synthetic data."""
import argparse
import json

import torch
import torch.nn.functional as F

from config import load_config
from data import build_dataset, feature_stats, iterate_batches, make_collate, normalize
from model import GraphMAE
from state import seed_everything

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--max-steps", type=int, default=300)
args = ap.parse_args()

cfg = load_config([f"seed={args.seed}"])
seed_everything(args.seed)
T = cfg["data"]["num_types"]
train, val = build_dataset(cfg)
stats = feature_stats(train, T)
batches = iterate_batches(train, 64, make_collate(stats, T, 0.1))
ev = make_collate(stats, T, 0.0)(val)
model = GraphMAE(T + cfg["data"]["num_cont"], 64, 2)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(args.max_steps):
    b = next(batches)
    g, x = b["graph"], b["x"]
    mask = torch.randperm(g.num_nodes())[: g.num_nodes() // 2]
    model.train()
    out = model(g, x, mask)
    loss = F.mse_loss(out["recon"][mask], x[mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
mask = torch.randperm(ev["graph"].num_nodes(), generator=torch.Generator().manual_seed(1234))[: ev["graph"].num_nodes() // 2]
with torch.no_grad():
    r = model(ev["graph"], ev["x"], mask)["recon"][mask]
mean_pred = normalize(torch.cat([g.ndata["x"] for g, _ in train]), stats, T).mean(0, keepdim=True)
t = ev["x"][mask]
print(json.dumps({"recon_mse": F.mse_loss(r, t).item(), "mean_baseline_mse": F.mse_loss(mean_pred.expand_as(t), t).item(),
                  "final_loss": loss.item()}))
