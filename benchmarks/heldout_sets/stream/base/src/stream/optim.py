"""Optimiser, warmup schedule and the update applied every `accum` micro-steps."""
import math

import torch


def param_groups(modules, weight_decay):
    decay, plain = [], []
    for module in modules:
        for name, p in module.named_parameters():
            if not p.requires_grad:
                continue
            (decay if p.ndim > 1 and "mask_token" not in name else plain).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": plain, "weight_decay": 0.0},
    ]


def warmup_cosine(warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return factor


def build_optimizer(groups, tcfg):
    optimizer = torch.optim.AdamW(groups, lr=tcfg.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(tcfg.warmup, tcfg.steps))
    scaler = torch.cuda.amp.GradScaler(enabled=False)   # CPU run: scaling is a no-op
    return optimizer, scheduler, scaler


def apply_update(state, max_norm):
    opt = state.optimizer
    state.scaler.unscale_(opt)
    params = [p for group in opt.param_groups for p in group["params"]]
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    state.scaler.step(opt)
    state.scaler.update()
    opt.zero_grad(set_to_none=True)
    state.scheduler.step()
