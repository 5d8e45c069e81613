"""A mutant: one injected bug (or benign twin) in a copy of a corpus repository.

Operators (``benchmarks/ecosystem/mutators/``) produce these from a repository's syntax; the
static, runtime and live scores consume them.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Truth:
    """Where the injected bug is, as the rule must report it: file and 1-based line."""

    path: str
    line: int


@dataclass
class Mutant:
    id: str  # stable across runs: repo, operator, file and site index
    repo: str  # corpus folder name, or ``fixture``
    operator: str
    rule: str  # the code that must report it (for a benign twin: the code that must stay quiet)
    benign: bool
    files: dict[str, str]  # relative POSIX path -> the file's whole new text
    truth: list[Truth] = field(default_factory=list)
    description: str = ""

    def materialise(self, source: Path, dest: Path) -> Path:
        """A copy of ``source`` at ``dest`` with this mutant's files written over it."""
        copy_tree(source, dest)
        return self.write(dest)

    def write(self, dest: Path) -> Path:
        """This mutant's files written over an existing copy at ``dest``."""
        for rel, text in self.files.items():
            (dest / rel).write_text(text, encoding="utf-8")
        return dest

    def revert(self, source: Path, dest: Path) -> None:
        """Put ``source``'s own files back over this mutant's in the copy at ``dest`` (one copy
        then serves every mutant of a repository, with its check cache kept warm)."""
        for rel in self.files:
            shutil.copyfile(source / rel, dest / rel)


def copy_tree(source: Path, dest: Path) -> Path:
    """A writable copy of ``source`` at ``dest``."""
    shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    # the corpus is laid out without write bits in CI; the copy must be writable
    for entry in [dest, *dest.rglob("*")]:
        if not entry.is_symlink():
            entry.chmod(entry.stat().st_mode | 0o200)
    return dest
