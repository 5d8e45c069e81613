"""GNN backbones (GAT / GraphSAGE / GIN / MLP) and the GraphMAE autoencoder."""
import torch
import torch.nn as nn
from dgl.nn import GATConv, GINConv, SAGEConv

from registry import get_model_class, register_model


class GNNStack(nn.Module):
    """`num_layers` graph convolutions. As an encoder every layer is followed by
    BatchNorm + PReLU; as a decoder (encoding=False) the last layer is linear."""

    def __init__(self, in_dim, hidden_dim, out_dim, num_layers=2, num_heads=4,
                 dropout=0.0, encoding=True):
        super().__init__()
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.acts = nn.ModuleList()
        self.dropout = nn.Dropout(dropout)
        for i in range(num_layers):
            last = i == num_layers - 1
            d_in = in_dim if i == 0 else hidden_dim
            d_out = out_dim if last else hidden_dim
            self.layers.append(self.make_conv(d_in, d_out, num_heads if (encoding or not last) else 1))
            use_post = encoding or not last
            self.norms.append(nn.BatchNorm1d(d_out) if use_post else nn.Identity())
            self.acts.append(nn.PReLU() if use_post else nn.Identity())

    def make_conv(self, d_in, d_out, heads):
        raise NotImplementedError

    def conv(self, layer, g, h):
        return layer(g, h)

    def forward(self, g, h):
        for layer, norm, act in zip(self.layers, self.norms, self.acts):
            h = act(norm(self.conv(layer, g, self.dropout(h))))
        return h


@register_model("gat")
class GATStack(GNNStack):
    def make_conv(self, d_in, d_out, heads):
        assert d_out % heads == 0, "hidden_dim must be divisible by num_heads"
        return GATConv(d_in, d_out // heads, heads, residual=True)

    def conv(self, layer, g, h):
        return layer(g, h).flatten(1)  # concat heads


@register_model("sage")
class SAGEStack(GNNStack):
    def make_conv(self, d_in, d_out, heads):
        return SAGEConv(d_in, d_out, aggregator_type="mean")


@register_model("gin")
class GINStack(GNNStack):
    def make_conv(self, d_in, d_out, heads):
        mlp = nn.Sequential(nn.Linear(d_in, d_out), nn.PReLU(), nn.Linear(d_out, d_out))
        return GINConv(mlp, aggregator_type="sum", learn_eps=True)


@register_model("mlp")
class MLPStack(GNNStack):
    """Ignores the graph; mostly useful as a decoder baseline."""

    def make_conv(self, d_in, d_out, heads):
        return nn.Linear(d_in, d_out)

    def conv(self, layer, g, h):
        return layer(h)


@register_model("graphmae")
class GraphMAE(nn.Module):
    def __init__(self, encoder, decoder, in_dim, hidden_dim, mask_rate=0.3):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.mask_rate = mask_rate
        # re-masking only makes sense when the decoder can look at neighbours
        self.remask = not isinstance(decoder, MLPStack)
        self.encoder_to_decoder = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))

    @classmethod
    def from_config(cls, cfg):
        in_dim = 9 * cfg.get("num_points", 8)
        hidden = cfg.get("hidden_dim", 64)
        encoder = get_model_class(cfg.get("encoder", "gat"))(
            in_dim, hidden, hidden, num_layers=cfg.get("num_layers", 2),
            num_heads=cfg.get("num_heads", 4), dropout=cfg.get("dropout", 0.0), encoding=True)
        decoder = get_model_class(cfg.get("decoder", "gat"))(
            hidden, hidden, in_dim, num_layers=1, num_heads=1, encoding=False)
        return cls(encoder, decoder, in_dim, hidden, mask_rate=cfg.get("mask_rate", 0.3))

    def mask_nodes(self, num_nodes, generator=None):
        perm = torch.randperm(num_nodes, generator=generator)
        return perm[: max(1, int(self.mask_rate * num_nodes))]

    def forward(self, g, x, mask=None):
        if mask is None:
            mask = self.mask_nodes(g.num_nodes())
        x = x.clone()
        x[mask] = 0.0
        x[mask] += self.enc_mask_token
        h = self.encoder(g, x)
        h = self.encoder_to_decoder(h)
        if self.remask:
            h[mask] = 0.0  # re-mask: decoder only sees the neighbours' codes
        return self.decoder(g, h), mask
