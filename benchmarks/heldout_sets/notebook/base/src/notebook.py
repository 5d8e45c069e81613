# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: graphmae
#     language: python
#     name: python3
# ---

# %% [markdown]
# # GraphMAE on a point-cloud kNN graph
# Masked feature reconstruction on a swiss-roll point cloud (kNN graph), EMA copy of the model for
# the probe, decoder fine-tuning, checkpoint round trip, linear probe on frozen embeddings.

# %%
import ast
import contextlib
import copy
import dataclasses
import functools
import json
import os
import random
import sys
import tempfile

import dgl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import nbutils

# %% tags=["parameters"]
seed = 0
n_points = 2000
feat_dim = 16
n_classes = 5
knn_k = 8
hidden = 64
num_layers = 2
in_drop = 0.1
norm = "batchnorm"
use_self_loop = True
lr = 0.01
weight_decay = 1e-4
epochs = 100
eval_every = 25
mask_rate = 0.5
feat_noise = 0.05
alpha = 2.0
w_sce = 1.0
w_mse = 0.5
reduction = "mean"
precision = "fp32"
ema_decay = 0.95
finetune_epochs = 30
finetune_modules = ("enc2dec", "decoder")
probe_epochs = 30
resume = ""
ckpt_path = ""

# %%
# papermill injects parameters above; the exported script takes `key=value` overrides instead.
# SWEEP_DEFAULTS keeps the values of the sweep this notebook was last run with.
SWEEP_DEFAULTS = ["epochs=140", "eval_every=30"]
for arg in SWEEP_DEFAULTS + sys.argv[1:]:
    k, v = arg.split("=", 1)
    if k not in globals():
        raise KeyError(f"unknown parameter {k}")
    globals()[k] = v if isinstance(globals()[k], str) else ast.literal_eval(v)


@dataclasses.dataclass(frozen=True)
class Config:
    seed: int
    hidden: int
    num_layers: int
    in_drop: float
    norm: str
    lr: float
    weight_decay: float
    epochs: int
    eval_every: int
    mask_rate: float
    feat_noise: float
    alpha: float
    w_sce: float
    w_mse: float
    reduction: str
    amp: bool
    ema_decay: float
    in_dim: int = feat_dim


cfg = Config(seed=seed, hidden=hidden, num_layers=num_layers, in_drop=in_drop, norm=norm, lr=lr,
             weight_decay=weight_decay, epochs=epochs, eval_every=eval_every, mask_rate=mask_rate,
             feat_noise=feat_noise, alpha=alpha, w_sce=w_sce, w_mse=w_mse, reduction=reduction,
             amp=precision in ("bf16", "bfloat16"), ema_decay=ema_decay)
print(cfg)

# %%
random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)
dgl.seed(seed)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
device = torch.device("cpu")

# %% [markdown]
# ## Data: kNN graph over a noisy swiss roll

# %%
rng = np.random.default_rng(seed)
pos, x_raw, labels = nbutils.make_point_cloud(n_points, feat_dim, n_classes, rng)
src, dst = nbutils.knn_edges(pos, knn_k)
g = dgl.graph((src, dst), num_nodes=n_points)
g = dgl.to_bidirected(g)
if use_self_loop:
    g = dgl.add_self_loop(g)
train_idx, val_idx, test_idx = nbutils.split_nodes(n_points)

# standardise with statistics of the training nodes only
x = nbutils.standardize(x_raw, train_idx)
print(g, x.shape, "self loops/node:", nbutils.self_loops_per_node(g))

# fixed held-out masks (val for the curve, test for the final numbers)
val_mask_nodes = nbutils.sample_mask(val_idx, 0.5, torch.Generator().manual_seed(seed + 11))
test_mask_nodes = nbutils.sample_mask(test_idx, 0.5, torch.Generator().manual_seed(seed + 12))

# %%
# quick look at the data
deg = g.in_degrees().float()
print(f"degree min {deg.min():.0f}  mean {deg.mean():.2f}  max {deg.max():.0f}")
print("label counts:", torch.bincount(labels, minlength=n_classes).tolist())
print("train/val/test:", len(train_idx), len(val_idx), len(test_idx))
print("raw attribute std range: %.3f .. %.3f" % (x_raw[train_idx].std(0).min(), x_raw[train_idx].std(0).max()))
print("standardised train attributes: mean %.2e  std %.4f" % (x[train_idx].mean(), x[train_idx].std(0).mean()))

