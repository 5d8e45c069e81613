"""GraphMAE: masked feature reconstruction with a GAT encoder/decoder."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GATConv


class GATEncoder(nn.Module):
    def __init__(self, in_dim, num_hidden, num_layers, num_heads, feat_drop, attn_drop):
        super().__init__()
        assert num_hidden % num_heads == 0
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        d = in_dim
        for _ in range(num_layers):
            self.layers.append(GATConv(d, num_hidden // num_heads, num_heads,
                                       feat_drop=feat_drop, attn_drop=attn_drop, residual=True))
            self.norms.append(nn.BatchNorm1d(num_hidden))
            self.acts.append(nn.PReLU())
            d = num_hidden

    def forward(self, g, x):
        h = x
        for conv, norm, act in zip(self.layers, self.norms, self.acts):
            h = conv(g, h).flatten(1)
            h = act(norm(h))
        return h


def sce_loss(x, y, alpha=2.0):
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)
    return (1 - (x * y).sum(dim=-1)).pow(alpha).mean()


class GraphMAE(nn.Module):
    def __init__(self, in_dim, num_hidden, num_layers, num_heads, mask_rate, feat_drop, attn_drop):
        super().__init__()
        self.mask_rate = mask_rate
        self.encoder = GATEncoder(in_dim, num_hidden, num_layers, num_heads, feat_drop, attn_drop)
        self.encoder_to_decoder = nn.Linear(num_hidden, num_hidden, bias=False)
        self.decoder = GATConv(num_hidden, in_dim, 1, feat_drop=0.0, attn_drop=attn_drop, residual=True)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))

    def mask_nodes(self, g, x, generator=None):
        n = g.num_nodes()
        perm = torch.randperm(n, generator=generator, device=x.device)
        num_mask = int(self.mask_rate * n)
        mask_nodes = perm[:num_mask]
        out_x = x.clone()
        out_x[mask_nodes] = 0.0
        out_x[mask_nodes] += self.enc_mask_token
        return out_x, mask_nodes

    def forward(self, g, x, generator=None):
        use_x, mask_nodes = self.mask_nodes(g, x, generator)
        enc_rep = self.encoder(g, use_x)
        rep = self.encoder_to_decoder(enc_rep)
        rep = rep.clone()
        rep[mask_nodes] = 0.0  # re-mask before decoding
        recon = self.decoder(g, rep).flatten(1)
        return {"recon": recon, "target": x, "mask_nodes": mask_nodes, "enc_rep": enc_rep}

    @torch.no_grad()
    def embed(self, g, x):
        return self.encoder(g, x)


def build_criterion(cfg):
    if cfg.loss_fn == "mse":
        return lambda pred, target: F.mse_loss(pred, target)
    if cfg.loss_fn == "sce":
        return lambda pred, target: sce_loss(pred, target, cfg.sce_alpha)
    raise ValueError(cfg.loss_fn)


def build_model(cfg):
    model = GraphMAE(cfg.feat_dim, cfg.num_hidden, cfg.num_layers, cfg.num_heads,
                     cfg.mask_rate, cfg.feat_drop, cfg.attn_drop)
    if not cfg.pretrain:  # linear-probe style runs keep the pretrained encoder fixed
        model.encoder.requires_grad_(False)
    return model


def build_optimizer(cfg, model):
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
