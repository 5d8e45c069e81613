"""Tiny Hydra-like object construction and plugin lookup."""
import copy
import functools
import importlib


def locate(path):
    """'pkg.mod.Name' -> the object."""
    module_name, _, attr = path.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def _resolve(value):
    if isinstance(value, dict) and "_target_" in value:
        return instantiate(value)
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve(v) for v in value)
    return value


def instantiate(cfg, **kwargs):
    """Build `cfg["_target_"](**cfg, **kwargs)`; nested `_target_` dicts are built first.
    `_partial_: True` returns a functools.partial instead of calling the target."""
    if cfg is None:
        return None
    cfg = copy.deepcopy(cfg)
    target = locate(cfg.pop("_target_"))
    partial = cfg.pop("_partial_", False)
    params = {k: _resolve(v) for k, v in cfg.items()}
    params.update(kwargs)
    if partial:
        return functools.partial(target, **params)
    return target(**params)


def load_plugin(package, name, attr):
    """Import `<package>.<name>` and return its attribute `attr` (models, losses)."""
    module = importlib.import_module(f"{package}.{name}")
    return getattr(module, attr)
