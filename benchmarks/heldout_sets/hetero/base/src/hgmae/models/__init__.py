"""Model plugins: `hgmae.models.<name>` exposes the class named in the config."""
from ..registry import load_plugin


def build_model(cfg, dataset):
    cls = load_plugin(__package__, cfg["name"], cfg["cls"])
    return cls(in_dims=dataset.in_dims, canonical_etypes=dataset.graph.canonical_etypes,
               hidden=cfg["hidden"], num_layers=cfg["num_layers"], dropout=cfg["dropout"],
               mask_rate=cfg["mask_rate"], encoder=cfg["encoder"], decoder=cfg["decoder"])


def freeze(model, prefixes):
    """Freeze every parameter whose name starts with one of `prefixes` (ablations, transfer)."""
    for name, p in model.named_parameters():
        if any(name.startswith(pre) for pre in prefixes):
            p.requires_grad_(False)
    return model
