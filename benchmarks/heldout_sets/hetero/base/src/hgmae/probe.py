"""Linear probe on frozen paper embeddings."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def linear_probe(emb, labels, split, epochs, lr, batch_size, seed):
    torch.manual_seed(seed)
    tr, te = split["train"], split["test"]
    mu, sd = emb[tr].mean(0), emb[tr].std(0) + 1e-6
    clf = nn.Linear(emb.shape[1], int(labels.max()) + 1)
    opt = torch.optim.Adam(clf.parameters(), lr=lr, weight_decay=1e-4)
    for _ in range(epochs):
        perm = tr[torch.randperm(len(tr))]
        for i in range(0, len(perm), batch_size):
            idx = perm[i:i + batch_size]
            xb = (emb[idx] - mu) / sd
            loss = F.cross_entropy(clf(xb), labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = clf((emb[te] - mu) / sd).argmax(1)
    return float((pred == labels[te]).float().mean())
