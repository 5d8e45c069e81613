"""Loss plugins: `hgmae.losses.<name>` exposes `LOSS`, a class built from the `loss` config."""
from ..registry import load_plugin


def build_loss(cfg):
    cls = load_plugin(__package__, cfg["name"], "LOSS")
    return cls(**{k: v for k, v in cfg.items() if k != "name"})
