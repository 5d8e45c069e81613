"""Reconstruction loss with per-component weights, built from the config."""
import torch.nn as nn
import torch.nn.functional as F


def split_features(x, num_points):
    k = num_points
    return (x[:, :3 * k].reshape(-1, k, 3),
            x[:, 3 * k:6 * k].reshape(-1, k, 3),
            x[:, 6 * k:9 * k].reshape(-1, k, 3))


def scaled_cosine_error(pred, target, alpha=2.0):
    return (1.0 - F.cosine_similarity(pred, target, dim=-1)).pow(alpha).mean()


class ReconstructionLoss(nn.Module):
    """coord: MSE on (normalised) xyz; tangent / normal: scaled cosine error."""

    def __init__(self, num_points=8, coord_weight=1.0, tangent_weight=1.0,
                 normal_weight=1.0, sce_alpha=2.0):
        super().__init__()
        self.num_points = num_points
        self.weights = {"coord": coord_weight, "tangent": tangent_weight, "normal": normal_weight}
        self.alpha = sce_alpha

    @classmethod
    def from_config(cls, cfg):
        loss_cfg = cfg.get("loss", {})
        return cls(num_points=cfg.get("num_points", 8),
                   coord_weight=loss_cfg.get("coord_weight", 1.0),
                   tangent_weight=loss_cfg.get("tangent_weight", 1.0),
                   normal_weight=loss_cfg.get("normal_weight", 1.0),
                   sce_alpha=loss_cfg.get("sce_alpha", 2.0))

    def forward(self, pred, target):
        p_xyz, p_tan, p_nrm = split_features(pred, self.num_points)
        t_xyz, t_tan, t_nrm = split_features(target, self.num_points)
        parts = {
            "coord": F.mse_loss(p_xyz, t_xyz),
            "tangent": scaled_cosine_error(p_tan, t_tan, self.alpha),
            "normal": scaled_cosine_error(p_nrm, t_nrm, self.alpha),
        }
        total = sum(self.weights[k] * v for k, v in parts.items())
        return total, {k: v.item() for k, v in parts.items()}
