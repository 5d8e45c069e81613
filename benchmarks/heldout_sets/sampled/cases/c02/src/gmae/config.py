"""Config = TOML file in the tree, then `--set a.b=value` overrides."""
import copy
import tomllib


class Node(dict):
    """dict with attribute access, recursively."""

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
        return obj


def _parse_value(text):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(tree, assignment):
    key, _, raw = assignment.partition("=")
    parts = key.strip().split(".")
    cur = tree
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = _parse_value(raw.strip())


def load_config(path, overrides=()):
    with open(path, "rb") as fh:
        tree = tomllib.load(fh)
    tree = copy.deepcopy(tree)
    for item in overrides:
        apply_override(tree, item)
    return Node.wrap(tree)
