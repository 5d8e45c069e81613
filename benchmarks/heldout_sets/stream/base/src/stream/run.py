"""Driver: python -m src.stream.run --config src/configs/default.json"""
import json
import tempfile

import torch

from .checkpoint import save_encoder
from .config import load_config
from .ctx import evaluating
from .data import build_dataset
from .evaluate import heldout_reconstruction
from .loop import train_steps, with_logging
from .model import build_model
from .optim import build_optimizer, param_groups
from .probe import linear_probe
from .seeding import seed_everything
from .state import TrainState
from .steps import MaskedReconStep, accumulate, timed


def main(argv=None):
    cfg = load_config(argv)
    torch.set_num_threads(1)
    seed_everything(cfg.seed, getattr(cfg, "deterministic", True))
    data = build_dataset(cfg.data)

    model = build_model(cfg, data.feats.shape[1])
    if getattr(cfg.train, "freeze_encoder", False):       # decoder-only ablation
        model.encoder.requires_grad_(False)
    groups = param_groups([model], cfg.train.weight_decay)
    state = TrainState(model, cfg.model.ema_momentum)
    state.optimizer, state.scheduler, state.scaler = build_optimizer(groups, cfg.train)

    micro_step = timed(MaskedReconStep(state.model, state.teacher, cfg, data.train_idx))
    step_fn = accumulate(cfg.train.accum, cfg.train.clip)(micro_step)

    history, curve = [], []
    for step, m in with_logging(train_steps(state, step_fn, data, cfg), cfg.train.log_every):
        history.append(m["loss"])
        if step % cfg.train.eval_every == 0:
            with evaluating(state.model):
                curve.append(heldout_reconstruction(state.model, data, cfg.eval)["heldout_cos"])

    with evaluating(state.model):
        final = heldout_reconstruction(state.model, data, cfg.eval)
    ckpt_dir = getattr(cfg.train, "ckpt_dir", None) or tempfile.mkdtemp(prefix="stream_")
    path = save_encoder(state, ckpt_dir)
    probe = linear_probe(path, data, cfg)

    tail = history[-20:]
    metrics = {
        "final_loss": round(float(sum(tail) / len(tail)), 6),
        "heldout_cos": round(final["heldout_cos"], 6),
        "heldout_mse": round(final["heldout_mse"], 6),
        "probe_acc": round(probe["probe_acc"], 6),
        "probe_nll": round(probe["probe_nll"], 6),
        "trainable_params": sum(p.numel() for p in state.model.parameters() if p.requires_grad),
        "val_cos_curve": [round(c, 4) for c in curve],
        "step_seconds": round(micro_step.seconds / max(1, micro_step.calls), 5),
    }
    print(json.dumps(metrics))
    return metrics


if __name__ == "__main__":
    main()
