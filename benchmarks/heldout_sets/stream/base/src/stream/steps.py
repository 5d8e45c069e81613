"""The micro-step object and the decorators that turn it into an optimisation step."""
import functools
import itertools
import time

import torch

from .losses import latent_loss
from .optim import apply_update
from .registry import lookup, register


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            wrapper.seconds += time.perf_counter() - t0
            wrapper.calls += 1
    wrapper.seconds = 0.0
    wrapper.calls = 0
    return wrapper


def accumulate(n, max_norm):
    """Backprop loss / n on every call and apply the optimiser update on every n-th call."""
    def deco(fn):
        counter = itertools.count(1)

        @functools.wraps(fn)
        def wrapper(state, *args, **kwargs):
            loss, parts = fn(*args, **kwargs)
            state.scaler.scale(loss / n).backward()
            stepped = next(counter) % n == 0
            if stepped:
                apply_update(state, max_norm)
            return loss, parts, stepped
        return wrapper
    return deco


@register("masked_recon")
class MaskedReconStep:
    """One GraphMAE2-style micro-step: masked feature reconstruction + latent prediction."""

    def __init__(self, model, teacher, cfg, train_idx):
        self.model = model
        self.teacher = teacher
        self.train_idx = train_idx
        self.mask_rate = cfg.model.mask_rate
        self.alpha = cfg.model.alpha
        self.latent_weight = cfg.model.latent_weight
        self.reduction = getattr(cfg.train, "reduction", "mean")
        self.recon_loss = lookup("sce")

    def sample_mask(self):
        perm = torch.randperm(self.train_idx.numel())
        return self.train_idx[perm[: int(self.mask_rate * perm.numel())]]

    def __call__(self, g, x):
        mask = self.sample_mask()
        with torch.no_grad():
            target = self.teacher(g, x).detach()
        rep = self.model.encoder(g, self.model.mask_attr(x, mask))
        recon = self.model.decode(g, rep, mask)
        pred = self.model.predictor(rep)
        rec = self.recon_loss(recon[mask], x[mask], self.alpha, self.reduction)
        lat = latent_loss(pred[mask], target[mask], self.reduction)
        loss = rec + self.latent_weight * lat
        return loss, {"recon": rec.item(), "latent": lat.item()}
