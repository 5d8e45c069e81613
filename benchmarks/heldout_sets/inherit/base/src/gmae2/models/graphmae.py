from functools import partial

import torch
import torch.nn as nn
from dgl.nn import GINConv

from ..config import ModelConfig
from ..losses import sce_loss
from .encoders import GNNEncoder


class GraphMAE(nn.Module):
    def __init__(self, cfg: ModelConfig, in_dim: int):
        super().__init__()
        self.mask_rate = cfg.mask_rate
        self.blocks = nn.ModuleDict({
            "encoder": GNNEncoder(cfg.encoder, in_dim, cfg.hidden_dim, cfg.num_layers,
                                  cfg.dropout, cfg.norm),
            "encoder_to_decoder": nn.Linear(cfg.hidden_dim, cfg.hidden_dim, bias=False),
            "decoder": GINConv(nn.Linear(cfg.hidden_dim, in_dim), aggregator_type="sum"),
        })
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.criterion = partial(sce_loss, alpha=cfg.alpha_l)

    @property
    def encoder(self) -> GNNEncoder:
        return self.blocks["encoder"]

    def _sample_mask(self, num_nodes: int, device) -> tuple:
        perm = torch.randperm(num_nodes, device=device)
        num_mask = int(self.mask_rate * num_nodes)
        return perm[:num_mask], perm[num_mask:]

    def mask_nodes(self, g, x: torch.Tensor):
        mask_nodes, keep_nodes = self._sample_mask(g.num_nodes(), x.device)
        out_x = x.clone()
        out_x[mask_nodes] = 0.0
        out_x[mask_nodes] += self.enc_mask_token
        return out_x, mask_nodes, keep_nodes

    def forward(self, g, x: torch.Tensor):
        masked_x, mask_nodes, _ = self.mask_nodes(g, x)
        enc_rep = self.encoder(g, masked_x)
        rep = self.blocks["encoder_to_decoder"](enc_rep)
        rep[mask_nodes] = 0.0
        recon = self.blocks["decoder"](g, rep)
        return recon, mask_nodes

    @torch.no_grad()
    def embed(self, g, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(g, x)


def build_model(cfg: ModelConfig, in_dim: int) -> GraphMAE:
    model = GraphMAE(cfg, in_dim)
    if cfg.freeze_encoder:
        model.encoder.requires_grad_(False)
    return model
