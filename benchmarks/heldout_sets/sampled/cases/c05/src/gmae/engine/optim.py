import math

import torch

from ..registry import register, build


@register("optimizer", "adam")
def _adam(params, lr, weight_decay=0.0):
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)


@register("optimizer", "adamw")
def _adamw(params, lr, weight_decay=0.0):
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def build_optimizer(params, ocfg):
    return build("optimizer", ocfg.name, params, lr=ocfg.lr, weight_decay=ocfg.weight_decay)


def build_scheduler(optimizer, epochs):
    # cosine decay per epoch, as in the GraphMAE reference
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda e: 0.5 * (1.0 + math.cos(math.pi * e / epochs)))
