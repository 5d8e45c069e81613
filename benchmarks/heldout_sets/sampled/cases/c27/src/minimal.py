"""Plain loop: same data, sampler, model and loss, no trainer/callbacks/registry config."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dgl, torch
from gmae.config import load_config
from gmae.data import SBMNodeDataset
from gmae.engine.evaluation import reconstruction_metrics
from gmae.models import GraphMAE
from gmae.models.losses import scaled_cosine_error
from gmae.utils.seed import seed_all

cfg = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "default.toml"))
seed_all(cfg.seed)
ds = SBMNodeDataset(cfg.data, cfg.seed)
sampler = dgl.dataloading.NeighborSampler(list(cfg.sampler.fanouts))
loader = dgl.dataloading.DataLoader(ds.graph, torch.arange(ds.graph.num_nodes()), sampler,
                                    batch_size=cfg.sampler.batch_size, shuffle=True)
model = GraphMAE(ds.in_dim, cfg.model.hidden, cfg.model.num_layers, feat_drop=cfg.model.feat_drop)
opt = torch.optim.Adam(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
for epoch in range(cfg.train.epochs):
    model.train()
    for _inp, seeds, blocks in loader:
        x = ds.stats.apply(blocks[0].srcdata["feat"])
        mask = torch.zeros(x.shape[0], dtype=torch.bool)
        mask[torch.randperm(x.shape[0])[: int(cfg.model.mask_rate * x.shape[0])]] = True
        pred = model(blocks, x, mask)
        m = mask[: pred.shape[0]]
        loss = scaled_cosine_error(pred[m], x[: pred.shape[0]][m], cfg.loss.alpha)
        opt.zero_grad()
        loss.backward()
        opt.step()
metrics = reconstruction_metrics(model, ds.graph, ds.normalized_features(), ds.recon_eval_idx)
metrics["final_loss"] = loss.item()
print(json.dumps(metrics))
