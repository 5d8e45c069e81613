"""Name -> class registries; objects are built from config sections that carry a `name`."""


class Registry:
    def __init__(self, kind):
        self.kind = kind
        self._items = {}

    def register(self, name=None):
        def deco(obj):
            self._items[name or obj.__name__] = obj
            return obj
        return deco

    def get(self, name):
        if name not in self._items:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._items)}")
        return self._items[name]

    def build(self, section, **extra):
        kwargs = dict(section)
        cls = self.get(kwargs.pop("name"))
        kwargs.update(extra)
        return cls(**kwargs)


MODELS = Registry("model")
NORMS = Registry("norm")
LOSSES = Registry("loss")
TRANSFORMS = Registry("transform")
