"""What every offline wrapper needs: stub modules for absent optional imports, and runpy.

Kept free of torch and dgl imports so a wrapper can install its stubs before the corpus code
(or anything it imports) runs.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
import threading
import types
from pathlib import Path
from typing import Iterable, Optional, Sequence


class _Anything(type):
    """A class whose every attribute, call and subclass is another such class: enough for code
    that only touches a stubbed library at import time (enum members, decorators, base classes)."""

    def __getattr__(cls, name: str) -> "_Anything":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (), {})

    def __call__(cls, *args: object, **kwargs: object) -> "_Anything":
        return _Anything(cls.__name__, (), {})

    def __iter__(cls):
        return iter(())

    def __bool__(cls) -> bool:
        return False


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (), {})


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves every module under the given top-level names, only when they are not installed."""

    def __init__(self, roots: set[str]) -> None:
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[override]
        if fullname.split(".")[0] not in self.roots:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):  # type: ignore[override]
        module = _StubModule(spec.name)
        module.__path__ = []  # a package, so any submodule import resolves through this finder
        return module

    def exec_module(self, module) -> None:  # type: ignore[override]
        pass


def stub_missing(names: Iterable[str]) -> list[str]:
    """Stub those of ``names`` (top-level modules) that are not installed; the stubbed ones."""
    missing = {n for n in names if importlib.util.find_spec(n) is None}
    if missing:
        sys.meta_path.append(_StubFinder(missing))
    return sorted(missing)


def provide(fullname: str, **attrs: object) -> types.ModuleType:
    """Module ``fullname`` (parents included, created empty when absent) with ``attrs`` set:
    the synthetic dataset classes a script imports from a library the venv does not have."""
    parts = fullname.split(".")
    parent = None
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        module = sys.modules.get(name)
        if module is None:
            module = types.ModuleType(name)
            module.__path__ = []
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, parts[i - 1], module)
        parent = module
    for key, value in attrs.items():
        setattr(parent, key, value)
    return parent


LINES_ENV = "GM_ECOSYSTEM_LINES"


class _LineRecorder:
    """The lines of code under ``root`` that the run executed: where a mutant can show. A code
    object is traced only until each of its lines has run once (a step's loop soon runs no
    traced line), and code outside ``root`` is never traced, so the bare run stays close to
    its normal speed."""

    def __init__(self, root: Path) -> None:
        self.root = str(root) + os.sep
        self.todo: dict[object, Optional[set[int]]] = {}  # code -> its lines not yet run
        self.lines: dict[str, set[int]] = {}

    def __call__(self, frame: types.FrameType, event: str, arg: object):
        code = frame.f_code
        todo = self.todo.get(code, False)
        if todo is False:
            todo = None
            if code.co_filename.startswith(self.root):
                todo = {n for _, _, n in code.co_lines() if n}
            self.todo[code] = todo
        if not todo:
            return None
        ran = self.lines.setdefault(code.co_filename[len(self.root):].replace(os.sep, "/"), set())

        def local(frame: types.FrameType, event: str, arg: object):
            if event == "line" and frame.f_lineno in todo:
                todo.discard(frame.f_lineno)
                ran.add(frame.f_lineno)
            return local if todo else None

        ran.add(frame.f_lineno)  # the def line (or the first line) of a call that happened
        return local

    def write(self, dest: str) -> None:
        sys.settrace(None)
        Path(dest).write_text(json.dumps({k: sorted(v) for k, v in self.lines.items()}),
                              encoding="utf-8")


def run_script(folder: Path, script: str, argv: Sequence[str], extra_path: Sequence[Path] = ()) -> None:
    """Run ``folder/script`` as ``__main__`` from its own folder, as ``python script argv``.

    With ``GM_ECOSYSTEM_LINES`` set, the lines the run executed under the current directory
    (the corpus copy) are written there as JSON at exit."""
    if os.environ.get(LINES_ENV):
        recorder = _LineRecorder(Path.cwd().resolve())
        atexit.register(recorder.write, os.environ[LINES_ENV])
        sys.settrace(recorder)
        threading.settrace(recorder)
    os.chdir(folder)
    sys.argv = [script, *argv]
    # the script's folder first, as python puts it for a script; the wrapper's own folder out
    sys.path[0] = str(folder)
    sys.path[1:1] = [str(p) for p in extra_path]
    runpy.run_path(str(folder / script), run_name="__main__")
