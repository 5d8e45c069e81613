"""The pipeline: its own seeding, a Trainer that calls the model's parts one by one."""
import random

import numpy as np
import torch

from data import Points, collate, make_loader
from model import AutoEncoder


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def training_step(self, x):
        model = self.model
        mask = model.sample_mask(len(x))
        masked = x.clone()
        masked[mask] = 0.0
        recon = model.decoder(model.encoder(masked))
        loss = ((recon[mask] - x[mask]) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def main():
    seed_all(0)
    model = AutoEncoder()
    trainer = Trainer(model, torch.optim.Adam(model.parameters(), lr=1e-2))
    for step, x in enumerate(make_loader(Points(), collate_fn=collate)):
        trainer.training_step(x)


if __name__ == "__main__":
    main()
