"""The path patterns of ``exclude`` and ``per-file-ignores``, matched as Ruff matches them:
relative to the folder of the config, ``**`` for zero or more folders, ``*`` within one name, a
pattern without a ``/`` (``tests``, ``*_pb2.py``) naming a file or folder anywhere, and a folder's
pattern covering what it holds. These are gitignore's rules: pathspec's matcher implements them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import pathspec


@functools.lru_cache(maxsize=64)
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    import pathspec  # a fifth of a small file's check when imported up front; most runs match nothing

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def root_relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, POSIX; as given when it lies elsewhere."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop
        return path.as_posix()


def matches(path: Path, root: Path, patterns: Iterable[str]) -> bool:
    """Does one of ``patterns`` (relative to ``root``) cover ``path``?"""
    patterns = tuple(patterns)
    return bool(patterns) and _spec(patterns).match_file(root_relative(path, root))

