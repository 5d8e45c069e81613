"""Programs: what runs together. Each entry point of the tree and the modules its imports reach.

Entry points are the ways Python starts running a tree's code:

* a script: a file with an ``if __name__ == "__main__":`` block, or one no other file imports
  whose module body calls something (research scripts rarely have the guard);
* ``python -m pkg``: a package's ``__main__.py``;
* a console script declared in ``pyproject.toml`` (``[project.scripts]``), ``setup.cfg``
  (``[options.entry_points] console_scripts``) or ``setup.py`` (``console_scripts=[...]``);
* a test module (``test_*.py``, ``*_test.py``), run by pytest.

A program is the import closure of its entry point: the files a chain of (resolved) imports
reaches, with the ``__init__.py`` of every package on the way, since Python runs those too. A file
that no entry point reaches is library code: its own import closure is its program, so facts
about it are never joined with those of an unrelated script.

Files the prefilter skipped are members of a program when an import reaches them; their own
imports are followed once they are analysed (rules load them on demand).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import FileFacts, FunctionInfo
from auditor.static.imports import Layout
from auditor.static.reading import MAX_FILE_BYTES, read_source
from auditor.toml_file import TomlError, read_toml, subtable

if TYPE_CHECKING:
    from auditor.static.project import Project

SCRIPT, MAIN_MODULE, CONSOLE, TEST, LIBRARY = "script", "main-module", "console-script", "test", "library"
_CONSOLE_SPEC = re.compile(r"""["']\s*([\w.-]+)\s*=\s*([\w.]+)\s*:\s*([\w.]+)\s*["']""")


@dataclass(frozen=True)
class Program:
    entry: str  # path of the file that starts it
    kind: str  # SCRIPT | MAIN_MODULE | CONSOLE | TEST | LIBRARY
    files: frozenset[str]  # paths of every module it imports, the entry included
    roots: tuple[str, ...]  # qualnames where it starts running: module bodies, the console function


def imported_paths(project: "Project", path: str) -> set[str]:
    """Files the module at ``path`` imports (packages on the way included)."""
    facts = project.files.get(path) or project.outlines.get(path)
    if facts is None:
        return set()
    out: set[str] = set()
    for name in [*facts.imports.values(), *facts.star_imports, *facts.submodules]:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # `a.b.c` runs a/__init__, a/b/__init__, a/b/c
            found = project.module_paths.get(".".join(parts[:i]))
            if found is not None and found != path:
                out.add(found)
    return out


def closure(imports: dict[str, set[str]], start: str) -> frozenset[str]:
    """``start`` and every file a chain of its imports reaches (``imports``: path -> imported)."""
    seen, todo = {start}, [start]
    while todo:
        for nxt in imports.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


def _is_test(path: str) -> bool:
    name = posixpath.basename(path)
    return name.startswith("test_") or name.endswith("_test.py")


def is_test_path(path: str) -> bool:
    """A file of a test suite: under a tests/ folder, or named like a test module."""
    return any(p in ("tests", "test", "testing") for p in path.split("/")[:-1]) or _is_test(path)


def is_test_code(fn: FunctionInfo) -> bool:
    """``fn`` belongs to a test suite: a ``test*`` function, a method of a ``Test*`` class, code
    in a file under a tests/ folder or named like a test module. Its fixed seeds and its draws
    serve the test's own fixtures, not a run that must reproduce."""
    owner = fn.class_name.rsplit(".", 1)[-1]
    return (fn.name.startswith("test") or owner.startswith("Test") or owner.endswith("Test")
            or is_test_path(fn.path))


def _test_functions(facts: FileFacts) -> tuple[str, ...]:
    """What pytest runs in a test module: ``test*`` functions and ``Test*`` classes' methods."""
    out = []
    for qual, fn in facts.functions.items():
        owner = fn.class_name.rsplit(".", 1)[-1]
        if fn.name.startswith("test") and (
            qual == f"{facts.module}.{fn.name}"
            or (owner.startswith("Test") and qual == f"{fn.class_name}.{fn.name}")
        ):
            out.append(qual)
    return tuple(out)


def console_scripts(layout: Layout, root: Path) -> Iterator[tuple[str, str, str]]:
    """(folder, module, function) of every console script the tree's packaging declares."""
    folders = {""} | {posixpath.dirname(p) for p in layout.files if posixpath.basename(p) == "setup.py"}
    for folder in sorted(folders):
        base = root / folder
        for module, func in _declared(base):
            yield folder, module, func


def _packaging_text(path: Path) -> str:
    """A packaging file's text, read as untrusted input ("" where it cannot be: missing, not a
    regular file, too large)."""
    try:
        data = read_source(path)
    except OSError:
        return ""
    return "" if len(data) > MAX_FILE_BYTES else data.decode("utf-8", errors="replace")


def _declared(base: Path) -> Iterator[tuple[str, str]]:
    """The console scripts declared in ``base``. Packaging metadata is not gm-audit's to judge:
    what is malformed there (``project = 5``, TOML nested past the parser's depth) declares
    nothing, and the rest of the tree is checked as before."""
    try:
        scripts = subtable(read_toml(base / "pyproject.toml"), "project.scripts")
    except (OSError, TomlError):
        scripts = {}
    for spec in scripts.values():
        if isinstance(spec, str) and ":" in spec:
            module, _, func = spec.partition(":")
            yield module.strip(), func.strip()
    text = _packaging_text(base / "setup.cfg")
    if text:
        import configparser  # only a tree with a setup.cfg pays for it

        parser = configparser.ConfigParser()
        try:
            parser.read_string(text)
            text = parser.get("options.entry_points", "console_scripts", fallback="")
        except configparser.Error:
            text = ""
        for line in text.splitlines():
            _, _, spec = line.partition("=")
            if ":" in spec:
                module, _, func = spec.partition(":")
                yield module.strip(), func.strip()
    text = _packaging_text(base / "setup.py")
    if "console_scripts" in text:
        for _, module, func in _CONSOLE_SPEC.findall(text):
            yield module, func


def import_graph(project: "Project") -> dict[str, set[str]]:
    """path -> the files its imports reach, for every file (skipped ones by their outline)."""
    return {path: imported_paths(project, path) for path in [*project.outlines, *project.files]}


def entry_programs(project: "Project", imports: dict[str, set[str]], root: Path) -> list[Program]:
    """Every program of the tree that an entry point starts."""
    imported = set().union(*imports.values()) if imports else set()
    out: list[Program] = []
    for path, facts in sorted({**project.outlines, **project.files}.items()):
        if _is_test(path):
            kind = TEST
        elif posixpath.basename(path) == "__main__.py":
            kind = MAIN_MODULE
        elif facts.runs_as_script or (path not in imported and not path.endswith("__init__.py")
                                      and facts.top_level_calls):
            kind = SCRIPT
        else:
            continue
        out.append(_program(project, imports, path, kind, _test_functions(facts) if kind == TEST else ()))
    for folder, module, func in console_scripts(project.layout, root or Path.cwd()):
        search = (folder, posixpath.join(folder, "src") if folder else "src", *project.layout.search_path(
            posixpath.join(folder, "setup.py")))
        target = project.layout.resolve(module, tuple(search))
        path = project.module_paths.get(target or "")
        if path is not None:
            out.append(_program(project, imports, path, CONSOLE, (f"{target}.{func}",)))
    return out


def _program(project: "Project", imports: dict[str, set[str]], path: str, kind: str,
             extra: tuple[str, ...]) -> Program:
    files = closure(imports, path)
    bodies = tuple(f"{facts.module}.{MODULE_SCOPE}" for p in sorted(files)
                   for facts in [project.files.get(p) or project.outlines.get(p)] if facts is not None)
    return Program(path, kind, files, (*extra, *bodies))


def programs_with(programs: Iterable[Program], project: "Project", imports: dict[str, set[str]],
                  path: str) -> list[Program]:
    """The programs that run the file at ``path``; library code: its own closure."""
    found = [p for p in programs if path in p.files]
    return found or [_program(project, imports, path, LIBRARY, ())]


# methods Python calls on an object without a call of them by name: indexing and iterating a
# dataset (a DataLoader does it), calling a transform or a module (`nn.Module.__call__` runs
# `forward`), `len(...)`
PROTOCOL_METHODS = ("__getitem__", "__iter__", "__next__", "__len__", "__call__", "forward")


def runs(project: "Project", roots: Iterable[str]) -> set[str]:
    """The functions a program runs: what calls from ``roots`` reach, the protocol methods of
    every project class it builds (a dataset's ``__getitem__`` runs when its loader is
    iterated) and the functions it hands to a call by name (``mp.spawn(main)``,
    ``Process(target=worker)``, ``DataLoader(collate_fn=collate)``), with what those reach in
    turn."""
    seen = project.reachable_from_all(roots)
    todo = list(seen)
    while todo:
        qualname = todo.pop()
        starts = _started_by(project, qualname)
        for qual in project.reachable_from_all(q for q in starts if q not in seen) - seen:
            seen.add(qual)
            todo.append(qual)
    return seen


def _started_by(project: "Project", qualname: str) -> list[str]:
    """What the function ``qualname`` runs besides its calls: the protocol methods of the
    classes it builds and the functions it hands over. Kept while the project holds the same
    functions and classes: every program asks again about the functions they share."""
    memo = project.memo("programs.started_by")
    key = (qualname, len(project.functions), len(project.classes))
    if key not in memo:
        memo[key] = [m for cls in _built_classes(project, qualname) for name in PROTOCOL_METHODS
                     for m in project.method_candidates(cls, name) if m in project.functions]
        memo[key] += _handed_over(project, qualname)
    return memo[key]


def _handed_over(project: "Project", qualname: str) -> list[str]:
    """Project functions the function ``qualname`` passes by name as a call's argument: a
    callback the callee runs (a process target, a collate function, a hook)."""
    fn = project.functions.get(qualname)
    facts = project.files.get(fn.path) if fn is not None else None
    out: list[str] = []
    for event in fn.events if facts is not None else ():
        if event.kind != "call":
            continue
        for arg in [*event.args, *event.kwargs.values()]:
            if arg.startswith("self.") and fn.class_name and arg[5:].isidentifier():
                out += project.method_candidates(fn.class_name, arg[5:])
            elif arg.isidentifier() and arg not in fn.params:
                qual = facts.imports.get(arg) or f"{fn.module}.{arg}"
                out += [f"{fn.qualname}.{arg}", qual, project.reexported(qual) or qual]
    return [q for q in dict.fromkeys(out) if q in project.functions]


def _built_classes(project: "Project", qualname: str) -> set[str]:
    """Project classes whose constructor the function ``qualname`` calls."""
    fn = project.functions.get(qualname)
    out: set[str] = set()
    for event in fn.events if fn is not None else ():
        if event.kind != "call":
            continue
        func = event.func.removesuffix("()")
        cls = func if func in project.classes else project.reexported(func) if "." in func else None
        if cls in project.classes:
            out.add(cls)
    return out
