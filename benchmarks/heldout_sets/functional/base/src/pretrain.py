"""Stage 1: GraphMAE pretraining."""
import os

import dgl
import torch

from data import build_dataset, feature_stats, iterate_batches, make_collate, normalize
from state import make_state, save_state
from steps import eval_step, train_step


def main(cfg):
    T = cfg["data"]["num_types"]
    train, val = build_dataset(cfg)
    stats = feature_stats(train, T)
    collate = make_collate(stats, T, cfg["data"]["edge_drop"])
    eval_collate = make_collate(stats, T, 0.0)
    eval_batch = eval_collate(val)
    mean_pred = normalize(torch.cat([g.ndata["x"] for g, _ in train]), stats, T).mean(0, keepdim=True)

    state = make_state(cfg)
    batches = iterate_batches(train, cfg["train"]["batch_size"], collate)
    history = []
    for _ in range(cfg["train"]["max_steps"]):
        state, metrics = train_step(state, next(batches), cfg)
        history.append(metrics["loss"])
        if state.step % cfg["train"]["eval_every"] == 0:
            ev = eval_step(state, eval_batch, mean_pred, cfg["model"]["mask_rate"])
            print(f"step {state.step} loss {sum(history[-20:]) / 20:.4f} eval {ev}", flush=True)

    ev = eval_step(state, eval_batch, mean_pred, cfg["model"]["mask_rate"])
    ev["final_loss"] = float(sum(history[-20:]) / min(20, len(history)))
    ckpt = os.path.join(cfg["out_dir"], f"pretrain_seed{cfg['seed']}.pt")
    save_state(state, ckpt)
    return ev, ckpt, (train, val, stats)
