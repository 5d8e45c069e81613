"""Handlers attached to the trainer: validation, LR schedule, clipping, loss EMA, checkpoints,
early stopping."""
import os
import sys

import torch

from .checkpoint import save_checkpoint
from .engine import Events


def _set_mode(engine, model, training):
    model.train(training)


def attach_validation(trainer, evaluator, model, batches, every, history):
    """Run the evaluator on held-out batches every `every` iterations; the evaluator switches the
    shared model to eval mode for its run and back to train mode when it completes."""
    evaluator.add_event_handler(Events.STARTED, _set_mode, model, False)
    evaluator.add_event_handler(Events.COMPLETED, _set_mode, model, True)

    @trainer.on(Events.ITERATION_COMPLETED(every=every))
    def _validate(engine):
        state = evaluator.run(batches)
        history.append(round(state.metrics["cos"], 4))
        print(f"[val] it {engine.state.iteration} cos {state.metrics['cos']:.4f}", file=sys.stderr)


def attach_lr_scheduler(trainer, scheduler):
    trainer.add_event_handler(Events.ITERATION_COMPLETED, lambda engine: scheduler.step())


def attach_grad_clip(trainer, model, max_norm):
    if max_norm and max_norm > 0:
        trainer.add_event_handler(
            Events.BACKWARD_COMPLETED,
            lambda engine: torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm))


def attach_loss_tracking(trainer, history, decay=0.9, log_every=20):
    @trainer.on(Events.ITERATION_COMPLETED)
    def _track(engine):
        out, m = engine.state.output, engine.state.metrics
        m["loss_ema"] = out["loss"] if "loss_ema" not in m else decay * m["loss_ema"] + (1 - decay) * out["loss"]
        history.append(float(out["loss"]))

    @trainer.on(Events.ITERATION_COMPLETED(every=log_every))
    def _log(engine):
        print(f"[train] it {engine.state.iteration} loss_ema {engine.state.metrics['loss_ema']:.4f}", file=sys.stderr)


def attach_checkpoint(trainer, model, optimizer, out_dir, every_epochs):
    os.makedirs(out_dir, exist_ok=True)

    @trainer.on(Events.EPOCH_COMPLETED(every=every_epochs))
    def _save_last(engine):
        save_checkpoint(os.path.join(out_dir, "last.pt"), model, optimizer, engine.state.epoch)

    @trainer.on(Events.COMPLETED)
    def _save_final(engine):
        save_checkpoint(os.path.join(out_dir, "final.pt"), model, optimizer, engine.state.epoch)


def attach_early_stopping(evaluator, trainer, patience):
    best = {"score": -float("inf"), "bad": 0}

    @evaluator.on(Events.COMPLETED)
    def _check(engine):
        score = engine.state.metrics["cos"]
        if score > best["score"] + 1e-4:
            best.update(score=score, bad=0)
        else:
            best["bad"] += 1
            if best["bad"] >= patience:
                print("[early stop]", file=sys.stderr)
                trainer.terminate()
