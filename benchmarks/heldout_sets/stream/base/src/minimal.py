"""Minimal plain-loop GraphMAE2 run: same data, model and loss as `python -m src.stream.run`.
Run from the case folder: python src/minimal.py"""
import copy, json, math
import torch
from stream.config import DEFAULTS, to_namespace
from stream.data import build_dataset
from stream.evaluate import heldout_reconstruction
from stream.losses import sce_loss
from stream.model import build_model
from stream.seeding import seed_everything

cfg = to_namespace(DEFAULTS)
torch.set_num_threads(1)
seed_everything(0)
data = build_dataset(cfg.data)
g, x, train_idx = data.graph, data.feats, data.train_idx
model = build_model(cfg, x.shape[1])
teacher = copy.deepcopy(model.encoder).eval().requires_grad_(False)
decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "mask_token" not in n]
plain = [p for n, p in model.named_parameters() if not (p.ndim > 1 and "mask_token" not in n)]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4}, {"params": plain, "weight_decay": 0.0}], lr=1e-3)
steps, warm = 200, 20
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warm) / (steps - warm)))))
losses = []
for step in range(steps):
    total = 0.0
    for micro in range(2):
        perm = torch.randperm(train_idx.numel())
        mask = train_idx[perm[: int(0.5 * perm.numel())]]
        with torch.no_grad():
            target = teacher(g, x)
        recon, pred = model(g, x, mask)
        loss = sce_loss(recon[mask], x[mask], 2.0) + 1.0 * sce_loss(pred[mask], target[mask], 1.0)
        (loss / 2).backward()
        total += loss.item()
    torch.nn.utils.clip_grad_norm_(decay + plain, 1.0)
    opt.step()
    opt.zero_grad()
    sched.step()
    with torch.no_grad():
        for t, s in zip(teacher.parameters(), model.encoder.parameters()):
            t.mul_(0.99).add_(s, alpha=0.01)
        for tb, sb in zip(teacher.buffers(), model.encoder.buffers()):
            tb.copy_(sb)
    losses.append(total / 2)
model.eval()
m = heldout_reconstruction(model, data, cfg.eval)
print(json.dumps({"final_loss": round(sum(losses[-20:]) / 20, 6), "heldout_cos": round(m["heldout_cos"], 6), "heldout_mse": round(m["heldout_mse"], 6)}))
