"""Plain-loop reference: same data, model and loss as gmae2.run, no trainer."""
import json

import torch

from gmae2.config import load_config
from gmae2.data import build_datasets, build_loaders
from gmae2.models import build_model
from gmae2.train.trainer import reconstruction_metrics
from gmae2.utils import seed_everything


def main():
    cfg = load_config("configs/base.yaml")
    seed_everything(cfg.seed)
    train_set, test_set = build_datasets(cfg.data)
    train_loader, _, test_loader = build_loaders(train_set, test_set, cfg.data)
    model = build_model(cfg.model, train_set.feat_dim)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.optim.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.train.epochs, eta_min=1e-5)

    for epoch in range(cfg.train.epochs):
        model.train()
        losses = []
        for g, _ in train_loader:
            x = g.ndata["feat"]
            recon, mask_nodes = model(g, x)
            loss = model.criterion(recon[mask_nodes], x[mask_nodes])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
    metrics = reconstruction_metrics(model, test_loader)
    metrics["final_loss"] = sum(losses) / len(losses)
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
