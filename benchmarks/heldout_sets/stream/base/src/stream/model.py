"""GraphMAE with a GCN encoder, a GCN decoder and a latent predictor for the EMA-teacher target."""
import torch
import torch.nn as nn
from dgl.nn import GraphConv


class Encoder(nn.Module):
    def __init__(self, in_dim, hidden, num_layers, feat_drop):
        super().__init__()
        self.drop = nn.Dropout(feat_drop)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        for i in range(num_layers):
            self.convs.append(GraphConv(in_dim if i == 0 else hidden, hidden))
            self.norms.append(nn.BatchNorm1d(hidden))
            self.acts.append(nn.PReLU())

    def forward(self, g, x):
        h = self.drop(x)
        for conv, norm, act in zip(self.convs, self.norms, self.acts):
            h = act(norm(conv(g, h)))
        return h


class GraphMAE(nn.Module):
    def __init__(self, in_dim, hidden, num_layers, feat_drop, mask_rate):
        super().__init__()
        self.mask_rate = mask_rate
        self.encoder = Encoder(in_dim, hidden, num_layers, feat_drop)
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = GraphConv(hidden, in_dim)
        self.predictor = nn.Sequential(nn.Linear(hidden, hidden), nn.PReLU(), nn.Linear(hidden, hidden))
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))

    def mask_attr(self, x, mask_nodes):
        out = x.clone()
        out[mask_nodes] = 0.0
        out[mask_nodes] += self.enc_mask_token
        return out

    def decode(self, g, rep, mask_nodes):
        rep = self.encoder_to_decoder(rep).clone()
        rep[mask_nodes] = 0.0                     # re-mask before the decoder
        return self.decoder(g, rep)

    def forward(self, g, x, mask_nodes):
        rep = self.encoder(g, self.mask_attr(x, mask_nodes))
        return self.decode(g, rep, mask_nodes), self.predictor(rep)


def build_model(cfg, in_dim):
    m = cfg.model
    return GraphMAE(in_dim, m.hidden, m.num_layers, m.feat_drop, m.mask_rate)
