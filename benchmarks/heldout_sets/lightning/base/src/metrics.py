import torch
import torch.nn.functional as F


@torch.no_grad()
def masked_reconstruction(model, loader, mask_seed=1234):
    """Reconstruction of masked nodes with a fixed mask per batch.

    Returns MSE and mean cosine between reconstruction and (standardised) target, and the
    MSE of predicting the training mean (zero after standardisation) for the same nodes.
    """
    was_training = model.training
    model.eval()
    se = base_se = cos = 0.0
    n_nodes = n_elems = 0
    for i, (g, x) in enumerate(loader):
        gen = torch.Generator().manual_seed(mask_seed + i)
        pred, target, _ = model(g, x, generator=gen)
        pred, target = pred.float(), target.float()
        se += (pred - target).pow(2).sum().item()
        base_se += target.pow(2).sum().item()
        cos += F.cosine_similarity(pred, target, dim=-1).sum().item()
        n_nodes += target.shape[0]
        n_elems += target.numel()
    model.train(was_training)
    return {"val_mse": se / n_elems, "val_cos": cos / n_nodes, "baseline_mse": base_se / n_elems}
