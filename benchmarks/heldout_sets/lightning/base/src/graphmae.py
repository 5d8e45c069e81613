"""GraphMAE: GAT encoder, learnable [MASK] token, re-masking and a one-layer GIN decoder."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv, GINConv


class GATEncoder(nn.Module):
    def __init__(self, in_dim, hidden, heads, num_layers, feat_drop, attn_drop, negative_slope):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        dim = in_dim
        for _ in range(num_layers):
            self.convs.append(GATConv(dim, hidden // heads, heads, feat_drop=feat_drop,
                                      attn_drop=attn_drop, negative_slope=negative_slope))
            self.norms.append(nn.BatchNorm1d(hidden))
            self.acts.append(nn.PReLU())
            dim = hidden

    def forward(self, g, x):
        h = x
        for conv, norm, act in zip(self.convs, self.norms, self.acts):
            h = act(norm(conv(g, h).flatten(1)))
        return h


class GraphMAE(nn.Module):
    def __init__(self, in_dim, hidden, heads, num_layers, feat_drop, attn_drop,
                 negative_slope, mask_rate):
        super().__init__()
        self.mask_rate = mask_rate
        self.encoder = GATEncoder(in_dim, hidden, heads, num_layers, feat_drop, attn_drop,
                                  negative_slope)
        self.mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = GINConv(nn.Linear(hidden, in_dim), aggregator_type="mean")

    def mask(self, x, generator=None):
        n = x.shape[0]
        perm = torch.randperm(n, generator=generator).to(x.device)
        mask = torch.zeros(n, dtype=torch.bool, device=x.device)
        mask[perm[: int(self.mask_rate * n)]] = True
        x_in = torch.where(mask.unsqueeze(1), self.mask_token.to(x.dtype), x)
        return x_in, mask

    def encode(self, g, x):
        return self.encoder(g, x)

    def decode(self, g, z, mask):
        h = self.encoder_to_decoder(z)
        h = h.masked_fill(mask.unsqueeze(1), 0.0)  # re-mask
        return self.decoder(g, h)

    def forward(self, g, x, generator=None):
        x_in, mask = self.mask(x, generator)
        z = self.encode(g, x_in)
        x_hat = self.decode(g, z, mask)
        return x_hat[mask], x[mask], z


def build_model(cfg):
    m = cfg["model"]
    return GraphMAE(cfg["data"]["feat_dim"], m["hidden"], m["heads"], m["num_layers"],
                    m["feat_drop"], m["attn_drop"], m["negative_slope"], m["mask_rate"])


def sce_loss(pred, target, alpha):
    pred = F.normalize(pred, p=2, dim=-1)
    target = F.normalize(target, p=2, dim=-1)
    return (1 - (pred * target).sum(dim=-1)).pow(alpha).mean()


def reconstruction_loss(pred, target, weights, alpha):
    """Weighted sum of MSE and scaled cosine error on the masked nodes."""
    parts = {
        "mse": (pred - target).pow(2).mean(),
        "sce": sce_loss(pred, target, alpha),
    }
    total = sum(weights.get(name, 0.0) * value for name, value in parts.items())
    return total, parts
