"""Scaled cosine error (GraphMAE) summed over node types with per-type weights."""
import torch.nn.functional as F


def sce_loss(x, y, alpha=2.0, reduction="mean"):
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    loss = (1 - (x * y).sum(dim=-1)).pow_(alpha)
    if reduction == "sum":
        return loss.sum()
    return loss.mean()


class SCELoss:
    def __init__(self, alpha=2.0, reduction="mean", weights=None):
        self.alpha = alpha
        self.reduction = reduction
        self.weights = dict(weights or {})

    def __call__(self, recon, target, masks):
        per_type = {t: sce_loss(recon[t][m], target[t][m], self.alpha, self.reduction)
                    for t, m in masks.items()}
        total = 0.0
        for t, l in per_type.items():
            w = self.weights.get(t, 1.0)
            total = total + w * l
        return total, per_type


LOSS = SCELoss
