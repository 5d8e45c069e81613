import torch.nn.functional as F

from .registry import LOSSES


def sce_loss(x, y, alpha=2.0, reduction="mean"):
    """Scaled cosine error (GraphMAE): (1 - cos(x, y)) ** alpha per node."""
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    loss = (1.0 - (x * y).sum(dim=-1)).pow(alpha)
    return loss.mean() if reduction == "mean" else loss.sum()


@LOSSES.register("masked_recon")
class MaskedReconLoss:
    """SCE on the continuous attributes + cross-entropy on the node type of the masked nodes."""

    def __init__(self, attr_dim, alpha=2.0, w_attr=1.0, w_type=0.5, reduction="mean"):
        self.attr_dim, self.alpha = attr_dim, alpha
        self.w_attr, self.w_type = w_attr, w_type
        self.reduction = reduction

    def __call__(self, recon, target):
        a = self.attr_dim
        l_attr = sce_loss(recon[:, :a], target[:, :a], self.alpha, self.reduction)
        l_type = F.cross_entropy(recon[:, a:], target[:, a:].argmax(1), reduction=self.reduction)
        loss = self.w_attr * l_attr + self.w_type * l_type
        return loss, {"attr": l_attr.detach(), "type": l_type.detach()}
