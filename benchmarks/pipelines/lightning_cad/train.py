"""Train GraphMAE on synthetic CAD curve graphs with PyTorch Lightning.

    python train.py [--config config.yaml] [--max-steps 200] [--seed 0]
"""
import argparse
import json
import os
import random
import sys
import tempfile
import warnings

import dgl
import numpy as np
import torch
import yaml
import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from callbacks import ReconstructionMonitor  # noqa: E402
from data import CADGraphDataModule  # noqa: E402
from module import GraphMAEModule, evaluate_reconstruction  # noqa: E402

warnings.filterwarnings("ignore", ".*does not have many workers.*")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=os.path.join(HERE, "config.yaml"))
    parser.add_argument("--max-steps", type=int, default=None, help="override trainer.max_steps")
    parser.add_argument("--seed", type=int, default=None, help="override seed")
    parser.add_argument("--lr", type=float, default=None, help="override optim.lr")
    parser.add_argument("--mask-rate", type=float, default=None, help="override model.mask_rate")
    return parser.parse_args()


def load_config(args):
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    if args.max_steps is not None:
        cfg["trainer"]["max_steps"] = args.max_steps
    if args.seed is not None:
        cfg["seed"] = args.seed
    if args.lr is not None:
        cfg["optim"]["lr"] = args.lr
    if args.mask_rate is not None:
        cfg["model"]["mask_rate"] = args.mask_rate
    return cfg


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    dgl.seed(seed)
    pl.seed_everything(seed, workers=True)


def main():
    args = parse_args()
    cfg = load_config(args)
    torch.set_num_threads(cfg.get("num_threads", 1))
    seed_all(cfg["seed"])

    dm = CADGraphDataModule(**cfg["data"])
    dm.setup()
    module = GraphMAEModule(cfg["model"], cfg["loss"], cfg["optim"])

    with tempfile.TemporaryDirectory(prefix="graphmae_pl_") as run_dir:
        recon_monitor = ReconstructionMonitor(cfg["callbacks"]["recon_every_n_steps"],
                                              cfg["callbacks"]["eval_mask_seed"])
        checkpoint = ModelCheckpoint(dirpath=os.path.join(run_dir, "ckpt"), monitor="val_loss",
                                     mode="min", save_top_k=1, filename="best-{step}")
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=cfg["trainer"]["max_steps"],
            val_check_interval=cfg["trainer"]["val_every_n_steps"],
            check_val_every_n_epoch=None,
            num_sanity_val_steps=0,
            callbacks=[recon_monitor, checkpoint],
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=run_dir,
        )
        trainer.fit(module, datamodule=dm)
        if checkpoint.best_model_score is not None:
            print(f"best val_loss {checkpoint.best_model_score.item():.4f} "
                  f"({os.path.basename(checkpoint.best_model_path)})")

    # final held-out evaluation with the last weights
    metrics = evaluate_reconstruction(module.model, dm.test_set, dm.coord_mean, dm.coord_std,
                                      mask_seed=cfg["callbacks"]["eval_mask_seed"])
    metrics["final_loss"] = module.last_train_loss
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
