"""What a check covers when files are named on the command line (pre-commit names the staged
ones, an editor the open one): ``--force-exclude`` drops those the config excludes; the whole
project they belong to is analysed and the report is about them alone, so a bug that spans a
named file and another one (a helper in ``utils.py``) is still seen; ``-`` checks one file read
from stdin (editors) the same way, at its ``--stdin-filename``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Container, Iterable, TypeVar

from auditor.config import Config
from auditor.findings import FileError, Finding
from auditor.globs import matches

Item = TypeVar("Item", Finding, FileError)
PROJECT = "<project>"  # the path of the engine's cross-file errors: they concern every file
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def force_exclude(paths: Iterable[str], config: Config, texts: Container[str] = ()) -> list[str]:
    """``paths`` without the files (or stdin's stand-ins, ``texts``) that ``exclude`` covers;
    folders are filtered while walked."""
    return [p for p in paths if not ((p in texts or Path(p).is_file())
                                     and matches(Path(p), config.root, config.exclude))]


def project_root(path: Path) -> Path:
    """The project of a file: the nearest folder upward holding pyproject.toml, setup.cfg or
    .git; else the current folder when the file lies under it; else the file's own folder."""
    folder = path.absolute().parent
    for candidate in [folder, *folder.parents]:
        if any(os.path.exists(candidate / marker) for marker in PROJECT_MARKERS):
            return candidate
    cwd = Path.cwd()
    return cwd if folder == cwd or cwd in folder.parents else folder


def project_paths(files: Iterable[str]) -> list[str]:
    """What the engine analyses for named files: their projects, and the files themselves (a
    named file is checked even where ``exclude`` or a skipped folder would leave it out)."""
    from auditor.static.engine import relpath

    roots = sorted({relpath(project_root(Path(f))) for f in files})
    return [*roots, *files]


def named_keys(paths: Iterable[str]) -> set[str]:
    """Named files as the reports spell paths: relative to the current folder, POSIX."""
    from auditor.static.engine import relpath

    return {relpath(Path(p)) for p in paths}


def about_named(items: list[Item], named: set[str]) -> list[Item]:
    """Findings and errors in the named files, and findings elsewhere whose message or evidence
    cites a named file (``model.py:131``): a committed helper whose bug a staged call creates."""
    names = {Path(n).name for n in named}
    cite = re.compile(r"(?<![\w./-])(?:[\w./-]+/)?(" + "|".join(map(re.escape, names))
                      + r"):\d+") if names else None

    def cites(item: Item) -> bool:
        if cite is None or not isinstance(item, Finding):
            return False
        text = " ".join([item.message, *item.evidence])
        return any(m.group(0).split(":")[0] in named or "/" not in m.group(0).split(":")[0]
                   for m in cite.finditer(text))

    return [i for i in items if i.path in named or i.path == PROJECT or cites(i)]