# %% [markdown]
# ## Model

# %%
def build_model(c):
    m = nn.ModuleDict({
        "encoder": nbutils.GCNStack(c.in_dim, c.hidden, c.hidden, c.num_layers, c.norm, c.in_drop),
        "enc2dec": nn.Linear(c.hidden, c.hidden, bias=False),
        "decoder": nbutils.GCNStack(c.hidden, c.hidden, c.in_dim, 1, "none", 0.0, last_act=False),
    })
    m.register_parameter("mask_token", nn.Parameter(torch.zeros(1, c.in_dim)))
    return m


model = build_model(cfg)
print(model)


# %%
def mask_input(m, x, mask_nodes):
    x_in = x.clone()
    x_in[mask_nodes] = 0.0
    x_in[mask_nodes] += m.mask_token
    return x_in


def forward_mae(m, g, x, mask_nodes):
    x_in = mask_input(m, x, mask_nodes)
    h = m["encoder"](g, x_in)
    rep = m["enc2dec"](h)
    rep = nbutils.remask(rep, mask_nodes)
    recon = m["decoder"](g, rep)
    return recon, h


sce = functools.partial(nbutils.sce_loss, alpha=cfg.alpha, reduction=cfg.reduction)
mse_fn = lambda a, b: F.mse_loss(a, b, reduction=cfg.reduction)  # noqa: E731
amp_ctx = lambda: contextlib.nullcontext() if not cfg.amp else torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731


def mae_loss(m, g, x_in, x_target, mask_nodes):
    with amp_ctx():
        recon, _ = forward_mae(m, g, x_in, mask_nodes)
        x_rec, x_tgt = recon[mask_nodes], x_target[mask_nodes]
        l_sce = sce(x_rec, x_tgt)
        l_mse = mse_fn(x_rec, x_tgt)
        loss = cfg.w_sce * l_sce + cfg.w_mse * l_mse
    return loss, {"sce": l_sce.item(), "mse": l_mse.item()}


@torch.no_grad()
def evaluate(m, g, x, mask_nodes):
    m.eval()
    recon, _ = forward_mae(m, g, x, mask_nodes)
    cos = F.cosine_similarity(recon[mask_nodes], x[mask_nodes], dim=-1).mean()
    err = F.mse_loss(recon[mask_nodes], x[mask_nodes])
    return {"cos": float(cos), "mse": float(err)}


# %%
def param_groups(m, wd):
    decay = [p for n, p in m.named_parameters() if p.ndim > 1 and "mask_token" not in n]
    no_decay = [p for n, p in m.named_parameters() if p.ndim <= 1 or "mask_token" in n]
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.epochs, eta_min=cfg.lr * 0.05)
ema_model = nbutils.make_ema(model)

# %%
if resume:
    state0 = torch.load(resume, map_location="cpu", weights_only=True)
    model.load_state_dict(state0["model"])
    ema_model.load_state_dict(state0["ema"])
model.to(device)
n_trainable = nbutils.count_trainable(model)
print("trainable parameters:", n_trainable)

# %% [markdown]
# ## Pretraining

# %%
running = {"steps": 0, "loss_ema": 0.0, "sce": 0.0, "mse": 0.0}
global_step = 0


def log_step(loss, parts):
    global global_step
    global_step += 1
    running["steps"] += 1
    running["loss_ema"] = 0.9 * running["loss_ema"] + 0.1 * loss.item()
    for k, v in parts.items():
        running[k] += v


def train_step(m, opt, g, x, train_idx):
    opt.zero_grad()
    with torch.no_grad():
        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)
    x_aug = nbutils.jitter(x, cfg.feat_noise)
    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)
    loss.backward()
    opt.step()
    return loss, parts


# %%
loss_hist, val_curve = [], []
best = {"cos": -1.0, "epoch": -1, "state": None}
for epoch in range(cfg.epochs):
    model.train()
    loss, parts = train_step(model, optimizer, g, x, train_idx)
    scheduler.step()
    nbutils.ema_update(ema_model, model, cfg.ema_decay)
    log_step(loss, parts)
    loss_hist.append(loss.item())
    if (epoch + 1) % cfg.eval_every == 0:
        val = evaluate(model, g, x, val_mask_nodes)
        val_curve.append(round(val["cos"], 4))
        if val["cos"] > best["cos"]:
            best.update(cos=val["cos"], epoch=epoch + 1,
                        state={k: v.detach().clone() for k, v in model.state_dict().items()})
        print(f"epoch {epoch + 1:4d}  loss {running['loss_ema']:.4f}  val cos {val['cos']:.4f}")

