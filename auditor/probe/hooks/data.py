"""Map-style dataset samples drawn again (GM503: a cached sample augmented in place), and the
user-defined collate function that makes each batch (``collate``: where an augmentation or a
per-batch normalisation applied to the batch is defined, for ``gm-audit diff``)."""

from __future__ import annotations

import importlib
import os


def install(rec, torch) -> None:
    guarded = rec.guarded
    tls = rec.tls

    fetch_mod = importlib.import_module("torch.utils.data._utils.fetch")

    def fetch_wrapper(original):
        def fetch(self, possibly_batched_index):
            if tls.busy or not getattr(self, "auto_collation", False) or rec.pid != os.getpid():
                return original(self, possibly_batched_index)
            collate = self.collate_fn
            guarded(note_collate)(collate)

            def spy(data):
                guarded(rec.note_samples)(self.dataset, possibly_batched_index, data)
                return collate(data)

            self.collate_fn = spy
            try:
                return original(self, possibly_batched_index)
            finally:
                self.collate_fn = collate
        return fetch

    def note_collate(fn) -> None:
        code = _code_of(fn)
        path = rec.rel(code.co_filename) if code is not None else None
        if path is not None:
            rec.record("collate", path, code.co_firstlineno,
                       {"fn": getattr(fn, "__qualname__", type(fn).__qualname__),
                        "step": rec.step_count})

    rec.patch(fetch_mod._MapDatasetFetcher, "fetch", fetch_wrapper)


def _code_of(fn):
    """The code object a collate callable runs: a function's, a bound method's, a
    ``functools.partial``'s target's, or a callable object's ``__call__``."""
    for _ in range(4):
        if hasattr(fn, "__code__"):
            return fn.__code__
        if hasattr(fn, "__func__"):
            fn = fn.__func__
        elif hasattr(fn, "func"):
            fn = fn.func
        else:
            fn = getattr(type(fn), "__call__", None)
    return None
