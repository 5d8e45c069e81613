"""GraphMAE for graph-level data: GIN encoder with configurable norms, mask token,
encoder_to_decoder, re-mask, GIN decoder."""
import torch
import torch.nn as nn
from dgl.nn import GINConv

from .registry import MODELS, NORMS


@NORMS.register("batchnorm")
class BatchNorm(nn.BatchNorm1d):
    def forward(self, g, h):
        return super().forward(h)


@NORMS.register("layernorm")
class LayerNorm(nn.LayerNorm):
    def forward(self, g, h):
        return super().forward(h)


@NORMS.register("graphnorm")
class GraphNorm(nn.Module):
    """Normalise each graph of the batch with its own node statistics."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.mean_scale = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, g, h):
        counts = g.batch_num_nodes()
        seg = torch.repeat_interleave(torch.arange(counts.numel()), counts)
        mean = torch.zeros(counts.numel(), h.shape[1]).index_add_(0, seg, h) / counts[:, None]
        sub = h - mean[seg] * self.mean_scale
        var = torch.zeros(counts.numel(), h.shape[1]).index_add_(0, seg, sub.pow(2)) / counts[:, None]
        return self.weight * sub / (var[seg] + self.eps).sqrt() + self.bias


def gin_mlp(d_in, hidden, d_out):
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))


class GINEncoder(nn.Module):
    def __init__(self, in_dim, hidden, num_layers, norm, feat_drop):
        super().__init__()
        self.drop = nn.Dropout(feat_drop)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        for i in range(num_layers):
            self.convs.append(GINConv(gin_mlp(in_dim if i == 0 else hidden, hidden, hidden), "sum"))
            self.norms.append(NORMS.get(norm)(hidden))
            self.acts.append(nn.PReLU())

    def forward(self, g, x, return_hidden=False):
        h, hidden = x, []
        for conv, norm, act in zip(self.convs, self.norms, self.acts):
            h = act(norm(g, conv(g, self.drop(h))))
            hidden.append(h)
        return (h, hidden) if return_hidden else h


@MODELS.register("graphmae")
class GraphMAE(nn.Module):
    def __init__(self, in_dim, hidden=64, num_layers=2, norm="batchnorm", feat_drop=0.1, mask_rate=0.5):
        super().__init__()
        self.mask_rate = mask_rate
        self.encoder = GINEncoder(in_dim, hidden, num_layers, norm, feat_drop)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = GINConv(gin_mlp(hidden, hidden, in_dim), "sum")

    def mask_features(self, x, mask_nodes):
        out = x.clone()
        out[mask_nodes] = 0.0
        out[mask_nodes] += self.enc_mask_token
        return out

    def remask(self, rep, mask_nodes):
        rep = rep.clone()
        rep[mask_nodes] = 0.0
        return rep

    def forward(self, g, x_masked, mask_nodes):
        enc = self.encoder(g, x_masked)
        rep = self.encoder_to_decoder(enc)
        rep = self.remask(rep, mask_nodes)
        return self.decoder(g, rep)

    def embed(self, g, x):
        return self.encoder(g, x, return_hidden=True)[1]
