"""The same HGMAE pretraining as train.py in a plain loop (no runner, no plugins, no config files).
Prints the same metrics as `python src/train.py` (final_loss, heldout_*, probe_acc, best_epoch, val curve)."""
import copy, json, os, sys
os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn.functional as F
from hgmae.config import DEFAULTS
from hgmae.data import NTYPES, build_dataset
from hgmae.models.hgmae import HGMAE
from hgmae.losses.sce import sce_loss
from hgmae.probe import linear_probe
from hgmae.utils import seed_everything

SEED, EPOCHS, ACCUM, LR, NOISE, W = 0, 80, 2, 0.005, 0.1, {"paper": 1.0, "author": 0.5, "subject": 1.0}
seed_everything(SEED)
data = build_dataset(DEFAULTS["data"], seed=SEED)
g, x = data.graph, data.feats
mcfg = {k: v for k, v in DEFAULTS["model"].items() if k not in ("name", "cls", "freeze")}
make = lambda: HGMAE(in_dims=data.in_dims, canonical_etypes=g.canonical_etypes, **copy.deepcopy(mcfg))
model = make()
torch.manual_seed(SEED)
opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=80, eta_min=1e-4)
train_nodes = {t: data.splits[t]["train"] for t in NTYPES}
val_masks, test_masks = data.heldout_masks("val", seed=SEED + 1), data.heldout_masks("test", seed=SEED + 2)


@torch.no_grad()
def recon_metrics(m, masks):
    m.eval()
    r = m(g, x, masks)
    return ({t: float(F.cosine_similarity(r[t][k], x[t][k], dim=-1).mean()) for t, k in masks.items()},
            {t: float(F.mse_loss(r[t][k], x[t][k])) for t, k in masks.items()})


hist, curve, best = [], [], (-1.0, -1, None)
for epoch in range(1, EPOCHS + 1):
    model.train()
    tot = 0.0
    for micro in range(ACCUM):
        masks = model.sample_masks(train_nodes)
        x_in = {t: v + NOISE * torch.randn_like(v) for t, v in x.items()}
        r = model(g, x_in, masks)
        loss = sum(W[t] * sce_loss(r[t][m], x[t][m], 2.0) for t, m in masks.items())
        (loss / ACCUM).backward()
        tot += loss.item()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    sched.step()
    hist.append(tot / ACCUM)
    if epoch % 15 == 0:
        cos, _ = recon_metrics(model, val_masks)
        v = sum(cos.values()) / len(cos)
        curve.append(round(v, 4))
        if v > best[0]:
            best = (v, epoch, {k: t.detach().clone() for k, t in model.state_dict().items()})
model.load_state_dict(best[2])
fresh = make()
fresh.load_state_dict(model.state_dict())
cos, mse = recon_metrics(fresh, test_masks)
acc = linear_probe(fresh.embed(g, x)["paper"], data.labels, data.splits["paper"], 60, 0.02, 64, seed=SEED)
print(json.dumps({"final_loss": round(sum(hist[-5:]) / 5, 6), "heldout_cos": round(sum(cos.values()) / 3, 6),
                  "heldout_mse": round(sum(mse.values()) / 3, 6),
                  "heldout_cos_by_type": {t: round(cos[t], 4) for t in NTYPES}, "probe_acc": round(acc, 4),
                  "best_epoch": best[1], "val_cos_curve": curve}))
