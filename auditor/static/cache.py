"""On-disk cache of per-file results, keyed by content, tool version and the enabled rules.

Files with findings are cached too. Only per-file results are kept: the cross-file stage is
recomputed from them on every run, so a change in one file reaches every finding that depends
on it.

The cache folder is untrusted input (a repository can commit one): files are plain JSON
(auditor/static/plain.py), versioned, and signed with an HMAC whose key lives in the user's own
cache folder, so a file this machine did not write is never believed; symlinks are never
followed; anything that fails a check is a cold run. ``GM_AUDIT_CACHE_DIR`` (or ``--cache-dir``)
moves the folder out of the project.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

from auditor import __version__
from auditor.static.plain import NotPlain, decode, encode
from auditor.static.reading import read_source

CACHE_DIR = ".gm_audit_cache"
CACHE_DIR_ENV = "GM_AUDIT_CACHE_DIR"
KEEP = 4  # cache files kept side by side
FORMAT = b"gm-audit-cache 1"  # bump when the layout of the stored values changes
MAX_CACHE_BYTES = 512 * 1024 * 1024
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


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


def cache_folder(root: Path) -> Path:
    chosen = os.environ.get(CACHE_DIR_ENV)
    return Path(chosen) if chosen else root / CACHE_DIR


def _user_key_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gm-audit" / "hmac-key"


def signing_key() -> Optional[bytes]:
    """This user's secret (created on first use, mode 0600); None: no cache this run."""
    path = _user_key_path()
    try:
        return _read_regular(path, 64)
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        return _read_regular(path, 64)
    except OSError:  # read-only home, or another run created it meanwhile
        try:
            return _read_regular(path, 64)
        except OSError:
            return None


def _read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file, never through a symlink (OSError otherwise);
    a larger file is refused by its size, before a byte of it is read."""
    if os.lstat(path).st_size > limit:
        raise OSError(f"{path} is larger than {limit} bytes")
    data = read_source(path, limit, follow_symlinks=False)
    if len(data) > limit:
        raise OSError(f"{path} is larger than {limit} bytes")
    return data


def _is_real_folder(folder: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


def _stale(folder: Path, pattern: str) -> list[Path]:
    """The entries matching ``pattern`` beyond the ``KEEP`` most recent. The folder may be
    committed: a folder, FIFO or device under a cache file's name is left where it is (only
    files and symlinks, which unlink removes without following, are pruned)."""
    found = []
    for p in folder.glob(pattern):
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            found.append((st.st_mtime, p))
    return [p for _, p in sorted(found, reverse=True)[KEEP:]]


class Cache:
    def __init__(self, root: Path, codes: Iterable[str], enabled: bool = True) -> None:
        key = hashlib.blake2b(
            f"{__version__}|{sys.version_info[:2]}|{','.join(sorted(codes))}|{engine_fingerprint()}".encode(),
            digest_size=8,
        ).hexdigest()
        self.path = cache_folder(root) / f"check-{key}.json"
        # the whole run's answer lives in a small file of its own: an unchanged tree is answered
        # without decoding every file's facts
        self.run_path = self.path.with_name(f"run-{key}.json")
        self.key = signing_key() if enabled else None
        self.enabled = self.key is not None
        self._entries: Optional[dict[str, tuple[str, Any]]] = None
        self.dirty = False

    def _sign(self, payload: bytes) -> bytes:
        assert self.key is not None
        return hmac.new(self.key, FORMAT + b"\n" + payload, hashlib.sha256).hexdigest().encode()

    def _load(self, path: Path) -> Any:
        """The stored value, or None for a missing, foreign, stale, corrupt or hostile file."""
        if not self.enabled or not _is_real_folder(path.parent):
            return None
        try:
            blob = _read_regular(path, MAX_CACHE_BYTES)
            header, _, payload = blob.partition(b"\n")
            version, _, mac = header.rpartition(b" ")
            if version != FORMAT or not hmac.compare_digest(mac, self._sign(payload)):
                return None
            return decode(json.loads(payload))
        except (OSError, ValueError, NotPlain, RecursionError):
            return None

    @property
    def entries(self) -> dict[str, tuple[str, Any]]:
        if self._entries is None:
            loaded = self._load(self.path)
            self._entries = loaded if isinstance(loaded, dict) else {}
        return self._entries

    def get(self, path: str, digest: str) -> Any:
        hit = self.entries.get(path)
        result = hit[1] if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == digest else None
        return result if isinstance(result, tuple) and len(result) == 3 else None  # an older shape

    def put(self, path: str, digest: str, result: Any) -> None:
        if self.enabled:
            self.entries[path] = (digest, result)
            self.dirty = True

    def get_run(self, digest: str) -> Any:
        hit = self._load(self.run_path)
        result = hit[1] if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == digest else None
        return result if isinstance(result, tuple) and len(result) == 3 else None  # an older shape

    def put_run(self, digest: str, result: Any) -> None:
        if self.enabled:
            self._write(self.run_path, (digest, result))

    def save(self) -> None:
        if self.enabled and self.dirty:
            self._write(self.path, self.entries)
            # other keys (older engines, other selections): keep the few most recent
            folder = self.path.parent
            if not _is_real_folder(folder):
                return
            for pattern in ("check-*.json", "run-*.json"):
                for stale in _stale(folder, pattern):
                    try:
                        stale.unlink()  # removes a link itself, never its target
                    except OSError:
                        pass  # gone meanwhile, or a read-only folder: pruned next time


    def _write(self, target: Path, value: Any) -> None:
        folder = target.parent
        try:
            payload = json.dumps(encode(value), separators=(",", ":")).encode()
            folder.mkdir(parents=True, exist_ok=True)
            if not _is_real_folder(folder):  # a committed symlink would write outside the tree
                return
            try:
                fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644)
                with os.fdopen(fd, "w") as fh:
                    fh.write("*\n")
            except FileExistsError:
                pass
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(FORMAT + b" " + self._sign(payload) + b"\n" + payload)
                # replaces a link at the target, never writes through it; fails on a folder
                os.replace(tmp, target)
            except OSError:
                os.unlink(tmp)
                raise
        except (OSError, NotPlain, ValueError, RecursionError):
            pass  # a read-only tree still gets its report; only the next run is slower
