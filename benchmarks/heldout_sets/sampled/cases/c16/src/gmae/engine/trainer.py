import torch

from ..data.loader import prepare_batch
from ..registry import lookup
from .evaluation import reconstruction_metrics


class Trainer:
    """Owns model, optimiser, LR schedule and callbacks; one epoch = one pass
    over the neighbour-sampled loader."""

    def __init__(self, model, optimizer, scheduler, dataset, cfg, callbacks=(), device="cpu"):
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.ds = dataset
        self.cfg = cfg
        self.callbacks = list(callbacks)
        self.masker = None
        lcfg = cfg.loss
        self.criterion = lookup("loss", lcfg.name)
        self.alpha = lcfg.get("alpha", 2.0)
        self.w_mask = float(lcfg.get("mask_weight", 1.0))
        self.w_vis = float(lcfg.get("visible_weight", 0.0))
        self.clip = cfg.optim.get("clip", 0.0)
        self.epoch = 0
        self.global_step = 0
        self.should_stop = False
        self.best_epoch = None
        self.last_train_loss = None

    def _emit(self, hook, **kw):
        for cb in self.callbacks:
            getattr(cb, hook)(self, **kw)

    def compute_loss(self, pred, x, seed_mask):
        n_seed = pred.shape[0]
        target = x[:n_seed]
        loss = self.w_mask * self.criterion(pred[seed_mask], target[seed_mask], self.alpha)
        if self.w_vis > 0:
            loss = loss + self.w_vis * self.criterion(pred[~seed_mask], target[~seed_mask], self.alpha)
        return loss

    def training_step(self, blocks):
        blocks, x = prepare_batch(blocks, self.ds.stats, self.device)
        mask = self.masker(x.shape[0], self.device)
        pred = self.model(blocks, x, mask)
        loss = self.compute_loss(pred, x, mask[: pred.shape[0]])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        return loss

    def validate(self):
        x = self.ds.normalized_features()
        m = reconstruction_metrics(self.model, self.ds.graph, x, self.ds.recon_eval_idx)
        return {"val_loss": 1.0 - m["recon_cos"], "val_mse": m["recon_mse"]}

    def fit(self, loader, epochs, masker):
        self.masker = masker
        self._emit("on_fit_start")
        for epoch in range(epochs):
            self.epoch = epoch
            self.model.train()
            self._emit("on_epoch_start")
            total, n = 0.0, 0
            for _input_nodes, _seeds, blocks in loader:
                loss = self.training_step(blocks)
                total += loss.item()
                n += 1
                self.global_step += 1
                self._emit("on_step_end", loss=loss.item())
            self.scheduler.step()
            logs = {"train_loss": total / n}
            logs.update(self.validate())
            self.last_train_loss = logs["train_loss"]
            self._emit("on_epoch_end", logs=logs)
            if self.should_stop:
                break
        self._emit("on_fit_end")
        return self
