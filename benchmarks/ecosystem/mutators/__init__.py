"""Mutation operators (issue 11, point 3): one module per rule, each a list of ``OPERATORS``
that inject that rule's bug class (or a benign twin) at every site where it applies.

``generate(repo, root)`` runs every operator over a repository's Python files and keeps at most
``cap`` sites per operator, chosen by a stable hash so the same sites come back on every run.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
from pathlib import Path
from typing import Iterable, Optional

import libcst as cst

from benchmarks.ecosystem.mutant import Mutant, Truth
from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, apply
from benchmarks.ecosystem.mutators.gm603 import seeded_families
from benchmarks.ecosystem.mutators.program import ProgramModel

_SKIP = {".venv", "venv", "build", "__pycache__", ".git", ".gm_audit_cache"}


def operators(rules: Optional[Iterable[str]] = None) -> list[Operator]:
    """Every operator, by module order; only those of ``rules`` when given."""
    wanted = {r.upper() for r in rules} if rules else None
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("gm"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            found.extend(op for op in module.OPERATORS if wanted is None or op.rule in wanted)
    return found


def python_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                  if not _SKIP & set(p.relative_to(root).parts[:-1]))


def _rank(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


Site = tuple[str, Source, Edit]  # (stable id, the parsed file, the edit there)


def sites(repo: str, root: Path, rules: Optional[Iterable[str]] = None) -> dict[str, list[Site]]:
    """Every site of every operator in ``root`` (a checkout of ``repo``), unapplied, in the
    stable order ``generate`` keeps them in."""
    ops = operators(rules)
    files = {rel: (root / rel).read_text(encoding="utf-8", errors="replace") for rel in python_files(root)}
    seeded = seeded_families(iter(files.values()))
    reads = tuple(sorted({r for op in ops for r in op.reads}))
    program = ProgramModel(root, reads) if reads else None
    # sites are ranked before they are applied: applying (a rewrite, a re-parse, a diff) is
    # the expensive part, and only ``cap`` per operator are kept
    found: dict[str, list[Site]] = {op.name: [] for op in ops}
    for rel, text in files.items():
        wanted = [op for op in ops if any(n in text for n in op.needs)]
        if not wanted:
            continue
        try:
            src = Source(rel, text, seeded, program)
        except cst.ParserSyntaxError:
            continue  # a file the corpus ships broken is GM000's business, not a site
        for op in wanted:
            for index, edit in enumerate(op.find(src)):
                found[op.name].append((f"{repo}:{op.name}:{rel}:{index}", src, edit))
    return {name: sorted(ss, key=lambda site: _rank(site[0])) for name, ss in found.items()}


def generate(repo: str, root: Path, rules: Optional[Iterable[str]] = None, cap: int = 3) -> list[Mutant]:
    """The mutants of ``root`` (a checkout of ``repo``), at most ``cap`` per operator."""
    found = sites(repo, root, rules)
    chosen = []
    for op in operators(rules):
        for key, src, edit in found[op.name][:cap]:
            applied = apply(src, edit)
            chosen.append(Mutant(
                id=key, repo=repo, operator=op.name, rule=op.rule, benign=op.benign,
                files={src.path: applied.text}, truth=[Truth(src.path, n) for n in applied.truth],
                description=edit.description))
    return chosen
