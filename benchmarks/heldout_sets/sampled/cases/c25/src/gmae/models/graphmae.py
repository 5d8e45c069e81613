import torch
from torch import nn

from ..registry import build


class GraphMAE(nn.Module):
    """mask token on input nodes -> encoder (all blocks but the last) ->
    encoder_to_decoder -> re-mask -> decoder (last block) -> seed predictions."""

    def __init__(self, in_dim, hidden, num_layers, encoder="gcn", decoder="gcn", feat_drop=0.0):
        super().__init__()
        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        self.encoder = build("encoder", encoder, in_dim, hidden, num_layers, dropout=feat_drop)
        self.encoder_to_decoder = nn.Linear(hidden, hidden, bias=False)
        self.decoder = build("decoder", decoder, hidden, in_dim)
        self.num_layers = num_layers

    def mask_input(self, x, mask):
        x = x.clone()
        x[mask] = 0.0
        x[mask] += self.enc_mask_token
        return x

    def encode(self, blocks, x):
        return self.encoder(blocks, x)

    def decode(self, block, h, mask):
        rep = self.encoder_to_decoder(h)
        # re-mask: nodes that were masked at the input stay hidden for the decoder
        rep[mask[: rep.shape[0]]] = 0.0
        return self.decoder(block, rep)

    def forward(self, blocks, x, mask):
        """blocks: num_layers + 1 MFGs; x: input-node features; mask: bool over
        input nodes.  Returns predictions for the seed (output) nodes."""
        h = self.encode(blocks[:-1], self.mask_input(x, mask))
        return self.decode(blocks[-1], h, mask)

    def embed(self, graph_or_blocks, x):
        if not isinstance(graph_or_blocks, (list, tuple)):
            graph_or_blocks = [graph_or_blocks] * self.num_layers
        return self.encode(graph_or_blocks, x)


def build_model(cfg, in_dim):
    m = cfg.model
    return GraphMAE(in_dim, m.hidden, m.num_layers, encoder=m.encoder,
                    decoder=m.decoder, feat_drop=m.feat_drop)
