from torch import nn

from ..registry import register
from .layers import BlockConv


@register("encoder", "gcn")
class BlockEncoder(nn.Module):
    def __init__(self, in_dim, hidden, num_layers, dropout=0.0, last_activation=True):
        super().__init__()
        dims = [in_dim] + [hidden] * num_layers
        self.layers = nn.ModuleList(
            BlockConv(dims[i], dims[i + 1], norm=True,
                      activation=(i < num_layers - 1) or last_activation, dropout=dropout)
            for i in range(num_layers)
        )

    def forward(self, blocks, h):
        # `blocks` is a list of MFGs (one per layer) or the same full graph repeated
        for layer, block in zip(self.layers, blocks):
            h = layer(block, h)
        return h


@register("decoder", "gcn")
class BlockDecoder(nn.Module):
    def __init__(self, hidden, out_dim):
        super().__init__()
        self.conv = BlockConv(hidden, out_dim, norm=False, activation=False)

    def forward(self, block, h):
        return self.conv(block, h)
