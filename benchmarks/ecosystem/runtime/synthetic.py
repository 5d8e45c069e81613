"""Small synthetic graphs with the interface of the datasets the corpus scripts download.

Labels are planted in the structure and features, so a script that trains really learns and its
loss falls; sizes are chosen for a run of a few CPU-seconds.
"""

from __future__ import annotations

import dgl
import torch


def citation_graph(num_nodes: int = 300, num_feats: int = 64, num_classes: int = 4,
                   seed: int = 0) -> dgl.DGLGraph:
    """A Cora-like graph: homophilous edges, noisy class-centred features, 60/20/20 masks."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(num_classes, (num_nodes,), generator=gen)
    centres = torch.randn(num_classes, num_feats, generator=gen)
    feat = (centres[labels] + 1.5 * torch.randn(num_nodes, num_feats, generator=gen)).clamp_min(0)
    src = torch.randint(num_nodes, (num_nodes * 4,), generator=gen)
    # each edge goes to a node of the same class most of the time: a graph worth propagating over
    same = torch.nonzero(labels[None, :] == labels[src][:, None])
    pick = torch.randint(1 << 30, (len(src),), generator=gen)
    dst = torch.empty_like(src)
    for i in range(len(src)):
        row = same[same[:, 0] == i, 1]
        dst[i] = row[pick[i] % len(row)] if pick[i] % 5 else pick[i] % num_nodes
    graph = dgl.to_bidirected(dgl.graph((src, dst), num_nodes=num_nodes))
    order = torch.randperm(num_nodes, generator=gen)
    masks = [torch.zeros(num_nodes, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, order.tensor_split([int(0.6 * num_nodes), int(0.8 * num_nodes)])):
        mask[part] = True
    graph.ndata.update({"feat": feat, "label": labels, "train_mask": masks[0],
                        "val_mask": masks[1], "test_mask": masks[2]})
    return graph


class CitationDataset:
    """Stands in for ``dgl.data.CoraGraphDataset`` and friends: ``dataset[0]``, ``num_classes``."""

    num_classes = 4

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.graph = citation_graph(num_classes=self.num_classes)

    def __getitem__(self, index: int) -> dgl.DGLGraph:
        return self.graph

    def __len__(self) -> int:
        return 1


def molecule_graphs(count: int = 120, num_classes: int = 3, edge_feats: int = 7,
                    seed: int = 0) -> tuple[list[dgl.DGLGraph], torch.Tensor]:
    """ogbg-ppa-like graphs: edge features only; every edge of a graph of class ``c`` carries a
    raised column ``c``, so a GNN that reads edge features learns the label within a few epochs."""
    gen = torch.Generator().manual_seed(seed)
    graphs, labels = [], []
    for _ in range(count):
        n = int(torch.randint(6, 14, (1,), generator=gen))
        src = torch.randint(n, (2 * n,), generator=gen)
        # no self loops: molecules have none, and the probe rightly reports graphs carrying them
        dst = (src + torch.randint(1, n, (2 * n,), generator=gen)) % n
        graph = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
        label = int(torch.randint(num_classes, (1,), generator=gen))
        feat = torch.rand(n * 2, edge_feats, generator=gen)
        feat[:, label] += 1.0
        graph.edata["feat"] = torch.cat([feat, feat])
        graphs.append(graph)
        labels.append(label)
    return graphs, torch.tensor(labels)
