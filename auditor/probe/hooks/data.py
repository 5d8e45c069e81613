"""Map-style dataset samples drawn again (GM503: a cached sample augmented in place), and the
user-defined collate function that makes each batch (``collate``: where an augmentation or a
per-batch normalisation applied to the batch is defined, for ``gm-audit diff``) with the feature
statistics of the batches it returns (GM502's pinned columns, GM504's frames)."""

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
            site = guarded(note_collate)(collate)

            def spy(data):
                guarded(rec.note_samples)(self.dataset, possibly_batched_index, data)
                batch = collate(data)
                if site:
                    guarded(batch_stats)(batch, site)
                return batch

            self.collate_fn = spy
            try:
                return original(self, possibly_batched_index)
            finally:
                self.collate_fn = collate
        return fetch

    def note_collate(fn):
        """The user's collate function, recorded at its definition: (path, line, name); None
        for a library's."""
        code = _code_of(fn)
        path = rec.rel(code.co_filename) if code is not None else None
        if path is None:
            return None
        name = getattr(fn, "__qualname__", type(fn).__qualname__)
        rec.record("collate", path, code.co_firstlineno, {"fn": name, "step": rec.step_count})
        return path, code.co_firstlineno, name

    def batch_stats(batch, site) -> None:
        # the batch as the collate made it, before a model masks or augments it further
        parts = batch.values() if isinstance(batch, dict) else \
            batch if isinstance(batch, (tuple, list)) else (batch,)
        path, line, name = site
        rec.input_stats(f"collate `{name}`", tuple(parts), path, line, label="batch item ")

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
