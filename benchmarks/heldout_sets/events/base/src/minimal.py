"""Minimal plain-loop GraphMAE run: same data, model, loss, optimiser and schedule as
`python -m src.gmevents.main --config src/configs/exp/pretrain.yaml`, no engine, no handlers.
Run from the case folder: python src/minimal.py"""
import json, math
import torch
import torch.nn.functional as F
from gmevents import model as _models  # noqa: F401  (registers graphmae)
from gmevents.config import load_config
from gmevents.data import build_datasets, fixed_batches, make_loader
from gmevents.registry import MODELS
from gmevents.seeding import seed_everything

cfg = load_config("src/configs/exp/pretrain.yaml")
torch.set_num_threads(1)
seed_everything(0)
train_set, test_set, collate, info = build_datasets(cfg.data)
loader = make_loader(train_set, collate, 32, shuffle=True)
heldout = fixed_batches(test_set, collate, 32)
model = MODELS.build(cfg.model, in_dim=12)
decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "mask_token" not in n]
plain = [p for n, p in model.named_parameters() if not (p.ndim > 1 and "mask_token" not in n)]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4}, {"params": plain, "weight_decay": 0.0}], lr=1e-3)
epochs, warm = 20, 20
total = epochs * len(loader)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warm) / (total - warm)))))

def sce(x, y, alpha):
    return (1 - (F.normalize(x, dim=-1) * F.normalize(y, dim=-1)).sum(-1)).pow(alpha).mean()

def reconstruction(model):
    model.eval()
    gen, cs, se, n = torch.Generator().manual_seed(1), 0.0, 0.0, 0
    with torch.no_grad():
        for g, _ in heldout:
            x = g.ndata["feat"]
            m = torch.randperm(g.num_nodes(), generator=gen)[: int(0.5 * g.num_nodes())]
            r = model(g, model.mask_features(x, m), m)
            p, t = r[m, :8], x[m, :8]
            cs += float(F.cosine_similarity(p, t, dim=-1).sum()); se += float((p - t).pow(2).mean(1).sum()); n += m.numel()
    model.train()
    return cs / n, se / n

losses, curve, it = [], [], 0
for epoch in range(epochs):
    for g, _ in loader:
        it += 1
        opt.zero_grad(set_to_none=True)
        x = g.ndata["feat"]
        m = torch.randperm(g.num_nodes())[: int(0.5 * g.num_nodes())]
        recon = model(g, model.mask_features(x, m), m)
        loss = sce(recon[m, :8], x[m, :8], 2.0) + 0.5 * F.cross_entropy(recon[m, 8:], x[m, 8:].argmax(1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if it % 80 == 0:
            curve.append(round(reconstruction(model)[0], 4))
cos, mse = reconstruction(model)
print(json.dumps({"final_loss": round(sum(losses[-20:]) / 20, 6), "heldout_cos": round(cos, 6),
                  "heldout_mse": round(mse, 6), "val_cos_curve": curve}))
