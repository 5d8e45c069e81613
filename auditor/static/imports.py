"""Where an import leads, decided per importing file the way Python's import system would.

Every file is its own module, named by its path (:func:`module_identity`): ``exp1/layers.py`` and
``exp2/layers.py`` are two modules even though both scripts import them as ``layers``. An absolute
import is looked up along the importing file's search path (:meth:`Layout.search_path`), in the
order CPython builds ``sys.path`` for the program that runs it:

1. the script's own folder (``sys.path[0]``): the file's folder when it is not inside a package,
   or when it is run as a script itself (``if __name__ == "__main__"``);
2. the package root: the folder above the file's top ``__init__.py``;
3. the folders above it up to the checked tree's root, each with its ``src/`` (``python -m`` from
   there, ``PYTHONPATH=.``, an editable ``src`` layout install);
4. the roots of the other top-level packages of the tree and the folders holding a ``setup.py``
   (packages a monorepo installs).

Within a folder a regular package or a module wins at once; namespace-package portions (folders
without ``__init__.py``) are merged, as PEP 420 says. Relative imports are resolved while the file
is read (they need only its own name); this module only answers absolute ones. Everything here is
computed from the list of files, so per-file facts stay cacheable on their own content.
"""

from __future__ import annotations

import ast
import os
import posixpath
from pathlib import Path
from typing import Iterable, Iterator, Optional

from auditor.static.context import resolve_relative
from auditor.static.facts import FileFacts

UP = "__up__"  # a `..` segment of a path outside the checked folder


def module_identity(path: str) -> str:
    """The unique dotted name of the module a file is: its relative POSIX path, dotted
    (``exp1/layers.py`` -> ``exp1.layers``, ``pkg/__init__.py`` -> ``pkg``). Dots inside a folder
    name (``v1.0/``) become ``_`` so that the name splits back into its folders."""
    path = posixpath.normpath(path)
    stem = path[:-3] if path.endswith(".py") else path
    parts = [UP if p == ".." else p.replace(".", "_") for p in stem.split("/") if p not in ("", ".")]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or "__init__"


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _parent(folder: str) -> str:
    """The folder above (``..`` segments above the checked folder)."""
    if not folder:
        return ".."
    if folder == ".." or folder.endswith("/.."):
        return f"{folder}/.."
    return posixpath.dirname(folder)


class Layout:
    """The checked tree's Python files (relative POSIX paths) and the lookups imports need."""

    def __init__(self, paths: Iterable[str], cwd: Optional[str] = None) -> None:
        self.files = {posixpath.normpath(p) for p in paths if p.endswith(".py")}
        self.dirs: set[str] = set()
        for path in self.files:
            folder = posixpath.dirname(path)
            while folder not in self.dirs and folder != ".." and not folder.endswith("/.."):
                self.dirs.add(folder)
                folder = _parent(folder)
        self._cwd = cwd or os.getcwd()  # what the relative paths start from
        self._above: dict[str, bool] = {}
        self._paths: dict[tuple[str, bool], tuple[str, ...]] = {}
        self._found: dict[tuple[tuple[str, ...], str], Optional[str]] = {}
        self._package_roots = self._top_package_roots()

    def is_package(self, folder: str) -> bool:
        if _join(folder, "__init__.py") in self.files:
            return True
        if folder != ".." and not folder.endswith("/.."):
            return False
        # above the checked folder (checking a package from inside it): ask the file system
        known = self._above.get(folder)
        if known is None:
            known = self._above[folder] = os.path.isfile(os.path.join(self._cwd, folder, "__init__.py"))
        return known

    def package_root(self, folder: str) -> str:
        """The folder above the top package holding ``folder`` (``folder`` itself if none)."""
        while self.is_package(folder):
            folder = _parent(folder)
        return folder

    def _top_package_roots(self) -> list[str]:
        """Where the tree's packages install from: the folder above each top package, and
        each folder holding a ``setup.py`` (its packages may sit in a folder that is itself a
        package of the repository, as ``python/dgllife`` with a ``python/__init__.py``)."""
        roots = {self.package_root(d) for d in self.dirs if self.is_package(d)}
        roots |= {posixpath.dirname(p) for p in self.files if posixpath.basename(p) == "setup.py"}
        return sorted(roots, key=lambda r: (r.count("/") + bool(r), r))

    def search_path(self, path: str, runs_as_script: bool = False) -> tuple[str, ...]:
        """The folders an absolute import in the file at ``path`` is looked up in, in order."""
        folder = posixpath.dirname(posixpath.normpath(path))
        key = (folder, runs_as_script)
        found = self._paths.get(key)
        if found is not None:
            return found
        order: list[str] = []
        if runs_as_script or not self.is_package(folder):
            order.append(folder)
        root = self.package_root(folder)
        order.append(root)
        above = root
        while above in self.dirs:  # the folders above, within the checked tree
            src = _join(above, "src")
            if src in self.dirs and not self.is_package(src):
                order.append(src)
            if not above:
                break
            above = _parent(above)
            order.append(above)
        order += self._package_roots
        found = tuple(dict.fromkeys(order))
        self._paths[key] = found
        return found

    def resolve(self, name: str, search_path: tuple[str, ...]) -> Optional[str]:
        """``layers.GraphMAE`` -> ``exp1.layers.GraphMAE`` (the module's identity and the rest of
        the name), or None when no file of the tree is that module (``torch.nn``)."""
        key = (search_path, name)
        if key in self._found:
            return self._found[key]
        parts = name.split(".")
        answer: Optional[str] = None
        portions: list[tuple[int, str]] = []
        for folder in search_path:
            located = self._locate(folder, parts)
            if located is None:
                continue
            consumed, where, namespace = located
            if not namespace:
                answer = self._name(where, parts[consumed:])
                break
            portions.append((consumed, where))
        if answer is None and portions:  # PEP 420: the portion that holds the submodule
            consumed, where = max(portions, key=lambda p: p[0])
            answer = self._name(where, parts[consumed:])
        self._found[key] = answer
        return answer

    def _locate(self, folder: str, parts: list[str]) -> Optional[tuple[int, str, bool]]:
        """How many leading parts name a module or package under ``folder``: (count, the file or
        folder reached, whether the first part is only a namespace portion)."""
        consumed, where, namespace = 0, "", False
        for i, part in enumerate(parts):
            below = self._inside(_join(folder, part))
            if self.is_package(below):
                folder = where = below
            elif below + ".py" in self.files:
                consumed, where = i + 1, below + ".py"
                break
            elif below in self.dirs:
                folder = where = below
                namespace = namespace or i == 0
            else:
                break
            consumed = i + 1
        return (consumed, where, namespace) if consumed else None

    def _inside(self, path: str) -> str:
        """``../pkg/x`` is ``x`` when the checked folder is ``pkg``: one spelling per file."""
        if not path.startswith(".."):
            return path
        full = os.path.normpath(os.path.join(self._cwd, path))
        rel = Path(os.path.relpath(full, self._cwd)).as_posix()
        return "" if rel == "." else rel

    @staticmethod
    def _name(where: str, rest: list[str]) -> str:
        return ".".join([module_identity(where), *rest])


