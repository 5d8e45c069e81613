"""HGMAE-style masked autoencoder: per-type feature masking with learnable per-type mask tokens,
relation-wise GNN encoder, re-mask, relation-wise GNN decoder."""
import torch
import torch.nn as nn

from ..registry import instantiate


class HGMAE(nn.Module):
    def __init__(self, in_dims, canonical_etypes, hidden, num_layers, dropout, mask_rate, encoder, decoder):
        super().__init__()
        self.ntypes = sorted(in_dims)
        self.mask_rate = dict(mask_rate)
        self.encoder = instantiate(encoder, in_dims=in_dims, hidden=hidden, num_layers=num_layers,
                                   canonical_etypes=canonical_etypes, dropout=dropout)
        self.enc_mask_token = nn.ParameterDict(
            {t: nn.Parameter(torch.zeros(1, in_dims[t])) for t in self.ntypes})
        self.encoder_to_decoder = nn.ModuleDict(
            {t: nn.Linear(hidden, hidden, bias=False) for t in self.ntypes})
        self.decoder = instantiate(decoder, hidden=hidden, out_dims=in_dims, canonical_etypes=canonical_etypes)

    def sample_masks(self, candidates):
        """Random subset (mask_rate) of the candidate nodes of every type."""
        masks = {}
        for t in self.ntypes:
            idx = candidates[t]
            n_mask = int(self.mask_rate[t] * len(idx))
            masks[t] = idx[torch.randperm(len(idx))[:n_mask]]
        return masks

    def encoding_mask_noise(self, x, masks):
        out = {}
        for t, feat in x.items():
            feat = feat.clone()
            feat[masks[t]] = 0.0
            feat[masks[t]] += self.enc_mask_token[t]
            out[t] = feat
        return out

    def forward(self, g, x, masks):
        x_masked = self.encoding_mask_noise(x, masks)
        enc = self.encoder(g, x_masked)
        rep = {t: self.encoder_to_decoder[t](h) for t, h in enc.items()}
        for t in rep:
            rep[t][masks[t]] = 0.0      # re-mask before decoding
        return self.decoder(g, rep)

    @torch.no_grad()
    def embed(self, g, x):
        return self.encoder(g, x)