# %%
# restore the best encoder (by validation reconstruction) before the decoder fine-tuning
model.load_state_dict(best["state"])
stage1 = evaluate(model, g, x, val_mask_nodes)
print("best epoch", best["epoch"], stage1)

# %% [markdown]
# ## Stage 2: fine-tune the decoder head for a few more epochs (encoder and mask token frozen)

# %%
cfg_ft = dataclasses.replace(cfg, lr=cfg.lr * 0.5, epochs=finetune_epochs)
for name, p in model.named_parameters():
    p.requires_grad_(name.startswith(finetune_modules))
opt_ft = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg_ft.lr)
n_trainable_ft = nbutils.count_trainable(model)

model.train()
for epoch in range(cfg_ft.epochs):
    opt_ft.zero_grad()
    mask_nodes = nbutils.sample_mask(train_idx, cfg_ft.mask_rate)
    x_in = mask_input(model, nbutils.jitter(x, cfg_ft.feat_noise), mask_nodes)
    with amp_ctx():
        h = model["encoder"](g, x_in)
        rep = model["enc2dec"](h)
        recon = model["decoder"](g, nbutils.remask(rep, mask_nodes))
        x_rec, x_tgt = recon[mask_nodes], x[mask_nodes]
        loss = cfg_ft.w_sce * sce(x_rec, x_tgt) + cfg_ft.w_mse * mse_fn(x_rec, x_tgt)
    loss.backward()
    opt_ft.step()
    nbutils.ema_update(ema_model, model, cfg_ft.ema_decay)
    log_step(loss, {})
    loss_hist.append(loss.item())

# %%
# loss curve summary (both stages)
print("steps %d  loss first %.4f  min %.4f  last %.4f" % (running["steps"], loss_hist[0], min(loss_hist), loss_hist[-1]))
print("mean parts over stage 1: sce %.4f  mse %.4f" % (running["sce"] / cfg.epochs, running["mse"] / cfg.epochs))

# %%
if not ckpt_path:
    ckpt_path = os.path.join(tempfile.gettempdir(), f"graphmae_nb_{os.getpid()}.pt")
torch.save({"model": model.state_dict(), "ema": ema_model.state_dict(), "cfg": dataclasses.asdict(cfg)}, ckpt_path)

# %% [markdown]
# ## Reload the checkpoint and evaluate

# %%
state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
model_eval = build_model(cfg)
model_eval.load_state_dict(state["model"])
ema_eval = build_model(cfg)
ema_eval.load_state_dict(state["ema"])
model_eval.eval()
ema_eval.eval()
os.remove(ckpt_path)

heldout = evaluate(model_eval, g, x, test_mask_nodes)
heldout_ema = evaluate(ema_eval, g, x, test_mask_nodes)
print("held-out", heldout, "ema", heldout_ema)

# %% [markdown]
# ## Linear probe on the frozen EMA encoder

# %%
with torch.no_grad():
    emb = ema_eval["encoder"](g, x)
emb_n = nbutils.standardize(emb, train_idx)
probe = nn.Linear(emb.shape[1], n_classes)
opt_probe = torch.optim.Adam(probe.parameters(), lr=0.01)
probe_gen = torch.Generator().manual_seed(seed + 21)
for _ in range(probe_epochs):
    for bidx in train_idx[torch.randperm(train_idx.numel(), generator=probe_gen)].split(64):
        xb = emb_n[bidx]
        opt_probe.zero_grad()
        F.cross_entropy(probe(xb), labels[bidx]).backward()
        opt_probe.step()
with torch.no_grad():
    probe_acc = float((probe(emb_n[test_idx]).argmax(1) == labels[test_idx]).float().mean())

# %%
metrics = {
    "final_loss": round(float(np.mean([float(v) for v in loss_hist[-10:]])), 6),
    "heldout_cos": round(heldout["cos"], 6),
    "heldout_mse": round(heldout["mse"], 6),
    "ema_heldout_cos": round(heldout_ema["cos"], 6),
    "probe_acc": round(probe_acc, 6),
    "iterations": global_step,
    "trainable_params": n_trainable,
    "ft_trainable_params": n_trainable_ft,
    "best_epoch": best["epoch"],
    "val_cos_curve": val_curve,
}
print(json.dumps(metrics))
