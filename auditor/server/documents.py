"""What the editor server computes, apart from the protocol: the check of an open document in its
project, with the editor's buffers (unsaved text included) read instead of the files, and the
edits of its safe fixes and of ``# noqa`` comments.

A document's project is the folder of its config (the nearest ``pyproject.toml`` with a
``[tool.gm-audit]`` table, upwards), else the innermost workspace folder holding it. The whole
project is checked (cross-file rules see the callers and helpers of the document), from its root
as the current folder, so paths, ``exclude`` and ``per-file-ignores`` read as they do for
``gm-audit check`` run there; the caches serve it as they serve the CLI. A file in neither is
checked alone (its folder may be a home directory).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import tokenize
from argparse import Namespace
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

from auditor.config import Config, find_pyproject, load_config, selection
from auditor.findings import FileError, Finding
from auditor.noqa import add_noqa
from auditor.registry import select
from auditor.rule import Rule
from auditor.static.engine import CheckResult, relpath, run_check

NO_FLAGS = Namespace(select=None, extend_select=[], ignore=[])  # the config's selection alone
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its end, as LSP counts


@dataclass(frozen=True)
class Buffer:
    """An open document: its file's absolute path, the editor's text and its version."""

    path: Path
    text: str
    version: int


@dataclass(frozen=True)
class Project:
    config: Config
    paths: tuple[str, ...]  # what is checked, relative to the config's root

    @property
    def key(self) -> tuple[Path, tuple[str, ...]]:
        return self.config.root, self.paths


@dataclass
class ProjectCheck:
    config: Config
    paths: tuple[str, ...]
    rules: list[type[Rule]]
    result: CheckResult
    contents: dict[str, bytes]  # the buffers as the check read them, by reported path

    def reported(self, path: Path) -> str:
        """The path under which findings of the file at ``path`` are reported."""
        return Path(os.path.relpath(path, self.config.root)).as_posix()

    def findings(self, path: Path) -> list[Finding]:
        rel = self.reported(path)
        return [f for f in self.result.findings if f.path == rel]

    def errors(self, path: Path) -> list[FileError]:
        rel = self.reported(path)
        return [e for e in self.result.errors if e.path == rel]


def project_of(path: Path, folders: Sequence[Path]) -> Project:
    """The project of the file at ``path`` among the workspace ``folders`` (ConfigError when its
    config is invalid)."""
    found = find_pyproject(path.parent)
    if found is not None:
        return Project(load_config(str(found), path.parent), (".",))
    holding = [f for f in folders if path.is_relative_to(f)]
    if holding:
        return Project(Config(root=max(holding, key=lambda f: len(f.parts))), (".",))
    return Project(Config(root=path.parent), (path.name,))


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """The current folder is ``folder`` while the block runs (the server checks one project at a
    time, in one thread: nothing else reads the current folder meanwhile)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def encoded(text: str) -> bytes:
    """A buffer's text as its file would hold it: in the encoding its coding cookie names."""
    data = text.encode("utf-8")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return data  # the check reports the bad cookie or bytes, as for a file


def check_project(project: Project, buffers: Sequence[Buffer]) -> ProjectCheck:
    """Check ``project``, reading the buffers inside it instead of their files."""
    config = project.config
    rules = select(*selection(NO_FLAGS, config))
    with _inside(config.root):
        contents = {relpath(b.path): encoded(b.text) for b in buffers
                    if b.path.is_relative_to(config.root)}
        result = run_check(project.paths, config, rules, sources=contents, need_project=True)
    return ProjectCheck(config, project.paths, rules, result, contents)


def fixed_texts(check: ProjectCheck, chosen: Sequence[Finding]
                ) -> tuple[dict[Path, tuple[str, str]], list[str]]:
    """The safe fixes of ``chosen`` (findings of ``check``), applied and verified as ``--fix``
    does: each changed file's absolute path, old text and new text, and the descriptions of the
    fixes kept. Nothing is written."""
    from auditor.fix import decode_with_encoding, fix_findings

    with _inside(check.config.root):
        outcome = fix_findings(check.result, check.paths, check.config, check.rules,
                               contents=check.contents, chosen=chosen)
    texts = {check.config.root / path: (decode_with_encoding(old)[0], decode_with_encoding(new)[0])
             for path, (old, new) in outcome.changed.items()}
    return texts, [a.fix.description for a in outcome.fixed]


def with_noqa(text: str, finding: Finding) -> Optional[str]:
    """``text`` with a ``# noqa`` for ``finding`` on its line; None when that line cannot take
    one."""
    new, done = add_noqa(text, {finding.line: [finding.rule]})
    return new if done else None


def lines_with_ends(text: str) -> list[str]:
    return _LINE.findall(text)


def line_edits(old: str, new: str) -> list[tuple[int, int, str]]:
    """The changes from ``old`` to ``new`` as whole-line replacements: (first line, end line
    (exclusive), replacement text), 0-based; an editor applies them with cursor and undo intact."""
    a, b = lines_with_ends(old), lines_with_ends(new)
    return [(i1, i2, "".join(b[j1:j2]))
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if op != "equal"]
