"""Points to reconstruct, a DataLoader over them, and a collate function that augments."""
import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __init__(self, n=64, seed=0):
        self.x = torch.randn(n, 6, generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


def collate(rows):
    return torch.stack(rows)


def jitter(rows):
    x = torch.stack(rows)
    return x + 0.1 * torch.randn_like(x)


def make_loader(dataset, collate_fn=collate):
    return DataLoader(dataset, batch_size=16, shuffle=True, collate_fn=collate_fn,
                      generator=torch.Generator().manual_seed(0))
