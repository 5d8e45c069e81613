"""Stage two: linear probe on frozen, mean-pooled graph embeddings."""
import dgl
import torch
import torch.nn as nn
import torch.nn.functional as F

from .models import build_model
from .train.mixins import load_checkpoint, strip_prefix


class EmbeddingCollector:
    """Forward hook that keeps mean-pooled outputs of a module."""

    def __init__(self):
        self.graph = None
        self.pooled = []

    def __call__(self, module, inputs, output):
        g = inputs[0]
        with g.local_scope():
            g.ndata["h"] = output
            self.pooled.append(dgl.mean_nodes(g, "h"))


def collect_embeddings(model, loader):
    collector = EmbeddingCollector()
    handle = model.encoder.register_forward_hook(collector)
    labels = []
    try:
        for g, y in loader:
            model.embed(g, g.ndata["feat"])
            labels.append(y)
    finally:
        handle.remove()
    return torch.cat(collector.pooled), torch.cat(labels)


def fit_linear_probe(train_x, train_y, test_x, test_y, num_classes, epochs, lr, weight_decay):
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
    clf = nn.Linear(train_x.shape[1], num_classes)
    opt = torch.optim.Adam(clf.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        opt.zero_grad()
        F.cross_entropy(clf(train_x), train_y).backward()
        opt.step()
    with torch.no_grad():
        train_acc = (clf(train_x).argmax(1) == train_y).float().mean().item()
        test_acc = (clf(test_x).argmax(1) == test_y).float().mean().item()
    return train_acc, test_acc


def run_linear_probe(cfg, ckpt_path, in_dim, train_loader, test_loader) -> dict:
    model = build_model(cfg.model, in_dim)
    state = load_checkpoint(ckpt_path)
    model.encoder.load_state_dict(strip_prefix(state["model"], "blocks.encoder."))
    model.eval()

    train_x, train_y = collect_embeddings(model, train_loader)
    test_x, test_y = collect_embeddings(model, test_loader)
    train_acc, test_acc = fit_linear_probe(
        train_x, train_y, test_x, test_y, cfg.data.num_classes,
        cfg.train.probe_epochs, cfg.train.probe_lr, cfg.train.probe_weight_decay)
    return {"probe_train_acc": train_acc, "probe_test_acc": test_acc}
