"""GraphMAE pre-training on synthetic community graphs, wired with the mini engine."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from config import ROOT, load_config  # noqa: E402
from data import build_loaders  # noqa: E402
from engine import Engine, Events  # noqa: E402
from handlers import Checkpoint, Evaluator, LRSchedulerHandler, RunningAverage, evaluate  # noqa: E402
from models import build_criterion, build_model, build_optimizer  # noqa: E402
from utils import seed_everything  # noqa: E402


def make_train_step(model, optimizer, criterion, cfg):
    def train_step(engine, bg):
        optimizer.zero_grad()
        out = model(bg, bg.ndata["x"])
        m = out["mask_nodes"]
        losses = {
            "rec": criterion(out["recon"][m], out["target"][m]),
            "latent_l2": out["enc_rep"].pow(2).mean(),
        }
        loss = sum(cfg.loss_weights.get(k, 0.0) * v for k, v in losses.items())
        loss.backward()
        optimizer.step()
        return {"loss": loss.item(), **{k: v.item() for k, v in losses.items()}}
    return train_step


def main(argv=None):
    cfg = load_config(argv)
    seed_everything(cfg.seed)
    torch.set_num_threads(1)
    train_loader, val_loader, _ = build_loaders(cfg)

    model = build_model(cfg)
    optimizer = build_optimizer(cfg, model)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.lr_gamma)
    criterion = build_criterion(cfg)

    trainer = Engine(make_train_step(model, optimizer, criterion, cfg))
    evaluator = Evaluator(model, val_loader, cfg.eval_every)
    evaluator.attach(trainer, Events)
    out_dir = os.path.join(ROOT, cfg.out_dir, f"seed{cfg.seed}")
    checkpoint = Checkpoint(out_dir, model, optimizer)
    trainer.add_event_handler(Events.ITERATION_COMPLETED(every=cfg.eval_every), checkpoint)
    trainer.add_event_handler(Events.COMPLETED, checkpoint)
    trainer.add_event_handler(Events.ITERATION_COMPLETED, LRSchedulerHandler(scheduler))
    trainer.add_event_handler(Events.ITERATION_COMPLETED, RunningAverage())

    @trainer.on(Events.ITERATION_COMPLETED(every=cfg.log_every))
    def log(engine):
        print(f"it {engine.state.iteration:4d} ep {engine.state.epoch:3d} "
              f"loss {engine.state.metrics['running_loss']:.4f} "
              f"val_mse {engine.state.metrics.get('val_mse', float('nan')):.4f}", file=sys.stderr)

    model.train()
    trainer.run(train_loader, max_epochs=cfg.max_epochs, max_iters=cfg.max_steps)

    best_model = build_model(cfg)
    best_iter = checkpoint.load_best(best_model)
    final = evaluate(best_model, val_loader)
    final.update({"final_loss": float(trainer.state.metrics["running_loss"]), "best_iter": best_iter,
                  "steps": trainer.state.iteration, "seed": cfg.seed})
    print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in final.items()}))


if __name__ == "__main__":
    main()
