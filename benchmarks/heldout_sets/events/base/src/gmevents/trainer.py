"""Factories for the training and evaluation engines."""
import math

import torch
import torch.nn.functional as F

from .engine import Engine, Events


def sample_mask(num_nodes, rate, generator=None):
    perm = torch.randperm(num_nodes, generator=generator)
    k = int(rate * num_nodes)
    return perm[:k], perm[k:]


def build_optimizer(model, ocfg):
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "mask_token" not in n]
    plain = [p for n, p in model.named_parameters() if not (p.ndim > 1 and "mask_token" not in n)]
    groups = [{"params": decay, "weight_decay": ocfg.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=ocfg.lr)


def build_scheduler(optimizer, warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def create_trainer(model, optimizer, loss_fn, cfg):
    amp = cfg.train.get("precision", "fp32") == "bf16"
    mask_rate = cfg.model.mask_rate

    def process_fn(engine, batch):
        g, _ = batch
        x = g.ndata["feat"]
        with torch.no_grad():
            mask_nodes, _ = sample_mask(g.num_nodes(), mask_rate)
        x_in = model.mask_features(x, mask_nodes)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            recon = model(g, x_in, mask_nodes)
            loss, parts = loss_fn(recon[mask_nodes], x[mask_nodes])
        loss.backward()
        engine.fire_event(Events.BACKWARD_COMPLETED)
        optimizer.step()
        engine.state.metrics["epoch_loss"] = engine.state.metrics.get("epoch_loss", 0.0) + loss.item()
        return {"loss": loss.item(), "attr": parts["attr"].item(), "type": parts["type"].item()}

    trainer = Engine(process_fn)

    @trainer.on(Events.ITERATION_STARTED)
    def _zero_grad(engine):
        optimizer.zero_grad(set_to_none=True)

    @trainer.on(Events.EPOCH_STARTED)
    def _reset_epoch_loss(engine):
        engine.state.metrics["epoch_loss"] = 0.0

    return trainer


def create_evaluator(model, cfg, attr_dim):
    """Held-out reconstruction of masked node attributes (masks from a fixed generator)."""
    mask_rate = cfg.model.mask_rate
    seed = cfg.seed + 1

    def process_fn(engine, batch):
        g, _ = batch
        x = g.ndata["feat"]
        with torch.no_grad():
            mask_nodes, _ = sample_mask(g.num_nodes(), mask_rate, generator=engine.state.generator)
            recon = model(g, model.mask_features(x, mask_nodes), mask_nodes)
            pred, true = recon[mask_nodes, :attr_dim], x[mask_nodes, :attr_dim]
            cos = F.cosine_similarity(pred, true, dim=-1)
            type_hit = (recon[mask_nodes, attr_dim:].argmax(1) == x[mask_nodes, attr_dim:].argmax(1)).float()
        m = engine.state.metrics
        m["cos_sum"] = m.get("cos_sum", 0.0) + float(cos.sum())
        m["se_sum"] = m.get("se_sum", 0.0) + float((pred - true).pow(2).mean(1).sum())
        m["type_hits"] = m.get("type_hits", 0.0) + float(type_hit.sum())
        m["count"] = m.get("count", 0) + int(mask_nodes.numel())

    evaluator = Engine(process_fn)

    @evaluator.on(Events.STARTED)
    def _fixed_masks(engine):
        engine.state.generator = torch.Generator().manual_seed(seed)

    @evaluator.on(Events.COMPLETED)
    def _summarise(engine):
        m = engine.state.metrics
        m["cos"] = m["cos_sum"] / m["count"]
        m["mse"] = m["se_sum"] / m["count"]
        m["type_acc"] = m["type_hits"] / m["count"]

    return evaluator
