"""Relation-wise encoder / decoder over a DGL heterograph."""
import dgl.nn as dglnn
import torch
import torch.nn as nn


class HeteroEncoder(nn.Module):
    def __init__(self, in_dims, hidden, num_layers, canonical_etypes, conv, norm, dropout, aggregate="mean"):
        super().__init__()
        ntypes = sorted(in_dims)
        self.input_proj = nn.ModuleDict({t: nn.Linear(in_dims[t], hidden) for t in ntypes})
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(dglnn.HeteroGraphConv(
                {rel: conv(hidden, hidden) for _, rel, _ in canonical_etypes}, aggregate=aggregate))
            self.norms.append(nn.ModuleDict({t: norm(hidden) for t in ntypes}))
            self.acts.append(nn.ModuleDict({t: nn.PReLU() for t in ntypes}))
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, x):
        h = {t: self.input_proj[t](v) for t, v in x.items()}
        for layer, norms, acts in zip(self.layers, self.norms, self.acts):
            h = layer(g, h)
            h = {t: self.dropout(acts[t](norms[t](v))) for t, v in h.items()}
        return h


class HeteroDecoder(nn.Module):
    def __init__(self, hidden, out_dims, canonical_etypes, conv, aggregate="mean"):
        super().__init__()
        self.layer = dglnn.HeteroGraphConv(
            {rel: conv(hidden, out_dims[dst]) for _, rel, dst in canonical_etypes}, aggregate=aggregate)
        self.skip = nn.ModuleDict({t: nn.Linear(hidden, d) for t, d in sorted(out_dims.items())})

    def forward(self, g, h):
        out = self.layer(g, h)
        return {t: out[t] + self.skip[t](h[t]) for t in out}
