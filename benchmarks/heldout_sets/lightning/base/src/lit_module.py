import math

import pytorch_lightning as pl
import torch

from graphmae import build_model, reconstruction_loss


def warmup_cosine(warmup, total, min_ratio):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


class LitGraphMAE(pl.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.save_hyperparameters(cfg)
        self.cfg = cfg
        self.model = build_model(cfg)
        if cfg["stage"] != "pretrain":
            # linear-probe / finetune stages keep the pretrained encoder fixed
            self.model.encoder.requires_grad_(False)
        self.loss_weights = dict(cfg["loss"]["weights"])
        self.alpha = cfg["loss"]["alpha"]
        self.loss_history = []

    @torch.no_grad()
    def embed(self, g, x):
        return self.model.encode(g, x)

    def training_step(self, batch, batch_idx):
        g, x = batch
        x_in, mask = self.model.mask(x)
        z = self.model.encode(g, x_in)
        x_hat = self.model.decode(g, z, mask)
        loss, parts = reconstruction_loss(x_hat[mask], x[mask], self.loss_weights, self.alpha)
        n = int(mask.sum())
        self.log("train/loss", loss, batch_size=n)
        for name, value in parts.items():
            self.log(f"train/{name}", value, batch_size=n)
        self.loss_history.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        g, x = batch
        gen = torch.Generator().manual_seed(1234 + batch_idx)
        pred, target, _ = self.model(g, x, generator=gen)
        mse = (pred.float() - target.float()).pow(2).mean()
        cos = torch.nn.functional.cosine_similarity(pred.float(), target.float(), dim=-1).mean()
        self.log("val/mse", mse, batch_size=target.shape[0])
        self.log("val/cos", cos, batch_size=target.shape[0])

    def configure_optimizers(self):
        o = self.cfg["optim"]
        opt = torch.optim.AdamW(self.model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"])
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, warmup_cosine(o["warmup_steps"], self.cfg["trainer"]["max_steps"], o["min_lr_ratio"]))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
