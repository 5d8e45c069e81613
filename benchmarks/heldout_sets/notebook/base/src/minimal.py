"""Minimal reference loop: same data, model, masks and optimiser as notebook.py, no notebook machinery.
Prints final_loss, heldout_cos, heldout_mse, best_epoch and val_cos_curve (bit-identical to notebook.py)."""
import json, random
import dgl, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
import nbutils

random.seed(0); np.random.seed(0); torch.manual_seed(0); dgl.seed(0)
pos, x_raw, labels = nbutils.make_point_cloud(2000, 16, 5, np.random.default_rng(0))
g = dgl.add_self_loop(dgl.to_bidirected(dgl.graph(nbutils.knn_edges(pos, 8), num_nodes=2000)))
tr, va, te = nbutils.split_nodes(2000)
x = nbutils.standardize(x_raw, tr)
va_m = nbutils.sample_mask(va, 0.5, torch.Generator().manual_seed(11))
te_m = nbutils.sample_mask(te, 0.5, torch.Generator().manual_seed(12))
model = nn.ModuleDict({"encoder": nbutils.GCNStack(16, 64, 64, 2, "batchnorm", 0.1),
                       "enc2dec": nn.Linear(64, 64, bias=False),
                       "decoder": nbutils.GCNStack(64, 64, 16, 1, "none", 0.0, last_act=False)})
model.register_parameter("mask_token", nn.Parameter(torch.zeros(1, 16)))


def recon_of(x_in, m):
    z = x_in.clone(); z[m] = 0.0; z[m] += model.mask_token
    return model["decoder"](g, nbutils.remask(model["enc2dec"](model["encoder"](g, z)), m))


def loss_of(x_in, m):
    r, t = recon_of(x_in, m)[m], x[m]
    return nbutils.sce_loss(r, t, 2.0) + 0.5 * F.mse_loss(r, t)


@torch.no_grad()
def evaluate(m):
    model.eval(); r = recon_of(x, m)
    return float(F.cosine_similarity(r[m], x[m], dim=-1).mean()), float(F.mse_loss(r[m], x[m]))


decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "mask_token" not in n]
no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1 or "mask_token" in n]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=140, eta_min=0.01 * 0.05)
losses, curve, best = [], [], (-1.0, -1, None)
for epoch in range(140):
    model.train(); opt.zero_grad()
    m = nbutils.sample_mask(tr, 0.5)
    loss = loss_of(nbutils.jitter(x, 0.05), m)
    loss.backward(); opt.step(); sched.step(); losses.append(loss.item())
    if (epoch + 1) % 30 == 0:
        cos, _ = evaluate(va_m); curve.append(round(cos, 4))
        if cos > best[0]:
            best = (cos, epoch + 1, {k: v.detach().clone() for k, v in model.state_dict().items()})
model.load_state_dict(best[2])
for n, p in model.named_parameters():
    p.requires_grad_(n.startswith(("enc2dec", "decoder")))
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.005)
model.train()
for epoch in range(30):
    opt.zero_grad()
    m = nbutils.sample_mask(tr, 0.5)
    loss = loss_of(nbutils.jitter(x, 0.05), m)
    loss.backward(); opt.step(); losses.append(loss.item())
cos, err = evaluate(te_m)
print(json.dumps({"final_loss": round(float(np.mean(losses[-10:])), 6), "heldout_cos": round(cos, 6),
                  "heldout_mse": round(err, 6), "best_epoch": best[1], "val_cos_curve": curve}))
