"""Downstream stage: graph embeddings (mean + max readout of every encoder layer) and a
logistic-regression probe trained with minibatches."""
import dgl
import torch
import torch.nn.functional as F


@torch.no_grad()
def graph_embeddings(model, batches):
    out, labels = [], []
    for g, y in batches:
        hidden = model.embed(g, g.ndata["feat"])
        parts = []
        for h in hidden:
            g.ndata["h"] = h
            parts += [dgl.mean_nodes(g, "h"), dgl.max_nodes(g, "h")]
        out.append(torch.cat(parts, 1))
        labels.append(y)
    return torch.cat(out), torch.cat(labels)


def linear_probe(train_emb, train_y, test_emb, test_y, num_classes, pcfg, seed):
    mean, std = train_emb.mean(0), train_emb.std(0) + 1e-6
    clf = torch.nn.Linear(train_emb.shape[1], num_classes)
    torch.nn.init.zeros_(clf.weight)
    torch.nn.init.zeros_(clf.bias)
    opt = torch.optim.Adam(clf.parameters(), lr=pcfg.lr, weight_decay=pcfg.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(pcfg.epochs):
        perm = torch.randperm(train_emb.shape[0], generator=gen)
        for s in range(0, perm.numel(), pcfg.batch_size):
            idx = perm[s:s + pcfg.batch_size]
            xb = train_emb[idx]
            xb = (xb - mean) / std
            loss = F.cross_entropy(clf(xb), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        logits = clf((test_emb - mean) / std)
        return {"probe_acc": float((logits.argmax(1) == test_y).float().mean()),
                "probe_nll": float(F.cross_entropy(logits, test_y))}
