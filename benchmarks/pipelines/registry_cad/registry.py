"""Tiny model registry: `@register_model("name")` on a class, `build_model(cfg)` to instantiate."""

MODEL_REGISTRY = {}


def register_model(name):
    def decorator(cls):
        if name in MODEL_REGISTRY:
            raise KeyError(f"model '{name}' is already registered ({MODEL_REGISTRY[name].__name__})")
        MODEL_REGISTRY[name] = cls
        return cls
    return decorator


def get_model_class(name):
    try:
        return MODEL_REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown model '{name}', available: {sorted(MODEL_REGISTRY)}") from None


def build_model(cfg):
    """Build the top-level model named by cfg["model"] (default "graphmae")."""
    import models  # noqa: F401  (registers the built-in models)
    return get_model_class(cfg.get("model", "graphmae")).from_config(cfg)
