"""Step-based trainer: optimizer, LR schedule, running metrics, periodic evaluation."""
import copy
import math

import torch
import torch.nn.functional as F

from losses import split_features


class Trainer:
    def __init__(self, model, loss_fn, train_loader, val_loader, coord_stats, cfg):
        self.model = model
        self.loss_fn = loss_fn
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.coord_mean = coord_stats["mean"]
        self.coord_std = coord_stats["std"]
        self.cfg = cfg
        self.num_points = cfg.get("num_points", 8)
        self.max_steps = cfg.get("max_steps", 200)
        self.eval_every = cfg.get("eval_every", 50)
        self.log_every = cfg.get("log_every", 1)
        self.grad_clip = cfg.get("grad_clip", None)

        self.optimizer = torch.optim.Adam(model.parameters(), lr=cfg.get("lr", 5e-3),
                                          weight_decay=cfg.get("weight_decay", 0.0))
        if cfg.get("scheduler", "cosine") == "cosine":
            warmup = cfg.get("warmup_steps", 0)
            min_ratio = cfg.get("min_lr_ratio", 0.1)

            def lr_lambda(step):
                if step < warmup:
                    return (step + 1) / warmup
                progress = min(1.0, (step - warmup) / max(1, self.max_steps - warmup))
                return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
            self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda)
        else:
            self.scheduler = None

        self.step = 0
        self.running = {}           # exponential moving averages of the loss terms
        self.ema_decay = 0.9
        self.last_loss = float("nan")
        self.last_lr = cfg.get("lr", 5e-3)
        self.best_val = float("inf")
        self.best_state = None
        self.history = []

    def _update_running(self, values):
        for key, val in values.items():
            prev = self.running.get(key, val)
            self.running[key] = self.ema_decay * prev + (1 - self.ema_decay) * val

    def train_step(self, batch):
        self.model.train()
        x = batch.ndata["feat"]
        recon, mask = self.model(batch, x)
        loss, parts = self.loss_fn(recon[mask], x[mask])

        self.optimizer.zero_grad()
        loss.backward()
        if self.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.last_lr = self.optimizer.param_groups[0]["lr"]
        if self.scheduler is not None:
            self.scheduler.step()

        self.last_loss = loss.item()
        self._update_running(dict(parts, loss=self.last_loss))
        return self.last_loss

    @torch.no_grad()
    def evaluate(self, loader, mask_seed=1234):
        """Masked reconstruction on `loader` with a reproducible mask.
        Returns loss and geometric errors (coordinates in part units)."""
        self.model.eval()
        gen = torch.Generator().manual_seed(mask_seed)
        totals = {"loss": 0.0, "recon_coord_err": 0.0, "mean_predictor_coord_err": 0.0,
                  "recon_tangent_cos": 0.0, "recon_normal_cos": 0.0}
        count = 0
        for batch in loader:
            x = batch.ndata["feat"]
            mask = self.model.mask_nodes(batch.num_nodes(), generator=gen)
            recon, _ = self.model(batch, x, mask)
            loss, _ = self.loss_fn(recon[mask], x[mask])
            p_xyz, p_tan, p_nrm = split_features(recon[mask], self.num_points)
            t_xyz, t_tan, t_nrm = split_features(x[mask], self.num_points)
            true_xyz = t_xyz * self.coord_std + self.coord_mean
            pred_xyz = p_xyz * self.coord_std + self.coord_mean
            n = len(mask)
            totals["loss"] += loss.item() * n
            totals["recon_coord_err"] += (pred_xyz - true_xyz).norm(dim=-1).mean(1).sum().item()
            totals["mean_predictor_coord_err"] += (self.coord_mean - true_xyz).norm(dim=-1).mean(1).sum().item()
            totals["recon_tangent_cos"] += F.cosine_similarity(p_tan, t_tan, dim=-1).mean(1).sum().item()
            totals["recon_normal_cos"] += F.cosine_similarity(p_nrm, t_nrm, dim=-1).mean(1).sum().item()
            count += n
        self.model.train()
        return {k: v / max(count, 1) for k, v in totals.items()}

    def _batches(self):
        while True:
            for batch in self.train_loader:
                yield batch

    def fit(self):
        batches = self._batches()
        while self.step < self.max_steps:
            loss = self.train_step(next(batches))
            if self.step % self.log_every == 0:
                print(f"step {self.step} loss {loss:.4f} "
                      f"(avg {self.running['loss']:.4f}, coord {self.running['coord']:.4f}, "
                      f"lr {self.last_lr:.2e})")
            self.step += 1

            if self.step % self.eval_every == 0 or self.step == self.max_steps:
                metrics = self.evaluate(self.val_loader)
                self.history.append((self.step, metrics))
                print(f"  eval @ {self.step}: val_loss {metrics['loss']:.4f} "
                      f"coord_err {metrics['recon_coord_err']:.4f} "
                      f"tangent_cos {metrics['recon_tangent_cos']:.3f} "
                      f"normal_cos {metrics['recon_normal_cos']:.3f}")
                if metrics["loss"] < self.best_val:
                    self.best_val = metrics["loss"]
                    self.best_state = copy.deepcopy(self.model.state_dict())

        if self.cfg.get("restore_best", True) and self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        return self.history
