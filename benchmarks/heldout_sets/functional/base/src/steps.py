import torch
import torch.nn.functional as F

from state import ema_update


def sce_loss(pred, target, alpha=2.0):
    pred = F.normalize(pred, p=2, dim=-1)
    target = F.normalize(target, p=2, dim=-1)
    return (1 - (pred * target).sum(dim=-1)).pow(alpha).mean()


def mse_loss(pred, target, alpha=None):
    return F.mse_loss(pred, target)


LOSSES = {"sce": sce_loss, "mse": mse_loss}


def sample_mask(num_nodes, rate, generator=None):
    perm = torch.randperm(num_nodes, generator=generator)
    return perm[: int(rate * num_nodes)]


def loss_fn(outputs, batch, cfg):
    lcfg = cfg["loss"]
    w = lcfg["weights"]
    mask = batch["mask"]
    rec = LOSSES[lcfg["name"]](outputs["recon"][mask], batch["x"][mask], lcfg["alpha"])
    lat = F.mse_loss(outputs["latent"][mask], batch["target_latent"][mask])
    total = w["recon"] * rec + w["latent"] * lat
    return total, {"recon": rec.item(), "latent": lat.item()}


def train_step(state, batch, cfg):
    model, opt = state.model, state.optimizer
    model.train()
    g, x = batch["graph"], batch["x"]
    mask = sample_mask(g.num_nodes(), cfg["model"]["mask_rate"])
    with torch.no_grad():
        target_latent = state.teacher.encode(g, x)
    outputs = model(g, x, mask)
    batch = dict(batch, mask=mask, target_latent=target_latent)
    loss, parts = loss_fn(outputs, batch, cfg)
    opt.zero_grad()
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["train"]["clip"])
    opt.step()
    state.scheduler.step()
    ema_update(state.teacher, model, cfg["model"]["ema_decay"])
    metrics = {"loss": loss.item(), "grad_norm": float(gnorm), **parts}
    return state._replace(step=state.step + 1), metrics


def eval_step(state, batch, mean_pred=None, mask_rate=0.5, seed=1234):
    """Masked-feature reconstruction on a fixed batch with a fixed mask."""
    model = state.model
    model.eval()
    g, x = batch["graph"], batch["x"]
    gen = torch.Generator().manual_seed(seed)
    mask = sample_mask(g.num_nodes(), mask_rate, generator=gen)
    with torch.no_grad():
        recon = model(g, x, mask)["recon"][mask]
    target = x[mask]
    out = {
        "recon_mse": F.mse_loss(recon, target).item(),
        "recon_cos": F.cosine_similarity(recon, target, dim=-1).mean().item(),
    }
    if mean_pred is not None:
        out["mean_baseline_mse"] = F.mse_loss(mean_pred.expand_as(target), target).item()
    return out
