import torch
import torch.nn.functional as F


def heldout_mask(data, ecfg):
    gen = torch.Generator().manual_seed(ecfg.mask_seed)
    test = data.test_idx
    perm = torch.randperm(test.numel(), generator=gen)
    return test[perm[: int(ecfg.mask_rate * test.numel())]]


@torch.no_grad()
def heldout_reconstruction(model, data, ecfg):
    """Mask held-out (test) nodes, reconstruct them; the caller sets the mode."""
    mask = heldout_mask(data, ecfg)
    recon, _ = model(data.graph, data.feats, mask)
    r, t = recon[mask], data.feats[mask]
    return {
        "heldout_cos": F.cosine_similarity(r, t, dim=-1).mean().item(),
        "heldout_mse": F.mse_loss(r, t).item(),
    }
