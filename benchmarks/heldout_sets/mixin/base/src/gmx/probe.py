"""Logistic-regression probe on mean-pooled graph embeddings."""
import dgl
import torch
import torch.nn as nn


@torch.no_grad()
def pooled(model, graphs):
    g = dgl.batch(graphs)
    return model.embed(g, g.ndata["x"])


def linear_probe(model, sets, n_classes, seed=0, epochs=300):
    model.eval()
    ztr, zte = pooled(model, sets["train"].graphs), pooled(model, sets["test"].graphs)
    mean, std = ztr.mean(0), ztr.std(0) + 1e-6
    ztr, zte = (ztr - mean) / std, (zte - mean) / std
    ytr, yte = sets["train"].labels, sets["test"].labels
    gen = torch.Generator().manual_seed(seed)
    head = nn.Linear(ztr.shape[1], n_classes)
    with torch.no_grad():
        head.weight.copy_(0.01 * torch.randn(head.weight.shape, generator=gen))
        head.bias.zero_()
    opt = torch.optim.Adam(head.parameters(), lr=0.01, weight_decay=1e-3)
    for _ in range(epochs):
        opt.zero_grad()
        nn.functional.cross_entropy(head(ztr), ytr).backward()
        opt.step()
    with torch.no_grad():
        return (head(zte).argmax(1) == yte).float().mean().item()
