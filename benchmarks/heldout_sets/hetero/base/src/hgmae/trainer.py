"""Pretraining loop, held-out reconstruction, checkpointing and the linear probe."""
import os
import tempfile

import dgl
import torch
import torch.nn.functional as F

from .data import NTYPES, build_dataset
from .losses import build_loss
from .models import build_model, freeze
from .probe import linear_probe
from .registry import instantiate
from .runner import Runner
from .utils import count_parameters, log_metrics, seed_everything


@torch.no_grad()
def reconstruction_metrics(model, g, x, masks):
    model.eval()
    recon = model(g, x, masks)
    cos = {t: float(F.cosine_similarity(recon[t][m], x[t][m], dim=-1).mean()) for t, m in masks.items()}
    mse = {t: float(F.mse_loss(recon[t][m], x[t][m])) for t, m in masks.items()}
    return cos, mse


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model):
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(ckpt["model"], strict=True)
    return ckpt["epoch"]


class Trainer:
    def __init__(self, cfg, dataset, runner):
        self.cfg, self.data, self.runner = cfg, dataset, runner
        self.g = dataset.graph
        self.x = dataset.feats
        model = build_model(cfg["model"], dataset)
        freeze(model, cfg["model"]["freeze"])
        self.trainable_params = count_parameters(model)
        torch.manual_seed(cfg["seed"] + runner.rank)     # per-rank stream for masks / dropout / noise
        optimizer = instantiate(cfg["optim"], params=[p for p in model.parameters() if p.requires_grad])
        self.model, self.optimizer = runner.prepare(model, optimizer)
        self.scheduler = instantiate(cfg["sched"], optimizer=self.optimizer)
        self.criterion = build_loss(cfg["loss"])
        self.train_nodes = {t: dataset.splits[t]["train"] for t in NTYPES}
        self.val_masks = dataset.heldout_masks("val", seed=cfg["seed"] + 1)
        self.history, self.val_curve = [], []
        self.best = {"cos": -1.0, "epoch": -1, "state": None}
        self.steps = 0

    def augment(self, x):
        s = self.cfg["aug"]["feat_noise"]
        return {t: v + s * torch.randn_like(v) for t, v in x.items()}

    def training_step(self):
        net = self.runner.unwrap_model(self.model)
        masks = net.sample_masks(self.train_nodes)
        x_in = self.augment(self.x)
        with self.runner.autocast():
            recon = self.model(self.g, x_in, masks)
            loss, parts = self.criterion(recon, self.x, masks)
        self.runner.backward(loss)
        return loss

    def train_epoch(self, epoch):
        self.model.train()
        if self.cfg["trainer"]["freeze_bn"]:
            for m in self.model.modules():
                if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                    m.eval()
        epoch_loss = 0.0
        for _ in range(self.runner.grad_accum_steps):
            with self.runner.accumulate(self.model):
                loss = self.training_step()
                epoch_loss += loss.item()
                if self.runner.sync_gradients:
                    self.runner.clip_grad_norm_(self.model.parameters())
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    self.steps += 1
        self.scheduler.step()
        return epoch_loss / self.runner.grad_accum_steps

    def validate(self, epoch):
        net = self.runner.unwrap_model(self.model)
        cos, _ = reconstruction_metrics(net, self.g, self.x, self.val_masks)
        val = sum(cos.values()) / len(cos)
        self.val_curve.append(round(val, 4))
        if val > self.best["cos"]:
            state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            self.best = {"cos": val, "epoch": epoch, "state": state}

    def fit(self):
        tcfg = self.cfg["trainer"]
        for epoch in range(1, tcfg["epochs"] + 1):
            self.history.append(self.train_epoch(epoch))
            if epoch % tcfg["eval_every"] == 0:
                self.validate(epoch)
        self.runner.unwrap_model(self.model).load_state_dict(self.best["state"])

    def finish(self):
        """Checkpoint round trip, held-out reconstruction and linear probe (main process)."""
        cfg, net = self.cfg, self.runner.unwrap_model(self.model)
        path = os.path.join(tempfile.mkdtemp(prefix="hgmae_ckpt_"), "best.pt")
        save_checkpoint(path, net, self.optimizer, self.best["epoch"])
        fresh = build_model(cfg["model"], self.data)
        best_epoch = load_checkpoint(path, fresh)
        cos, mse = reconstruction_metrics(fresh, self.g, self.x, self.data.heldout_masks("test", seed=cfg["seed"] + 2))
        emb = fresh.embed(self.g, self.x)["paper"]
        pcfg = cfg["probe"]
        acc = linear_probe(emb, self.data.labels, self.data.splits["paper"], pcfg["epochs"], pcfg["lr"],
                           pcfg["batch_size"], seed=cfg["seed"])
        return {
            "final_loss": round(float(sum(self.history[-5:]) / 5), 6),
            "heldout_cos": round(sum(cos.values()) / len(cos), 6),
            "heldout_mse": round(sum(mse.values()) / len(mse), 6),
            "heldout_cos_by_type": {t: round(cos[t], 4) for t in NTYPES},
            "probe_acc": round(acc, 4),
            "steps": self.steps,
            "trainable_params": self.trainable_params,
            "best_epoch": best_epoch,
            "val_cos_curve": self.val_curve,
        }


def run_worker(rank, world_size, cfg):
    seed_everything(cfg["seed"])
    dataset = build_dataset(cfg["data"], seed=cfg["seed"])
    runner = Runner(**cfg["runner"], rank=rank)
    trainer = Trainer(cfg, dataset, runner)
    trainer.fit()
    if runner.is_main_process:
        log_metrics(trainer.finish())
    runner.wait_for_everyone()
    runner.close()
