"""Context managers for module mode, precision and the per-step scope."""
import contextlib

import torch


@contextlib.contextmanager
def evaluating(model):
    """Put `model` in eval mode for the block and restore its previous mode afterwards."""
    was = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was)


def autocast_ctx(cfg):
    precision = getattr(cfg.train, "precision", "fp32")
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def step_scope(cfg):
    """Everything one micro-step runs under: precision policy + grad mode."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(autocast_ctx(cfg))
        stack.enter_context(torch.enable_grad())
        yield stack
