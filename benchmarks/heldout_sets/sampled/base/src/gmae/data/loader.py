"""Neighbour-sampled mini-batches (MFG blocks) and the per-batch input path."""
import dgl
import torch


def build_train_loader(graph, cfg):
    sampler = dgl.dataloading.NeighborSampler(list(cfg.sampler.fanouts))
    seeds = torch.arange(graph.num_nodes())
    return dgl.dataloading.DataLoader(
        graph, seeds, sampler,
        batch_size=cfg.sampler.batch_size, shuffle=True, drop_last=False, num_workers=0,
    )


def build_inference_loader(graph, nids, num_layers, batch_size=1024):
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(num_layers)
    return dgl.dataloading.DataLoader(graph, nids, sampler, batch_size=batch_size, shuffle=False)


def prepare_batch(blocks, stats, device):
    """Gather the input-node features of a sampled batch and standardise them
    with the dataset statistics."""
    blocks = [b.to(device) for b in blocks]
    x = blocks[0].srcdata["feat"]
    x = (x - stats.mean.to(device)) / stats.std.to(device)
    return blocks, x


class MaskSampler:
    """Chooses which input nodes of a batch get the mask token."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, num_nodes, device=None):
        perm = torch.randperm(num_nodes, device=device)
        mask = torch.zeros(num_nodes, dtype=torch.bool, device=device)
        mask[perm[: int(self.rate * num_nodes)]] = True
        return mask
