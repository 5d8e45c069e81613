"""Stage 2: linear probe on mean-pooled frozen encoder features."""
import dgl
import torch
import torch.nn as nn

from data import make_collate
from model import GINEncoder
from state import in_dim, load_checkpoint


def load_encoder(cfg, ckpt_path):
    enc = GINEncoder(in_dim(cfg), cfg["model"]["hidden"], cfg["model"]["num_layers"])
    sd = load_checkpoint(ckpt_path)["model"]
    enc_sd = {k[len("encoder."):]: v for k, v in sd.items() if k.startswith("encoder.")}
    enc.load_state_dict(enc_sd)
    return enc


def embed(enc, batch):
    with torch.no_grad():
        h = enc(batch["graph"], batch["x"])
        batch["graph"].ndata["h"] = h
        return dgl.mean_nodes(batch["graph"], "h")


def main(cfg, ckpt_path, data):
    train, val, stats = data
    T = cfg["data"]["num_types"]
    enc = load_encoder(cfg, ckpt_path)
    enc.eval()
    collate = make_collate(stats, T, 0.0)
    tr, va = collate(train), collate(val)
    ztr, zva = embed(enc, tr), embed(enc, va)
    mu, sd = ztr.mean(0), ztr.std(0) + 1e-6
    ztr, zva = (ztr - mu) / sd, (zva - mu) / sd
    head = nn.Linear(ztr.shape[1], 2)
    opt = torch.optim.Adam(head.parameters(), lr=cfg["probe"]["lr"])
    for _ in range(cfg["probe"]["steps"]):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(head(ztr), tr["label"])
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = (head(zva).argmax(1) == va["label"]).float().mean().item()
    return {"probe_acc": acc}
