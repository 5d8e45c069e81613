"""Two-stage run: GraphMAE pretraining driven by an event engine, then evaluation of the encoder
reloaded from the checkpoint the first stage wrote.  Prints one JSON line of metrics.

    python -m src.gmevents.main --config src/configs/exp/pretrain.yaml [--opts train.epochs=5 ...]
"""
import argparse
import json
import os

import torch

from . import losses as _losses  # noqa: F401  (registers losses)
from . import model as _model  # noqa: F401  (registers models and norms)
from .checkpoint import load_checkpoint
from .config import load_config
from .data import build_datasets, fixed_batches, make_loader
from .engine import Events
from .handlers import (attach_checkpoint, attach_early_stopping, attach_grad_clip, attach_loss_tracking,
                       attach_lr_scheduler, attach_validation)
from .probe import graph_embeddings, linear_probe
from .registry import LOSSES, MODELS
from .seeding import seed_everything
from .trainer import build_optimizer, build_scheduler, create_evaluator, create_trainer


def parse_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--opts", nargs="*", default=[])
    return ap.parse_args(argv)


def pretrain(cfg, train_set, test_set, collate, info):
    loader = make_loader(train_set, collate, cfg.data.batch_size, shuffle=True)
    heldout = fixed_batches(test_set, collate, cfg.data.batch_size)
    model = MODELS.build(cfg.model, in_dim=info["in_dim"])
    if cfg.train.get("freeze_encoder", False):
        model.encoder.requires_grad_(False)
    optimizer = build_optimizer(model, cfg.optim)
    loss_fn = LOSSES.build(cfg.loss, attr_dim=info["attr_dim"])
    total = cfg.train.epochs * len(loader)
    scheduler = build_scheduler(optimizer, cfg.train.warmup, total)

    trainer = create_trainer(model, optimizer, loss_fn, cfg)
    evaluator = create_evaluator(model, cfg, info["attr_dim"])
    losses, val_curve = [], []
    attach_grad_clip(trainer, model, cfg.train.get("clip", 0.0))
    attach_lr_scheduler(trainer, scheduler)
    attach_loss_tracking(trainer, losses, log_every=cfg.train.log_every)
    attach_validation(trainer, evaluator, model, heldout, cfg.train.eval_every, val_curve)
    attach_early_stopping(evaluator, trainer, cfg.train.patience)
    attach_checkpoint(trainer, model, optimizer, cfg.train.out_dir, cfg.train.ckpt_every_epochs)
    trainer.run(loader, max_epochs=cfg.train.epochs)
    return {
        "final_loss": round(sum(losses[-20:]) / len(losses[-20:]), 6),
        "iterations": trainer.state.iteration,
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "val_cos_curve": val_curve,
    }, os.path.join(cfg.train.out_dir, "final.pt")


def evaluate(cfg, ckpt_path, train_set, test_set, collate, info):
    model = MODELS.build(cfg.model, in_dim=info["in_dim"])
    state = load_checkpoint(ckpt_path)
    model.load_state_dict(state["model"])
    model.eval()
    heldout = fixed_batches(test_set, collate, cfg.data.batch_size)
    m = create_evaluator(model, cfg, info["attr_dim"]).run(heldout).metrics
    train_emb, train_y = graph_embeddings(model, fixed_batches(train_set, collate, cfg.data.batch_size))
    test_emb, test_y = graph_embeddings(model, heldout)
    probe = linear_probe(train_emb, train_y, test_emb, test_y, info["num_classes"], cfg.probe, cfg.seed)
    return {"heldout_cos": round(m["cos"], 6), "heldout_mse": round(m["mse"], 6),
            "heldout_type_acc": round(m["type_acc"], 6),
            "probe_acc": round(probe["probe_acc"], 6), "probe_nll": round(probe["probe_nll"], 6)}


def main(argv=None):
    args = parse_args(argv)
    cfg = load_config(args.config, args.opts)
    torch.set_num_threads(1)
    seed_everything(cfg.seed)
    train_set, test_set, collate, info = build_datasets(cfg.data)
    stage1, ckpt_path = pretrain(cfg, train_set, test_set, collate, info)
    stage2 = evaluate(cfg, ckpt_path, train_set, test_set, collate, info)
    metrics = {**stage1, **stage2}
    metrics = {k: metrics[k] for k in sorted(metrics)}
    print(json.dumps(metrics))
    return metrics


if __name__ == "__main__":
    main()
