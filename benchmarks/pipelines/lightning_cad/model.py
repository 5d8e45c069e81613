"""GraphMAE for curve graphs: GAT encoder, GAT decoder, masked feature reconstruction."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv

from data import K


class GATEncoder(nn.Module):
    def __init__(self, in_dim, hidden, num_layers=2, heads=4, dropout=0.0):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        dim = in_dim
        for _ in range(num_layers):
            self.convs.append(GATConv(dim, hidden // heads, heads, feat_drop=dropout,
                                      attn_drop=dropout, residual=True))
            self.norms.append(nn.BatchNorm1d(hidden))
            self.acts.append(nn.PReLU())
            dim = hidden

    def forward(self, g, x):
        h = x
        for conv, norm, act in zip(self.convs, self.norms, self.acts):
            h = act(norm(conv(g, h).flatten(1)))
        return h


class GraphMAE(nn.Module):
    def __init__(self, in_dim=9 * K, hidden=64, heads=4, num_layers=2, mask_rate=0.3, dropout=0.0):
        super().__init__()
        self.mask_rate = mask_rate
        self.encoder = GATEncoder(in_dim, hidden, num_layers, heads, dropout)
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = GATConv(hidden, in_dim, 1)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))

    def sample_mask(self, num_nodes, device, generator=None):
        perm = torch.randperm(num_nodes, device=device, generator=generator)
        num_mask = max(1, int(self.mask_rate * num_nodes))
        return perm[:num_mask]

    def forward(self, g, x, mask_nodes=None):
        """Returns (reconstruction for all nodes, indices of the masked nodes)."""
        if mask_nodes is None:
            mask_nodes = self.sample_mask(g.num_nodes(), x.device)
        x_in = x.clone()
        x_in[mask_nodes] = 0.0
        x_in[mask_nodes] += self.enc_mask_token

        h = self.encoder(g, x_in)
        h = self.encoder_to_decoder(h)
        h[mask_nodes] = 0.0  # re-mask before decoding
        recon = self.decoder(g, h).squeeze(1)
        return recon, mask_nodes


def split_features(x):
    """[N, 9K] -> xyz, tangent, normal, each [N, K, 3]."""
    return x[:, :3 * K].view(-1, K, 3), x[:, 3 * K:6 * K].view(-1, K, 3), x[:, 6 * K:].view(-1, K, 3)


def sce_loss(pred, target, alpha=2.0):
    """Scaled cosine error from GraphMAE, over the last dimension."""
    cos = F.cosine_similarity(pred, target, dim=-1)
    return (1.0 - cos).pow(alpha).mean()


def reconstruction_loss(pred, target, coord_weight=1.0, dir_weight=1.0, alpha=2.0):
    """pred/target: features of the masked nodes only."""
    p_xyz, p_tan, p_nrm = split_features(pred)
    t_xyz, t_tan, t_nrm = split_features(target)
    coord = F.mse_loss(p_xyz, t_xyz)
    direction = sce_loss(p_tan, t_tan, alpha) + sce_loss(p_nrm, t_nrm, alpha)
    return coord_weight * coord + dir_weight * direction, coord, direction
