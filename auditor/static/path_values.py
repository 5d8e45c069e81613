"""File paths as configuration values: where a program's own file places what it opens.

``DEFAULT = Path(__file__).resolve().parents[1] / "configs" / "train.yaml"`` names a file of the
checked tree by the script's place in it. :class:`TreePath` is such a path, relative to the
tree's root (where a run starts); the operations below follow ``pathlib`` and ``os.path`` on it
without touching the file system. A path that climbs above the root leaves the tree: the answer
is None and nothing there is read.
"""

from __future__ import annotations

import posixpath
from pathlib import Path, PurePosixPath
from typing import Optional, Union

# calls that give their first argument back as a path or a string of it
SAME_PATH = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "str", "os.fspath",
             "os.path.abspath", "os.path.realpath", "os.path.normpath", "os.path.expanduser"}
SAME_PATH_METHODS = {"resolve", "absolute", "expanduser", "as_posix"}
PathLike = Union[str, "TreePath"]


class TreePath(str):
    """A path of the checked tree, relative to its root, in POSIX form (``configs/train.yaml``);
    ``.`` is the root itself."""


def own_file(path: str, root: Path) -> Optional[TreePath]:
    """``__file__`` of the module at ``path`` (as the project names it), from ``root``."""
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root.resolve())
        except ValueError:
            return None
    return _inside(p.as_posix())


def _inside(text: str) -> Optional[TreePath]:
    normal = posixpath.normpath(text)
    return None if normal == ".." or normal.startswith("../") or normal.startswith("/") else TreePath(normal)


def parent(path: PathLike, levels: int = 1) -> Optional[PathLike]:
    """``path.parent`` (``levels`` times: ``path.parents[levels - 1]``), ``os.path.dirname``."""
    if not path:
        return None
    joined = posixpath.normpath(posixpath.join(path, *([".."] * levels)))
    return _inside(joined) if isinstance(path, TreePath) else joined


def join(base: PathLike, *parts: str) -> Optional[PathLike]:
    """``base / part``, ``os.path.join(base, part)``, ``base.joinpath(part)``; an absolute part
    replaces the path (and leaves the tree)."""
    if any(PurePosixPath(p).is_absolute() for p in parts):
        return None
    joined = posixpath.normpath(posixpath.join(base, *parts))
    return _inside(joined) if isinstance(base, TreePath) else joined


def concat(left: PathLike, right: str) -> Optional[PathLike]:
    """``left + right`` of strings; a path of the tree stays one."""
    return _inside(left + right) if isinstance(left, TreePath) else left + right
