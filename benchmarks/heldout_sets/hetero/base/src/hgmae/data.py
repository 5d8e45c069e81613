"""Synthetic ACM-like heterogeneous graph: papers, authors, subjects.

Every node type gets its own feature width (badly scaled linear views of a class-dependent latent),
papers carry one of `num_classes` labels (the linear-probe target)."""
from dataclasses import dataclass

import dgl
import numpy as np
import torch

NTYPES = ("author", "paper", "subject")


@dataclass
class HeteroDataset:
    graph: dgl.DGLHeteroGraph
    feats: dict
    labels: torch.Tensor
    splits: dict          # ntype -> {"train": idx, "val": idx, "test": idx}
    in_dims: dict

    def heldout_masks(self, split, rate=0.5, seed=0):
        """Fixed held-out masks: `rate` of the `split` nodes of every type (seeded generator)."""
        gen = torch.Generator().manual_seed(seed)
        out = {}
        for t in NTYPES:
            idx = self.splits[t][split]
            out[t] = idx[torch.randperm(len(idx), generator=gen)[: max(1, int(rate * len(idx)))]]
        return out


def _relations(rng, n, y, author_class, subj_class, k_cite, k_auth):
    P, A, S = n["paper"], n["author"], n["subject"]
    # paper -> subject: one subject, of the paper's class 80 % of the time
    by_class_s = [np.flatnonzero(subj_class == c) for c in range(y.max() + 1)]
    same = rng.random(P) < 0.4
    subj = np.where(same, [rng.choice(by_class_s[c]) for c in y], rng.integers(0, S, P))
    # author -> paper: k_auth authors per paper, mostly of the paper's class
    by_class_a = [np.flatnonzero(author_class == c) for c in range(y.max() + 1)]
    pa_p = np.repeat(np.arange(P), k_auth)
    same = rng.random(P * k_auth) < 0.5
    pa_a = np.where(same, [rng.choice(by_class_a[c]) for c in y[pa_p]], rng.integers(0, A, P * k_auth))
    pa_a[rng.choice(P * k_auth, A, replace=False)] = np.arange(A)   # every author has a paper
    # paper -> paper citations, 70 % within the class
    by_class_p = [np.flatnonzero(y == c) for c in range(y.max() + 1)]
    c_src = np.repeat(np.arange(P), k_cite)
    same = rng.random(P * k_cite) < 0.5
    c_dst = np.where(same, [rng.choice(by_class_p[c]) for c in y[c_src]], rng.integers(0, P, P * k_cite))
    keep = c_src != c_dst
    c_src, c_dst = c_src[keep], c_dst[keep]
    return subj, (pa_a, pa_p), (c_src, c_dst)


def standardize(x, train_idx):
    mu = x[train_idx].mean(0, keepdim=True)
    sd = x[train_idx].std(0, keepdim=True) + 1e-6
    return (x - mu) / sd


def split_nodes(n, fractions):
    perm = np.random.permutation(n)
    n_tr, n_va = int(fractions[0] * n), int(fractions[1] * n)
    return {"train": torch.as_tensor(perm[:n_tr]), "val": torch.as_tensor(perm[n_tr:n_tr + n_va]),
            "test": torch.as_tensor(perm[n_tr + n_va:])}


def build_dataset(cfg, seed=0):
    rng = np.random.default_rng(seed)
    n, dims, C, L = cfg["num_nodes"], cfg["feat_dims"], cfg["num_classes"], cfg["latent_dim"]
    y = rng.integers(0, C, n["paper"])
    author_class = rng.integers(0, C, n["author"])
    subj_class = np.arange(n["subject"]) % C
    subj, (pa_a, pa_p), (c_src, c_dst) = _relations(rng, n, y, author_class, subj_class,
                                                    cfg["cites_per_paper"], cfg["authors_per_paper"])
    graph = dgl.heterograph({
        ("author", "writes", "paper"): (pa_a, pa_p),
        ("paper", "written_by", "author"): (pa_p, pa_a),
        ("paper", "cites", "paper"): (np.concatenate([c_src, c_dst]), np.concatenate([c_dst, c_src])),
        ("paper", "has_subject", "subject"): (np.arange(n["paper"]), subj),
        ("subject", "subject_of", "paper"): (subj, np.arange(n["paper"])),
    }, num_nodes_dict=dict(n))
    if cfg["self_loop"]:
        graph = dgl.add_self_loop(graph, etype="cites")

    centres = rng.normal(size=(C, L)) * 0.6
    latent = {"paper": centres[y] + 1.5 * rng.normal(size=(n["paper"], L)),
              "author": centres[author_class] + rng.normal(size=(n["author"], L)),
              "subject": centres[subj_class] + 0.3 * rng.normal(size=(n["subject"], L))}
    splits = {t: split_nodes(n[t], cfg["split"]) for t in NTYPES}
    feats = {}
    for t in NTYPES:
        W = rng.normal(size=(L, dims[t]))
        scale = rng.uniform(0.5, 20.0, size=dims[t])
        offset = rng.normal(size=dims[t]) * 5
        raw = np.tanh(latent[t] @ W / np.sqrt(L)) * scale + offset + 0.1 * rng.normal(size=(n[t], dims[t]))
        feats[t] = standardize(torch.tensor(raw, dtype=torch.float32), splits[t]["train"])
    return HeteroDataset(graph=graph, feats=feats, labels=torch.as_tensor(y), splits=splits,
                         in_dims=dict(dims))
