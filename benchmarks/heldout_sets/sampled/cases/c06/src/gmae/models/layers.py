import dgl.function as fn
import torch
from torch import nn


class BlockConv(nn.Module):
    """Mean aggregation over the (sampled) in-neighbours of the destination
    nodes of a block, plus a skip from the destination node itself.  Works
    on a block (MFG) or on a whole graph (then dst == src)."""

    def __init__(self, in_dim, out_dim, norm=True, activation=True, dropout=0.0):
        super().__init__()
        self.neigh = nn.Linear(in_dim, out_dim)
        self.skip = nn.Linear(in_dim, out_dim, bias=False)
        self.norm = nn.BatchNorm1d(out_dim) if norm else None
        self.act = nn.PReLU() if activation else None
        self.drop = nn.Dropout(dropout)

    def forward(self, block, h):
        h = self.drop(h)
        n_dst = block.num_dst_nodes()
        with block.local_scope():
            block.srcdata["h"] = h
            block.update_all(fn.copy_u("h", "m"), fn.mean("m", "agg"))
            agg = block.dstdata["agg"]
        out = self.neigh(agg) + self.skip(h[:n_dst])
        if self.norm is not None:
            out = self.norm(out)
        if self.act is not None:
            out = self.act(out)
        return out
