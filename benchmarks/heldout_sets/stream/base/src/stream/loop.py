"""The training loop, written as a generator of (step, metrics)."""
import sys

from .ctx import step_scope


def train_steps(state, step_fn, data, cfg):
    g, x = data.graph, data.feats
    total, micro = 0.0, 0
    while state.step < cfg.train.steps:
        with step_scope(cfg):
            loss, parts, stepped = step_fn(state, g, x)
        total += loss.item()
        micro += 1
        if not stepped:
            continue
        state.update_teacher()
        state.step += 1
        yield state.step, {"loss": total / micro, **parts, "lr": state.scheduler.get_last_lr()[0]}
        total, micro = 0.0, 0


def with_logging(steps, every, stream=sys.stderr):
    for step, metrics in steps:
        if step % every == 0:
            print(f"step {step:4d}  loss {metrics['loss']:.4f}  recon {metrics['recon']:.4f}"
                  f"  latent {metrics['latent']:.4f}  lr {metrics['lr']:.2e}", file=stream)
        yield step, metrics
