"""Plain-loop reference: same data, same model, no engine/handlers."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from config import load_config  # noqa: E402
from data import build_loaders  # noqa: E402
from handlers import evaluate  # noqa: E402
from models import build_criterion, build_model  # noqa: E402
from utils import seed_everything  # noqa: E402


def main(argv=None):
    cfg = load_config(argv)
    seed_everything(cfg.seed)
    torch.set_num_threads(1)
    train_loader, val_loader, _ = build_loaders(cfg)
    model = build_model(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_gamma)
    criterion = build_criterion(cfg)
    step = 0
    while step < cfg.max_steps:
        for bg in train_loader:
            model.train()
            out = model(bg, bg.ndata["x"])
            m = out["mask_nodes"]
            loss = (cfg.loss_weights["rec"] * criterion(out["recon"][m], out["target"][m])
                    + cfg.loss_weights["latent_l2"] * out["enc_rep"].pow(2).mean())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step >= cfg.max_steps:
                break
    res = evaluate(model, val_loader)
    res["final_loss"] = loss.item()
    print(json.dumps({k: round(v, 6) for k, v in res.items()}))


if __name__ == "__main__":
    main()
