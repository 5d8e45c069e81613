import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl.nn import GINConv, GraphConv

NORMS = {
    "batchnorm": nn.BatchNorm1d,
    "layernorm": nn.LayerNorm,
    "none": lambda dim: nn.Identity(),
}


def make_mlp(in_dim: int, out_dim: int, norm: str) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(in_dim, out_dim),
        NORMS[norm](out_dim),
        nn.ReLU(),
        nn.Linear(out_dim, out_dim),
    )


def make_conv(kind: str, in_dim: int, out_dim: int, norm: str) -> nn.Module:
    if kind == "gin":
        return GINConv(make_mlp(in_dim, out_dim, norm), aggregator_type="sum")
    if kind == "gcn":
        return GraphConv(in_dim, out_dim, norm="both", allow_zero_in_degree=True)
    raise ValueError(f"unknown encoder {kind}")


class GNNEncoder(nn.Module):
    def __init__(self, kind: str, in_dim: int, hidden_dim: int, num_layers: int,
                 dropout: float, norm: str):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(num_layers):
            dim_in = in_dim if i == 0 else hidden_dim
            self.convs.append(make_conv(kind, dim_in, hidden_dim, norm))
            self.norms.append(NORMS[norm](hidden_dim))
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, x: torch.Tensor) -> torch.Tensor:
        h = x
        for conv, norm in zip(self.convs, self.norms):
            h = conv(g, h)
            h = F.relu(norm(h))
            h = self.dropout(h)
        return h
