"""Event handlers: evaluation, checkpointing, LR scheduling, loss logging."""
import math
import os

import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate(model, loader, seed=1234):
    """Masked-feature reconstruction metrics on a loader with fixed masks."""
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    se, base_se, cos, n = 0.0, 0.0, 0.0, 0
    for bg in loader:
        out = model(bg, bg.ndata["x"], generator=gen)
        m = out["mask_nodes"]
        pred, tgt = out["recon"][m], out["target"][m]
        se += F.mse_loss(pred, tgt, reduction="sum").item()
        base_se += tgt.pow(2).sum().item()  # train-mean predictor (features are standardised)
        cos += F.cosine_similarity(pred, tgt, dim=-1).sum().item()
        n += m.numel()
    model.train(was_training)
    d = tgt.shape[1]
    return {"val_mse": se / (n * d), "baseline_mse": base_se / (n * d), "val_cos": cos / n}


class Evaluator:
    def __init__(self, model, loader, every):
        self.model, self.loader, self.every = model, loader, every
        self.history = []

    def attach(self, engine, events):
        engine.add_event_handler(events.ITERATION_COMPLETED(every=self.every), self)
        engine.add_event_handler(events.COMPLETED, self)

    def __call__(self, engine):
        if self.history and self.history[-1][0] == engine.state.iteration:
            return
        metrics = evaluate(self.model, self.loader)
        engine.state.metrics.update(metrics)
        self.history.append((engine.state.iteration, metrics))


class Checkpoint:
    """Keeps the best model (lowest val_mse) on disk."""

    def __init__(self, dirname, model, optimizer, score_key="val_mse"):
        os.makedirs(dirname, exist_ok=True)
        self.path = os.path.join(dirname, "best.pt")
        self.model, self.optimizer, self.score_key = model, optimizer, score_key
        self.best = math.inf
        self.best_iter = None

    def __call__(self, engine):
        score = engine.state.metrics.get(self.score_key)
        if score is None or score >= self.best:
            return
        self.best, self.best_iter = score, engine.state.iteration
        torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "iteration": engine.state.iteration}, self.path)

    def load_best(self, model):
        ckpt = torch.load(self.path, map_location="cpu", weights_only=True)
        model.load_state_dict(ckpt["model"], strict=True)
        return ckpt["iteration"]


class LRSchedulerHandler:
    def __init__(self, scheduler):
        self.scheduler = scheduler

    def __call__(self, engine):
        self.scheduler.step()


class RunningAverage:
    def __init__(self, alpha=0.98):
        self.alpha = alpha
        self.value = None

    def __call__(self, engine):
        loss = engine.state.output["loss"]
        self.value = loss if self.value is None else self.alpha * self.value + (1 - self.alpha) * loss
        engine.state.metrics["running_loss"] = self.value
