"""Full-graph reconstruction metrics and the linear probe used by callbacks
and by stage 2."""
import torch
import torch.nn.functional as F


def reconstruction_metrics(model, graph, x, eval_idx):
    """Hide the features of `eval_idx`, reconstruct them with the full graph."""
    model.eval()
    with torch.no_grad():
        mask = torch.zeros(x.shape[0], dtype=torch.bool)
        mask[eval_idx] = True
        blocks = [graph] * (model.num_layers + 1)
        pred = model(blocks, x, mask)[mask]
        tgt = x[mask]
        mse = F.mse_loss(pred, tgt).item()
        cos = F.cosine_similarity(pred, tgt, dim=-1).mean().item()
        base = F.mse_loss(torch.zeros_like(tgt), tgt).item()
    return {"recon_mse": mse, "recon_cos": cos, "mean_baseline_mse": base}


def fit_linear_probe(emb, labels, train_idx, test_idx, num_classes, epochs=300, seed=0):
    gen = torch.Generator().manual_seed(seed)
    emb = (emb - emb[train_idx].mean(0)) / (emb[train_idx].std(0) + 1e-6)
    head = torch.nn.Linear(emb.shape[1], num_classes)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=gen) * 0.01)
        head.bias.zero_()
    opt = torch.optim.Adam(head.parameters(), lr=0.01, weight_decay=1e-3)
    for _ in range(epochs):
        opt.zero_grad()
        loss = F.cross_entropy(head(emb[train_idx]), labels[train_idx])
        loss.backward()
        opt.step()
    with torch.no_grad():
        pred = head(emb[test_idx]).argmax(-1)
    return (pred == labels[test_idx]).float().mean().item()
