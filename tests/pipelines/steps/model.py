"""A masked auto-encoder whose masks come from numpy's global RNG."""
import numpy as np
import torch
from torch import nn


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.decoder = nn.Linear(8, 6)

    def sample_mask(self, n):
        return torch.from_numpy(np.random.permutation(n)[: n // 2])

    def loss(self, x, mask):
        masked = x.clone()
        masked[mask] = 0.0
        recon = self.decoder(self.encoder(masked))
        return ((recon[mask] - x[mask]) ** 2).mean()

    def forward(self, x):
        return self.loss(x, self.sample_mask(len(x)))
