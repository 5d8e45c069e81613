"""Mutation operators (issue 11, point 3): one module per rule, each a list of ``OPERATORS``
that inject that rule's bug class (or a benign twin) at every site where a person could write it,
found from the syntax alone; whether a mutant is a live bug is the oracle's call.

``generate(repo, root)`` runs every operator over a repository's Python files and keeps at most
``cap`` sites per operator, chosen by a stable hash so the same sites come back on every run.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
from pathlib import Path
from typing import Callable, Iterable, Optional

import libcst as cst

from benchmarks.ecosystem.mutant import Mutant, Truth
from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, apply
from benchmarks.ecosystem.mutators.gm603 import seeded_families

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


def python_files(root: Path, only: Optional[Iterable[str]] = None) -> list[str]:
    """The repository's Python files (relative POSIX paths); those of ``only`` when given."""
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                   if not _SKIP & set(p.relative_to(root).parts[:-1]))
    if only is None:
        return found
    wanted = set(only)
    return [f for f in found if f in wanted]


def _rank(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


Site = tuple[str, Source, Edit]  # (stable id, the parsed file, the edit there)


def sites(repo: str, root: Path, rules: Optional[Iterable[str]] = None,
          files: Optional[Iterable[str]] = None) -> dict[str, list[Site]]:
    """Every site of every operator in ``root`` (a checkout of ``repo``; only in ``files`` when
    given), unapplied, in the stable order ``generate`` keeps them in."""
    ops = operators(rules)
    texts = {rel: (root / rel).read_text(encoding="utf-8", errors="replace") for rel in python_files(root)}
    seeded = seeded_families(iter(texts.values()))  # seeding anywhere in the repository counts
    chosen = set(python_files(root, files))
    # sites are ranked before they are applied: applying (a rewrite, a re-parse, a diff) is
    # the expensive part, and only ``cap`` per operator are kept
    found: dict[str, list[Site]] = {op.name: [] for op in ops}
    for rel, text in texts.items():
        wanted = [op for op in ops if rel in chosen and any(n in text for n in op.needs)]
        if not wanted:
            continue
        try:
            src = Source(rel, text, seeded)
        except cst.ParserSyntaxError:
            continue  # a file the corpus ships broken is GM000's business, not a site
        for op in wanted:
            for index, edit in enumerate(op.find(src)):
                found[op.name].append((f"{repo}:{op.name}:{rel}:{index}", src, edit))
    return {name: sorted(ss, key=lambda site: _rank(site[0])) for name, ss in found.items()}


def generate(repo: str, root: Path, rules: Optional[Iterable[str]] = None, cap: int = 3,
             files: Optional[Iterable[str]] = None,
             keep: Optional[Callable[[Mutant], bool]] = None) -> list[Mutant]:
    """The mutants of ``root`` (a checkout of ``repo``; only in ``files`` when given), at most
    ``cap`` per operator, the first in the stable order that ``keep`` accepts when given."""
    found = sites(repo, root, rules, files)
    chosen = []
    for op in operators(rules):
        kept = 0
        for key, src, edit in found[op.name]:
            if kept == cap:
                break
            mutant = _mutant(repo, op, key, src, edit)
            if mutant is None:
                continue  # the operator's text does not fit this site (a keyword for a name)
            if keep is None or keep(mutant):
                chosen.append(mutant)
                kept += 1
    return chosen


def _mutant(repo: str, op: Operator, key: str, src: Source, edit: Edit) -> Optional[Mutant]:
    try:
        applied = apply(src, edit)
    except cst.ParserSyntaxError:
        return None
    return Mutant(id=key, repo=repo, operator=op.name, rule=op.rule, benign=op.benign,
                  files={src.path: applied.text}, truth=[Truth(src.path, n) for n in applied.truth],
                  description=edit.description)


def rebuild(repo: str, root: Path, ids: Iterable[str]) -> dict[str, Mutant]:
    """The mutants of ``root`` with these ids, made again (a site's id names its operator, file
    and index, and sites are found by syntax alone: the same source gives the same edit)."""
    wanted = set(ids)
    rules = {op.rule for op in operators() if any(f":{op.name}:" in i for i in wanted)}
    by_name = {op.name: op for op in operators(rules)}
    files = {i[len(repo) + 1:].split(":", 1)[1].rsplit(":", 1)[0] for i in wanted}
    out = {}
    for name, found in sites(repo, root, rules, files).items():
        for key, src, edit in found:
            if key in wanted:
                mutant = _mutant(repo, by_name[name], key, src, edit)
                if mutant is not None:
                    out[key] = mutant
    return out
