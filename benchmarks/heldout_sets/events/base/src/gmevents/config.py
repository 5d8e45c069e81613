"""YAML configuration: `defaults:` inheritance, deep merge, then `--opts key.sub=value` overrides."""
import copy
import os

import yaml


class AttrDict(dict):
    """A dict read as cfg.model.hidden (and still cfg.train.get("clip", 0.0))."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(key) from exc

    def __setattr__(self, key, value):
        self[key] = value

    @classmethod
    def wrap(cls, obj):
        if isinstance(obj, dict):
            return cls({k: cls.wrap(v) for k, v in obj.items()})
        if isinstance(obj, list):
            return [cls.wrap(v) for v in obj]
        return obj


def deep_merge(base, override):
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_yaml_tree(path):
    """Load `path`, first merging the files its `defaults:` list names (relative to it)."""
    with open(path) as fh:
        raw = yaml.safe_load(fh) or {}
    merged = {}
    for parent in raw.pop("defaults", []):
        merged = deep_merge(merged, load_yaml_tree(os.path.join(os.path.dirname(path), parent)))
    return deep_merge(merged, raw)


def apply_opts(cfg, opts):
    for item in opts or []:
        key, _, text = item.partition("=")
        *parents, leaf = key.split(".")
        node = cfg
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = yaml.safe_load(text)
    return cfg


def load_config(path, opts=None):
    return AttrDict.wrap(apply_opts(load_yaml_tree(path), opts))
