"""Reference: the same model, data and loss in a plain PyTorch loop (no Lightning)."""
import json
import sys

import torch

from config import load_config
from data import SyntheticGraphDataModule
from graphmae import build_model, reconstruction_loss
from lit_module import warmup_cosine
from metrics import masked_reconstruction
from seeding import seed_everything

cfg = load_config(sys.argv[1:])
seed_everything(cfg["seed"])
dm = SyntheticGraphDataModule(cfg["data"])
dm.setup("fit")
model = build_model(cfg)
o, max_steps = cfg["optim"], cfg["trainer"]["max_steps"]
opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"])
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, warmup_cosine(o["warmup_steps"], max_steps, o["min_lr_ratio"]))

step = 0
while step < max_steps:
    for g, x in dm.train_dataloader():
        model.train()
        pred, target, _ = model(g, x)
        loss, _ = reconstruction_loss(pred, target, cfg["loss"]["weights"], cfg["loss"]["alpha"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step == max_steps:
            break

result = masked_reconstruction(model, dm.val_dataloader())
print(json.dumps({k: round(v, 6) for k, v in result.items()} | {"final_loss": round(loss.item(), 6)}))
