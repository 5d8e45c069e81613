import argparse
import json
import os
import time

from .config import load_config
from .data import build_datasets, build_loaders
from .models import build_model
from .probe import run_linear_probe
from .train import GraphMAETrainer
from .train.trainer import reconstruction_metrics
from .utils import count_parameters, seed_everything


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GraphMAE graph-level pretraining")
    parser.add_argument("--config", default="configs/base.yaml")
    parser.add_argument("--override", action="append", default=[],
                        help="dotted key=value, e.g. optim.lr=0.005")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    cfg = load_config(args.config, args.override)
    seed_everything(cfg.seed)
    start = time.time()

    train_set, test_set = build_datasets(cfg.data)
    train_loader, train_eval_loader, test_loader = build_loaders(train_set, test_set, cfg.data)
    in_dim = train_set.feat_dim

    model = build_model(cfg.model, in_dim)
    trainer = GraphMAETrainer(model, cfg, train_loader, val_loader=test_loader)
    trainer.fit()

    final = reconstruction_metrics(model, test_loader)
    ckpt_path = os.path.join(cfg.train.ckpt_dir, "last.pt")
    probe = run_linear_probe(cfg, ckpt_path, in_dim, train_eval_loader, test_loader)

    epoch_losses = [r["loss"] for r in trainer.history if "loss" in r]
    metrics = {
        "final_loss": epoch_losses[-1],
        "first_loss": epoch_losses[0],
        **final,
        **probe,
        "trainable_params": count_parameters(model),
        "seconds": round(time.time() - start, 2),
    }
    print(json.dumps(metrics))
    return metrics


if __name__ == "__main__":
    main()
