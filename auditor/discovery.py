"""Which files a check covers: recursive discovery with the usual folders left out.

A repository is untrusted input (CI checks strangers' pull requests): a symlink found while
walking a named folder is followed only when its target resolves inside that folder, so a
committed link (``v -> ../other``, ``x.py -> /etc/...``, ``root -> /``) never makes the check read
files outside the tree it was asked to check. Paths named on the command line are taken as typed,
links included (as ``find -H`` does): the user chose them."""

from __future__ import annotations

import errno
import os
import re
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


OUTSIDE = "skipped: symlink to outside the checked tree"


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


def _inside(real: str, tree: str) -> bool:
    """Whether the resolved path ``real`` is ``tree`` (resolved too) or below it."""
    return real == tree or real.startswith(tree.rstrip(os.sep) + os.sep)


def _leaves(entry: os.DirEntry, tree: str) -> bool:
    """A symlink whose target resolves outside ``tree`` (what is not a link stays inside: only
    folders inside the tree are walked)."""
    return entry.is_symlink() and not _inside(os.path.realpath(entry.path), tree)


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
    kept: dict[str, Path] = {}  # resolved path -> the path it is checked under

    def add(p: Path) -> None:
        # one file reached twice (a link beside its target) is checked once, under its real
        # name where the walk meets it: --fix never writes through a link
        key = os.path.realpath(p)
        if key not in kept or (kept[key].is_symlink() and not p.is_symlink()):
            kept[key] = p

    def walk(d: Path, tree: str) -> None:
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
                if entry.name in SKIP_DIRS or matches(p, root, exclude):
                    continue
                if _leaves(entry, tree):
                    out.notes.append((p.as_posix(), OUTSIDE))
                elif not _is_venv(p):
                    walk(p, tree)
            elif entry.name.endswith((".py", ".pyi")):
                if matches(p, root, exclude):
                    continue
                problem = file_problem(p) or (OUTSIDE if _leaves(entry, tree) else None)
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
            walk(p, os.path.realpath(p))
            continue
        problem = file_problem(p)
        if problem:
            out.notes.append((raw, problem))
        else:
            add(p)
    out.files = list(kept.values())
    return out
