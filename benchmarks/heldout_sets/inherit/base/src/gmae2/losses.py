import torch
import torch.nn.functional as F


def sce_loss(pred: torch.Tensor, target: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    """Scaled cosine error from GraphMAE."""
    pred = F.normalize(pred, p=2, dim=-1)
    target = F.normalize(target, p=2, dim=-1)
    loss = (1 - (pred * target).sum(dim=-1)).pow(alpha)
    return loss.mean()
