import torch
import torch.nn as nn
from dgl.nn import GINConv


class MLP(nn.Module):
    def __init__(self, i, h, o):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, o))

    def forward(self, x):
        return self.net(x)


class GINEncoder(nn.Module):
    def __init__(self, in_dim, hidden, num_layers):
        super().__init__()
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(num_layers):
            self.layers.append(GINConv(MLP(in_dim if i == 0 else hidden, hidden, hidden), "sum"))
            self.norms.append(nn.BatchNorm1d(hidden))
        self.act = nn.PReLU()

    def forward(self, g, x):
        h = x
        for conv, bn in zip(self.layers, self.norms):
            h = self.act(bn(conv(g, h)))
        return h


class GraphMAE(nn.Module):
    def __init__(self, in_dim, hidden, num_layers, **_):
        super().__init__()
        self.encoder = GINEncoder(in_dim, hidden, num_layers)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = GINConv(nn.Linear(hidden, in_dim), "sum")
        self.predictor = nn.Linear(hidden, hidden)

    def mask_input(self, x, mask_nodes):
        out = x.clone()
        out[mask_nodes] = 0.0
        out[mask_nodes] += self.enc_mask_token
        return out

    def encode(self, g, x):
        return self.encoder(g, x)

    def decode(self, g, h, mask_nodes):
        rep = self.encoder_to_decoder(h)
        rep[mask_nodes] = 0.0  # re-mask before decoding
        return self.decoder(g, rep)

    def forward(self, g, x, mask_nodes):
        h = self.encode(g, self.mask_input(x, mask_nodes))
        return {"recon": self.decode(g, h, mask_nodes), "latent": self.predictor(h)}
