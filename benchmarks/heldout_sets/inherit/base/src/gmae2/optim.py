from functools import partial

import torch

from .config import OptimConfig

OPTIMIZERS = {
    "adam": partial(torch.optim.Adam, betas=(0.9, 0.999)),
    "adamw": partial(torch.optim.AdamW, betas=(0.9, 0.999)),
    "sgd": partial(torch.optim.SGD, momentum=0.9, nesterov=True),
}

SCHEDULERS = {
    "cosine": partial(torch.optim.lr_scheduler.CosineAnnealingLR, eta_min=1e-5),
    "step": partial(torch.optim.lr_scheduler.StepLR, step_size=10, gamma=0.5),
}


def build_optimizer(params, cfg: OptimConfig) -> torch.optim.Optimizer:
    return OPTIMIZERS[cfg.name](params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def build_scheduler(optimizer, cfg: OptimConfig, num_epochs: int):
    if cfg.scheduler == "none":
        return None
    if cfg.scheduler == "cosine":
        return SCHEDULERS["cosine"](optimizer, T_max=num_epochs)
    return SCHEDULERS[cfg.scheduler](optimizer)
