"""Stage 1 (GraphMAE pre-training on neighbour-sampled blocks) + stage 2
(linear probe).  python src/train.py [--config F] [--set key=value ...] [--out metrics.json]"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gmae.config import load_config  # noqa: E402
from gmae.data import SBMNodeDataset, build_train_loader, MaskSampler  # noqa: E402
from gmae.engine import (Trainer, ProgressLogger, LinearProbeMonitor, EarlyStopping,  # noqa: E402
                         BestCheckpoint, build_optimizer, build_scheduler)
from gmae.engine.evaluation import reconstruction_metrics  # noqa: E402
from gmae.engine.probe import run_linear_probe  # noqa: E402
from gmae.models import build_model  # noqa: E402
from gmae.utils.seed import seed_all, make_reproducible  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--config", default=os.path.join(HERE, "configs", "default.toml"))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", default=None)
    p.add_argument("--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    seed_all(cfg.seed)
    make_reproducible()

    dataset = SBMNodeDataset(cfg.data, cfg.seed)
    loader = build_train_loader(dataset.graph, cfg)

    model = build_model(cfg, dataset.in_dim)
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    scheduler = build_scheduler(optimizer, cfg.train.epochs)

    ckpt_path = os.path.join(cfg.run.workdir, "best.pt")
    logger = ProgressLogger(verbose=args.verbose)
    callbacks = [
        logger,
        LinearProbeMonitor(dataset, every=cfg.train.probe_every),
        EarlyStopping("val_loss", cfg.train.patience),
        BestCheckpoint(ckpt_path, "val_loss"),
    ]
    trainer = Trainer(model, optimizer, scheduler, dataset, cfg, callbacks)
    trainer.fit(loader, cfg.train.epochs, MaskSampler(cfg.model.mask_rate))

    metrics = reconstruction_metrics(trainer.model, dataset.graph,
                                      dataset.normalized_features(), dataset.recon_eval_idx)
    metrics["final_loss"] = float(trainer.last_train_loss)
    metrics["best_epoch"] = trainer.best_epoch
    metrics["steps"] = trainer.global_step
    metrics.update(run_linear_probe(cfg, dataset, ckpt_path))
    print(json.dumps(metrics))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(metrics, fh, indent=1)
    return metrics


if __name__ == "__main__":
    main()
