"""On-disk cache of per-file results, keyed by content, tool version and the enabled rules.

Files with findings are cached too. Only per-file results are kept: the cross-file stage is
recomputed from them on every run, so a change in one file reaches every finding that depends
on it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

from auditor import __version__

CACHE_DIR = ".gm_audit_cache"
KEEP = 4  # cache files kept side by side


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def engine_fingerprint() -> str:
    """Size and mtime of the analyser's own sources (the engine and every rule): results made by
    other code are never reused, even within one version (a rule being edited, say)."""
    from auditor import rules

    folders = [Path(__file__).parent, *map(Path, rules.__path__)]
    stamp = []
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            st = path.stat()
            stamp.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.blake2b("|".join(stamp).encode(), digest_size=8).hexdigest()


class Cache:
    def __init__(self, root: Path, codes: Iterable[str], enabled: bool = True) -> None:
        key = hashlib.blake2b(
            f"{__version__}|{sys.version_info[:2]}|{','.join(sorted(codes))}|{engine_fingerprint()}".encode(),
            digest_size=8,
        ).hexdigest()
        self.path = root / CACHE_DIR / f"check-{key}.pickle"
        # the whole run's answer lives in a small file of its own: an unchanged tree is answered
        # without unpickling every file's facts
        self.run_path = self.path.with_name(f"run-{key}.pickle")
        self.enabled = enabled
        self._entries: Optional[dict[str, tuple[str, Any]]] = None
        self.dirty = False

    @staticmethod
    def _load(path: Path) -> Any:
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except Exception:  # a missing, stale or corrupt cache is just a cold run
            return None

    @property
    def entries(self) -> dict[str, tuple[str, Any]]:
        if self._entries is None:
            loaded = self._load(self.path) if self.enabled else None
            self._entries = loaded if isinstance(loaded, dict) else {}
        return self._entries

    def get(self, path: str, digest: str) -> Any:
        hit = self.entries.get(path)
        return hit[1] if hit is not None and hit[0] == digest else None

    def put(self, path: str, digest: str, result: Any) -> None:
        if self.enabled:
            self.entries[path] = (digest, result)
            self.dirty = True

    def get_run(self, digest: str) -> Any:
        hit = self._load(self.run_path) if self.enabled else None
        return hit[1] if isinstance(hit, tuple) and hit[0] == digest else None

    def put_run(self, digest: str, result: Any) -> None:
        if self.enabled:
            self._write(self.run_path, (digest, result))

    def save(self) -> None:
        if self.enabled and self.dirty:
            self._write(self.path, self.entries)
            # other keys (older engines, other selections): keep the few most recent
            for pattern in ("check-*.pickle", "run-*.pickle"):
                others = sorted(self.path.parent.glob(pattern),
                                key=lambda p: p.stat().st_mtime, reverse=True)
                for stale in others[KEEP:]:
                    stale.unlink(missing_ok=True)

    def _write(self, target: Path, value: Any) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            gitignore = target.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n")
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only tree still gets its report; only the next run is slower
