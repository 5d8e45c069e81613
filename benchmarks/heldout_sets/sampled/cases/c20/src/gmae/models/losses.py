import torch.nn.functional as F

from ..registry import register


@register("loss", "sce")
def scaled_cosine_error(pred, target, alpha=2.0):
    pred = F.normalize(pred, p=2, dim=-1)
    target = F.normalize(target, p=2, dim=-1)
    err = (1.0 - (pred * target).sum(dim=-1)).pow(alpha)
    return err.mean()


@register("loss", "mse")
def mean_squared_error(pred, target, alpha=None):
    return F.mse_loss(pred, target)
