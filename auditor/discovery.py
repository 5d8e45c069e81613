"""Which files a check covers: recursive discovery with the usual folders left out."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from auditor.globs import matches

# Never real project code. dist/ and build/ are kept: projects such as DGL keep sources there.
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "site-packages", "node_modules", ".tox", ".nox",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gm_audit_cache", ".eggs"}
)


class PathMissing(FileNotFoundError):
    pass


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (path, message) worth telling


def file_problem(path: Path) -> Optional[str]:
    """Why ``path`` is not a source file to read (None: it is one). Checked before opening: a
    FIFO named ``x.py`` would block the run, a link to ``/dev/zero`` would never end."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "skipped: symlink loop"
        if exc.errno == errno.ENOENT:
            return "skipped: broken symlink"
        return f"cannot read file: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return "skipped: not a regular file"
    return None


def _is_venv(folder: Path) -> bool:
    try:
        return (folder / "pyvenv.cfg").exists()
    except OSError:  # an unreadable folder: scandir reports it
        return False


def discover(paths: Iterable[str], root: Path, exclude: Iterable[str] = ()) -> Discovery:
    """Files named on the command line are always kept; folders are walked for ``*.py``."""
    exclude = list(exclude)
    out = Discovery()
    seen_dirs: set[str] = set()
    seen_files: set[str] = set()

    def add(p: Path) -> None:
        key = os.path.realpath(p)
        if key not in seen_files:
            seen_files.add(key)
            out.files.append(p)

    def walk(d: Path) -> None:
        real = os.path.realpath(d)
        if real in seen_dirs:
            out.notes.append((d.as_posix(), "skipped: symlink loop (folder already visited)"))
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            out.notes.append((d.as_posix(), f"cannot read folder: {exc.strerror or exc}"))
            return
        for entry in entries:
            p = Path(entry.path)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in SKIP_DIRS or _is_venv(p):
                    continue
                if matches(p, root, exclude):
                    continue
                walk(p)
            elif entry.name.endswith((".py", ".pyi")):
                if matches(p, root, exclude):
                    continue
                problem = file_problem(p)
                if problem:
                    out.notes.append((p.as_posix(), problem))
                    continue
                add(p)

    for raw in paths:
        p = Path(raw)
        try:
            os.lstat(p)
        except FileNotFoundError:
            raise PathMissing(f"path does not exist: {raw}") from None
        except OSError:
            pass  # in an unreadable folder: reported below, for this path
        if os.path.isdir(p):  # False, not an error, where it cannot be looked at
            walk(p)
            continue
        problem = file_problem(p)
        if problem:
            out.notes.append((raw, problem))
        else:
            add(p)
    return out
