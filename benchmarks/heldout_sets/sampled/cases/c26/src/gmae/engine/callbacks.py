import os

import torch

from .evaluation import fit_linear_probe


class Callback:
    def on_fit_start(self, trainer): pass
    def on_epoch_start(self, trainer): pass
    def on_step_end(self, trainer, loss): pass
    def on_epoch_end(self, trainer, logs): pass
    def on_fit_end(self, trainer): pass


class ProgressLogger(Callback):
    def __init__(self, verbose=False):
        self.verbose = verbose
        self.history = []
        self.step_losses = []

    def on_step_end(self, trainer, loss):
        self.step_losses.append(loss)

    def on_epoch_end(self, trainer, logs):
        self.history.append({k: float(v) for k, v in logs.items()})
        if self.verbose:
            print(f"epoch {trainer.epoch:3d} " + " ".join(f"{k}={float(v):.4f}" for k, v in logs.items()))


class LinearProbeMonitor(Callback):
    """Every `every` epochs: frozen full-graph embeddings -> logistic regression."""

    def __init__(self, dataset, every):
        self.ds = dataset
        self.every = every

    def on_epoch_end(self, trainer, logs):
        if (trainer.epoch + 1) % self.every:
            return
        model = trainer.model
        model.eval()
        with torch.no_grad():
            emb = model.embed(self.ds.graph, self.ds.normalized_features())
        logs["probe_acc"] = fit_linear_probe(
            emb, self.ds.graph.ndata["label"], self.ds.train_idx, self.ds.val_idx,
            self.ds.num_classes)


class EarlyStopping(Callback):
    def __init__(self, monitor, patience):
        self.monitor = monitor
        self.patience = patience
        self.best = float("inf")
        self.bad = 0

    def on_epoch_end(self, trainer, logs):
        value = logs[self.monitor]
        if value < self.best - 1e-5:
            self.best, self.bad = value, 0
        else:
            self.bad += 1
            if self.bad >= self.patience:
                trainer.should_stop = True


class BestCheckpoint(Callback):
    """Keeps the weights with the best monitored value on disk and puts them
    back into the model when training ends."""

    def __init__(self, path, monitor):
        self.path = path
        self.monitor = monitor
        self.best = float("inf")

    def on_epoch_end(self, trainer, logs):
        if logs[self.monitor] < self.best:
            self.best = logs[self.monitor]
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            torch.save({"model": trainer.model.state_dict(), "epoch": trainer.epoch,
                        self.monitor: self.best}, self.path)

    def on_fit_end(self, trainer):
        if not os.path.exists(self.path):
            return
        ckpt = torch.load(self.path, map_location="cpu", weights_only=True)
        trainer.model.load_state_dict(ckpt["model"])
        trainer.best_epoch = ckpt["epoch"]
