import torch.nn.functional as F


def sce_loss(x, y, alpha=2.0, reduction="mean"):
    """Scaled cosine error (GraphMAE)."""
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    loss = (1 - (x * y).sum(dim=-1)).pow(alpha)
    if reduction == "sum":
        return loss.sum()
    return loss.mean()
