import copy
import math
import os
import random
from typing import NamedTuple, Optional

import dgl
import numpy as np
import torch

from model import GraphMAE


class TrainState(NamedTuple):
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    step: int
    teacher: Optional[torch.nn.Module] = None


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    dgl.seed(seed)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def in_dim(cfg):
    return cfg["data"]["num_types"] + cfg["data"]["num_cont"]


def build_model(cfg):
    return GraphMAE(in_dim(cfg), **cfg["model"])


def _warmup_cosine(cfg):
    warm, total = cfg["train"]["warmup"], cfg["train"]["max_steps"]

    def f(step):
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm))))

    return f


def ema_copy(model):
    teacher = copy.deepcopy(model)
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


def make_state(cfg):
    model = build_model(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["train"]["lr"],
                                 weight_decay=cfg["train"]["weight_decay"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_cosine(cfg))
    teacher = ema_copy(model)
    return TrainState(model=model, optimizer=optimizer, scheduler=scheduler, step=0, teacher=teacher)


@torch.no_grad()
def ema_update(teacher, student, decay):
    for pt, ps in zip(teacher.parameters(), student.parameters()):
        pt.mul_(decay).add_(ps, alpha=1 - decay)
    for bt, bs in zip(teacher.buffers(), student.buffers()):
        bt.copy_(bs)


def save_state(state, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save({
        "model": state.model.state_dict(),
        "optimizer": state.optimizer.state_dict(),
        "scheduler": state.scheduler.state_dict(),
        "step": state.step,
    }, path)


def load_checkpoint(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def load_state(cfg, path):
    ckpt = load_checkpoint(path)
    state = make_state(cfg)
    state.model.load_state_dict(ckpt["model"])
    state.optimizer.load_state_dict(ckpt["optimizer"])
    state.scheduler.load_state_dict(ckpt["scheduler"])
    state.teacher.load_state_dict(ckpt["model"])
    return state._replace(step=ckpt["step"])