_FALLBACK_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception")


def outline(tree: ast.Module, facts: FileFacts) -> FileFacts:
    """What programs need of a file the prefilter skipped, from the ``ast`` tree its syntax
    check already built: its imports (module level, and in ``if``/``try``/``with`` blocks there;
    not those inside functions), ``__all__``, the ``__main__`` guard, module-level calls."""

    def bind(alias: str, qualified: str, fallback: bool) -> None:
        if fallback and alias in facts.imports:
            facts.import_fallbacks.setdefault(alias, qualified)
        else:
            facts.imports[alias] = qualified

    # the blocks still to read, innermost last: a stack, not recursion (a thousand `elif` nest
    # a thousand deep); each block is read in order, and before the rest of the one around it
    blocks: list[tuple[Iterator[ast.stmt], bool]] = [(iter(tree.body), False)]
    while blocks:
        body, fallback = blocks[-1]
        stmt = next(body, None)
        if stmt is None:
            blocks.pop()
            continue
        inner: list[tuple[list[ast.stmt], bool]] = []
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                bind(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0],
                     fallback)
                if not a.asname and "." in a.name:
                    facts.submodules.append(a.name)
        elif isinstance(stmt, ast.ImportFrom):
            base = (resolve_relative(facts.module, facts.path, stmt.level, stmt.module)
                    if stmt.level else stmt.module or "")
            for a in stmt.names:
                if a.name == "*":
                    facts.star_imports.append(base)
                    if stmt.level:
                        facts.local_imports.append(base)
                    continue
                qualified = f"{base}.{a.name}" if base else a.name
                bind(a.asname or a.name, qualified, fallback)
                if stmt.level:
                    facts.local_imports.append(qualified)
        elif isinstance(stmt, ast.If):
            if _is_main_test(stmt.test):
                facts.runs_as_script = True
            inner = [(stmt.body, fallback), (stmt.orelse, fallback)]
        elif isinstance(stmt, ast.Try):
            inner = [(stmt.body, fallback)]
            for handler in stmt.handlers:
                caught = handler.type
                names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                inner.append((handler.body, caught is None or any(
                    isinstance(n, ast.Name) and n.id in _FALLBACK_ERRORS for n in names)))
            inner += [(stmt.orelse, fallback), (stmt.finalbody, fallback)]
        elif isinstance(stmt, (ast.With, ast.For, ast.While)):
            inner = [(stmt.body, fallback)]
        elif isinstance(stmt, ast.Assign):
            if (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id == "__all__" and isinstance(stmt.value, (ast.List, ast.Tuple))):
                facts.exports = [e.value for e in stmt.value.elts
                                 if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if not facts.top_level_calls and isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign)):
            facts.top_level_calls = any(isinstance(n, ast.Call) for n in ast.walk(stmt))
        blocks += [(iter(b), f) for b, f in reversed(inner)]
    return facts


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))
