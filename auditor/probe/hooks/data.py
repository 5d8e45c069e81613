"""Map-style dataset samples drawn again (GM503: a cached sample augmented in place)."""

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

            def spy(data):
                guarded(rec.note_samples)(self.dataset, possibly_batched_index, data)
                return collate(data)

            self.collate_fn = spy
            try:
                return original(self, possibly_batched_index)
            finally:
                self.collate_fn = collate
        return fetch

    rec.patch(fetch_mod._MapDatasetFetcher, "fetch", fetch_wrapper)
