import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 8)
        self.norm = nn.BatchNorm1d(8)
        self.dec = nn.Linear(8, 6)

    def forward(self, x):
        return self.dec(torch.relu(self.norm(self.enc(x))))


def batches(n):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(16, 6, generator=g) for _ in range(n)]
