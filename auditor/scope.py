"""What a check covers when files are named on the command line (pre-commit names the staged
ones): ``--force-exclude`` drops those the config excludes, ``--in-project`` analyses the whole
project they belong to and reports on them alone, so a bug that spans a staged file and a
committed one is still seen; ``-`` checks one file read from stdin (editors), reported and
configured at its ``--stdin-filename``."""

from __future__ import annotations

import contextlib
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator, TypeVar

from auditor.config import Config, per_file_ignored
from auditor.discovery import is_excluded
from auditor.findings import FileError, Finding

Item = TypeVar("Item", Finding, FileError)
PROJECT = "<project>"  # the path of the engine's cross-file errors: they concern every file


def excluded(path: str, config: Config) -> bool:
    return is_excluded(Path(path), config.root, config.exclude)


def force_exclude(paths: Iterable[str], config: Config) -> list[str]:
    """``paths`` without the files that ``exclude`` covers (folders are filtered while walked)."""
    return [p for p in paths if not (Path(p).is_file() and excluded(p, config))]


def project_paths(config: Config) -> list[str]:
    """The project of the named files: the folder of the config file, else the current one."""
    return [str(config.root) if config.path is not None else "."]


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


@contextlib.contextmanager
def stdin_file(filename: str) -> Iterator[Path]:
    """The source read from stdin, in a temporary folder under the name it stands for (its
    suffix decides whether it is a stub)."""
    with tempfile.TemporaryDirectory(prefix="gm-audit-stdin-") as tmp:
        target = Path(tmp) / Path(filename).name
        target.write_bytes(sys.stdin.buffer.read())
        yield target


def as_stdin_file(items: list[Item], checked: str, shown: str, config: Config) -> list[Item]:
    """Findings and errors of the temporary copy moved to the stdin filename, with that path's
    per-file ignores applied (the engine applied those of the temporary path)."""
    ignored = per_file_ignored(config, shown)
    return [replace(i, path=shown) for i in items
            if not (isinstance(i, Finding) and i.rule in ignored)
            and i.path in (checked, PROJECT)]
