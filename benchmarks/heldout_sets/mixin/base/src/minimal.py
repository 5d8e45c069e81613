"""Plain loop with the same data, model, masks, schedule, EMA, checkpoint reload and probe as train.py."""
import json, math, os, sys, tempfile
os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from gmx.config import Config
from gmx.data import node_mask
from gmx.loss import sce_loss
from gmx.model import GraphMAE
from gmx.probe import linear_probe
from gmx.trainer import prepare_data
from gmx.utils import seed_everything

cfg = Config()
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
cfg.train.seed = seed
seed_everything(seed)
data = prepare_data(cfg)
with torch.random.fork_rng():
    torch.manual_seed(cfg.train.init_seed)
    model = GraphMAE(cfg.model, cfg.data.feat_dim)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(cfg.train.ema_decay), use_buffers=True)
opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
accum, warm = cfg.train.accum_steps, cfg.optim.warmup_steps
total = cfg.train.epochs * math.ceil(len(data.train_loader) / accum)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else
                                          0.5 * (1 + math.cos(math.pi * (s - warm) / (total - warm))))
mask_gen = torch.Generator().manual_seed(seed + 1)


@torch.no_grad()
def recon_cos(m, split):
    g, x, mask = data.heldout[split]
    was = m.training
    m.eval()
    cos = F.cosine_similarity(m(g, x, mask)[mask], x[mask], dim=-1).mean().item()
    m.train(was)
    return cos


torch.manual_seed(seed)
model.train()
losses, curve, micro, steps = [], [], 0, 0
for epoch in range(cfg.train.epochs):
    for b in data.train_loader:
        mask = node_mask(b.graph, cfg.model.mask_rate, mask_gen)
        loss = sce_loss(model(b.graph, b.feat, mask)[mask], b.feat[mask], cfg.model.alpha)
        (loss / accum).backward()
        losses.append(loss.item())
        micro += 1
        if micro % accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.clip)
            opt.step(); opt.zero_grad(set_to_none=True); sched.step(); steps += 1
            ema.update_parameters(model)
    if (epoch + 1) % cfg.train.eval_every == 0:
        curve.append(round(recon_cos(model, "val"), 4))
path = os.path.join(tempfile.mkdtemp(prefix="gmx_min_"), "last.pt")
torch.save({"ema": ema.module.state_dict()}, path)
final = GraphMAE(cfg.model, cfg.data.feat_dim)
final.load_state_dict(torch.load(path, weights_only=True)["ema"])
final.eval()
n = len(data.train_loader)
print(json.dumps({"final_loss": round(sum(losses[-n:]) / n, 6), "heldout_cos": round(recon_cos(final, "test"), 6),
                  "heldout_cos_live": round(recon_cos(model, "test"), 6),
                  "probe_acc": round(linear_probe(final, data.sets, cfg.data.n_classes, seed), 4),
                  "val_cos_curve": curve, "steps": steps}))
