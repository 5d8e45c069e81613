"""GraphMAE for batches of small graphs: GCN/GIN encoder with a norm chosen by name, learnable mask token,
encoder_to_decoder, re-mask, one-layer GNN decoder, mean-pooled graph embeddings."""
import dgl
import dgl.nn as dglnn
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def make_norm(name, dim, momentum=0.1):
    if name == "batchnorm":
        return nn.BatchNorm1d(dim, momentum=momentum)
    if name == "layernorm":
        return nn.LayerNorm(dim)
    if name in ("none", None):
        return nn.Identity()
    raise ValueError(f"unknown norm {name!r}")


def make_conv(kind, d_in, d_out):
    if kind == "gcn":
        return dglnn.GraphConv(d_in, d_out, norm="both")
    if kind == "gin":
        return dglnn.GINConv(nn.Linear(d_in, d_out), aggregator_type="sum", learn_eps=True)
    raise ValueError(f"unknown encoder {kind!r}")


class Encoder(nn.Module):
    def __init__(self, cfg, in_dim):
        super().__init__()
        dims = [in_dim] + [cfg.hidden] * cfg.num_layers
        self.layers = nn.ModuleList(make_conv(cfg.encoder, a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(make_norm(cfg.norm, cfg.hidden, cfg.bn_momentum) for _ in self.layers)
        self.acts = nn.ModuleList(nn.PReLU() for _ in self.layers)
        self.dropout = nn.Dropout(cfg.dropout)
        self.grad_checkpoint = cfg.grad_checkpoint

    def _block(self, i, g, h):
        return self.dropout(self.acts[i](self.norms[i](self.layers[i](g, h))))

    def forward(self, g, x):
        h = x
        for i in range(len(self.layers)):
            if self.grad_checkpoint and self.training:
                h = checkpoint(self._block, i, g, h, use_reentrant=False)
            else:
                h = self._block(i, g, h)
        return h


class GraphMAE(nn.Module):
    def __init__(self, cfg, in_dim):
        super().__init__()
        self.encoder = Encoder(cfg, in_dim)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder_to_decoder = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.decoder = dglnn.GraphConv(cfg.hidden, in_dim, norm="both")

    def mask_input(self, x, mask):
        out = x.clone()
        out[mask] = 0.0
        out[mask] += self.enc_mask_token
        return out

    def encode(self, g, x):
        return self.encoder(g, x)

    def decode(self, g, h, mask):
        rep = self.encoder_to_decoder(h)
        rep[mask] = 0.0                         # re-mask before decoding
        return self.decoder(g, rep)

    def forward(self, g, x, mask):
        return self.decode(g, self.encode(g, self.mask_input(x, mask)), mask)

    @torch.no_grad()
    def embed(self, g, x):
        with g.local_scope():
            g.ndata["h"] = self.encode(g, x)
            return dgl.mean_nodes(g, "h")
