"""Stage two: linear probe on the frozen, reloaded encoder."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checkpoint import load_encoder
from .ctx import evaluating


def minibatches(x, y, batch_size):
    order = list(range(x.shape[0]))
    random.shuffle(order)
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        yield x[idx], y[idx]


def linear_probe(path, data, cfg):
    pcfg = cfg.probe
    encoder = load_encoder(path, cfg, data.feats.shape[1])
    with evaluating(encoder), torch.no_grad():
        emb = encoder(data.graph, data.feats)
    ref = emb[data.train_idx]
    emb = (emb - ref.mean(0, keepdim=True)) / (ref.std(0, keepdim=True) + 1e-6)

    clf = nn.Linear(emb.shape[1], data.num_classes)
    opt = torch.optim.Adam(clf.parameters(), lr=pcfg.lr, weight_decay=pcfg.weight_decay)
    x_tr, y_tr = emb[data.train_idx], data.labels[data.train_idx]
    for _ in range(pcfg.epochs):
        for xb, yb in minibatches(x_tr, y_tr, pcfg.batch_size):
            loss = F.cross_entropy(clf(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        logits = clf(emb[data.test_idx])
    y_te = data.labels[data.test_idx]
    return {"probe_acc": (logits.argmax(-1) == y_te).float().mean().item(),
            "probe_nll": F.cross_entropy(logits, y_te).item()}
