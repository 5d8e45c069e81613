import torch.nn.functional as F

from .registry import register


@register("sce")
def sce_loss(x, y, alpha=2.0, reduction="mean"):
    """Scaled cosine error of GraphMAE: (1 - cos(x, y)) ** alpha per node."""
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    per_node = (1.0 - (x * y).sum(dim=-1)).pow(alpha)
    if reduction == "sum":
        return per_node.sum()
    return per_node.mean()


def stopgrad(t):
    return t.detach()


def latent_loss(pred, target, reduction="mean"):
    """GraphMAE2 latent prediction: student prediction vs. the (stop-gradient) teacher latent."""
    return sce_loss(pred, stopgrad(target), alpha=1.0, reduction=reduction)
