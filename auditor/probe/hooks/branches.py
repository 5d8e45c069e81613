"""Watched lines this run will not reach, so that ``--steps auto`` does not wait for them.

A watched line (a static finding) is ``untaken`` when, while the program runs, one of these holds:

- **no caller imported**: the static pass names the files whose module code leads to the line's
  function by calls (``reach``, from ``gm-audit probe``), and this run has imported none of them
  (a loader only another entry point calls);
- **branch decided false**: the line sits in an arm of an ``if`` whose test is decided for the
  rest of the run. A frame of the function holding the ``if`` is live now, and the function runs
  once per run (each user frame from it out to a module body calls it from outside any loop;
  a library frame in between may call it again: undecided). Every name of the test is bound in
  that frame and nothing stores it again before the test runs (each store lies before the frame's
  current line and not in a loop around it; no ``global``/``nonlocal``; no attribute store of the
  same chain in the file). The test is names, attributes, constants, comparisons, ``not`` and
  ``and``/``or`` only, evaluated in the frame, and selects the other arm. Attributes are read
  only from records of values (parsed arguments, namespaces, modules, dataclasses, configuration
  trees): a library's object, such as a checkpoint callback, changes as the library runs.

Loaded by file path into the probed program (like the hooks): it imports nothing of gm-audit.
A line that runs after all is judged like any other: ``untaken`` only ever applies to a line
that never ran.
"""

from __future__ import annotations

import ast
import os
import sys
import types

_PURE = (ast.Expression, ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp,
         ast.UnaryOp, ast.Load, ast.And, ast.Or, ast.Not, ast.Eq, ast.NotEq, ast.Is, ast.IsNot,
         ast.In, ast.NotIn, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Tuple)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Scope:
    """A function (or the module body) of a source file: its stores, loops and ``if`` arms."""

    def __init__(self, node: ast.AST, module: bool) -> None:
        self.node = node
        self.module = module
        self.name = "<module>" if module else node.name  # type: ignore[attr-defined]
        self.first = (0 if module else min([node.lineno]  # type: ignore[attr-defined]
                                           + [d.lineno for d in node.decorator_list]))  # type: ignore[attr-defined]
        self.stores: dict[str, list[int]] = {}
        self.loops: list[tuple[int, int]] = []
        self.declared: set[str] = set()  # global / nonlocal
        if not module:
            args = node.args  # type: ignore[attr-defined]
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None:
                    self.stores.setdefault(a.arg, []).append(node.lineno)  # type: ignore[attr-defined]
        for child in self._own_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                self.stores.setdefault(child.id, []).append(child.lineno)
            elif isinstance(child, ast.alias):
                name = (child.asname or child.name).split(".")[0]
                self.stores.setdefault(name, []).append(getattr(child, "lineno", 0) or self.first)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                self.stores.setdefault(child.name, []).append(child.lineno)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                self.declared.update(child.names)
            elif isinstance(child, _LOOPS):
                self.loops.append((child.lineno, child.end_lineno or child.lineno))

    @staticmethod
    def _own_nodes(node: ast.AST):
        """The nodes of this scope, not those of functions and classes defined in it."""
        todo = list(ast.iter_child_nodes(node))
        while todo:
            child = todo.pop()
            yield child
            if not isinstance(child, (*_FUNCS, ast.ClassDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(child))

    def in_loop(self, line: int) -> bool:
        return any(a <= line <= b for a, b in self.loops)

    def stable(self, name: str, now: int) -> bool:
        """Nothing stores ``name`` again in this scope once the frame is past line ``now``."""
        if name in self.declared:
            return False
        return all(s < now and not any(a <= s <= b and a <= now <= b for a, b in self.loops)
                   for s in self.stores.get(name, ()))


class _Source:
    """One watched file, parsed once: the scope and the enclosing ``if`` arms of each line."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            self.tree = ast.parse(fh.read())
        self.scopes: dict[int, _Scope] = {}
        self.module = self.scope(self.tree)
        self.around: dict[int, tuple] = {}  # line -> enclosing(line)
        self.by_code: dict[tuple, "_Scope | None"] = {}  # (name, first line) -> scope
        self.attr_stores = {ast.unparse(n) for n in ast.walk(self.tree)
                            if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del))}
        self.globals_declared = {name for n in ast.walk(self.tree) if isinstance(n, ast.Global)
                                 for name in n.names}

    def scope(self, node: ast.AST) -> _Scope:
        found = self.scopes.get(id(node))
        if found is None:
            found = self.scopes[id(node)] = _Scope(node, node is self.tree)
        return found

    def enclosing(self, line: int) -> tuple[_Scope, list[tuple[ast.If, bool]]]:
        """The innermost scope holding ``line`` and the ``if`` arms around it in that scope
        (the ``if``, True for its body / False for its ``else``), outermost first."""
        if line not in self.around:
            self.around[line] = self._enclosing(line)
        return self.around[line]

    def _enclosing(self, line: int) -> tuple[_Scope, list[tuple[ast.If, bool]]]:
        scope_node: ast.AST = self.tree
        arms: list[tuple[ast.If, bool]] = []
        for node in self._path(line):
            if isinstance(node, _FUNCS):
                scope_node, arms = node, []
            elif isinstance(node, ast.If) and node.body:
                if node.body[0].lineno <= line <= (node.body[-1].end_lineno or 0):
                    arms.append((node, True))
                elif node.orelse and node.orelse[0].lineno <= line:
                    arms.append((node, False))
        return self.scope(scope_node), arms

    def _path(self, line: int):
        """The nodes from the module down to the innermost statement holding ``line``."""
        node: ast.AST = self.tree
        while True:
            for child in ast.iter_child_nodes(node):
                start = min([getattr(child, "lineno", 0)]
                            + [d.lineno for d in getattr(child, "decorator_list", [])])
                if start and start <= line <= (getattr(child, "end_lineno", None) or start):
                    yield child
                    node = child
                    break
            else:
                return

    def scope_of_code(self, code) -> "_Scope | None":
        """The scope a code object runs (by name and first line)."""
        if code.co_name == "<module>":
            return self.module
        key = (code.co_name, code.co_firstlineno)
        if key not in self.by_code:
            self.by_code[key] = next(
                (self.scope(n) for n in ast.walk(self.tree) if isinstance(n, _FUNCS)
                 and n.name == code.co_name and self.scope(n).first == code.co_firstlineno), None)
        return self.by_code[key]


class Branches:
    """The ``untaken`` decisions of one process (``rec.untaken``: (path, line) -> reason)."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.sources: dict[str, "_Source | None"] = {}
        self.imported: set[str] = set()
        self.modules_seen = -1

    def source(self, rel: str) -> "_Source | None":
        if rel not in self.sources:
            try:
                self.sources[rel] = _Source(os.path.join(self.rec.cwd, rel))
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                self.sources[rel] = None
        return self.sources[rel]

    def imported_files(self) -> set[str]:
        """User files this process imported (or runs as ``__main__``)."""
        if len(sys.modules) != self.modules_seen:
            self.modules_seen = len(sys.modules)
            for module in list(sys.modules.values()):
                path = getattr(module, "__file__", None)
                rel = self.rec.rel(path) if isinstance(path, str) else None
                if rel is not None:
                    self.imported.add(rel)
        return self.imported

    def decide(self, spans, frame) -> None:
        """Record in ``rec.untaken`` the spans (path, line, end) that this run will not reach;
        ``frame``: where the program is now (the user's frames are above it)."""
        live = self.live_frames(frame)
        for span in spans:
            if span not in self.rec.untaken:
                why = self.why_untaken(span, live)
                if why:
                    self.rec.untaken[span] = why

    def why_untaken(self, span, live) -> "str | None":
        """No imported file's calls lead to the span; its own branch is decided false; or every
        line that calls its function is in a branch decided false (one level of callers)."""
        reach = self.rec.reach.get(span) or {}
        files = reach.get("files") or []
        if files and not (set(files) & self.imported_files()):
            return f"no call from the code this run imported reaches it (only from {', '.join(files[:3])})"
        why = self.branch_not_taken(span, live)
        if why or not files or not reach.get("calls"):
            return why
        whys = [self.branch_not_taken((p, n, n), live) for p, n in reach["calls"]]
        if all(whys):
            return f"each call of its function is {whys[0]}"
        return None

    def live_frames(self, frame) -> list:
        out = []
        while frame is not None:
            out.append(frame)
            frame = frame.f_back
        return out

    def branch_not_taken(self, span, live) -> "str | None":
        path, line, _end = span
        src = self.source(path)
        if src is None:
            return None
        scope, arms = src.enclosing(line)
        if not arms:
            return None
        for i, frame in enumerate(live):
            code = frame.f_code
            if code.co_name != scope.name or self.rec.rel(code.co_filename) != path \
                    or (not scope.module and code.co_firstlineno != scope.first):
                continue
            if not self.runs_once(live[i:]):
                return None
            for test, body in arms:
                value = self.evaluate(src, scope, test.test, frame)
                if value is not None and value != body:
                    return (f"in a branch this run does not take: `{ast.unparse(test.test)}` is "
                            f"{value} at {path}:{frame.f_lineno} ({scope.name}, run once), "
                            f"for the rest of the run")
            return None
        return None

    def runs_once(self, frames) -> bool:
        """The first of ``frames`` is not called again in this run: each user frame from it out
        to the first module body calls the next inner one from outside any loop."""
        for k, frame in enumerate(frames):
            rel = self.rec.rel(frame.f_code.co_filename)
            if rel is None:
                return False  # a library may call it again (a trainer's loop)
            src = self.source(rel)
            scope = src.scope_of_code(frame.f_code) if src is not None else None
            if scope is None:
                return False
            if scope.module:
                return not (k and scope.in_loop(frame.f_lineno))
            if k and scope.in_loop(frame.f_lineno):
                return False
        return False

    def evaluate(self, src: _Source, scope: _Scope, test: ast.expr, frame) -> "bool | None":
        """The test's truth in ``frame`` when it is pure and its names stable; else None."""
        expr = ast.Expression(test)
        if not all(isinstance(n, _PURE) for n in ast.walk(expr)):
            return None
        for n in ast.walk(test):
            if isinstance(n, ast.Attribute) and ast.unparse(n) in src.attr_stores:
                return None
            if isinstance(n, ast.Name):
                local = n.id in scope.stores
                if (local and not scope.stable(n.id, frame.f_lineno)) or (
                        not local and n.id in src.globals_declared):
                    return None
        names = dict(frame.f_locals)
        try:
            # innermost attribute first: each object read from must be a record of values
            for n in reversed([n for n in ast.walk(test) if isinstance(n, ast.Attribute)]):
                base = eval(compile(ast.Expression(n.value), "<gm-audit branch>", "eval"),  # noqa: S307
                            frame.f_globals, names)
                if not _record(base):
                    return None
            value = eval(compile(expr, "<gm-audit branch>", "eval"),  # noqa: S307 (pure, checked)
                         frame.f_globals, names)
            if not isinstance(value, (bool, int, float, str, type(None), tuple)):
                return None
            return bool(value)
        except Exception:
            return None


_RECORD_MODULES = ("argparse", "types", "omegaconf")


def _record(obj) -> bool:
    """An object whose attributes are plain values that only assignments change: parsed
    arguments, a namespace, a module, a dataclass, a configuration tree. A library's working
    object (a checkpoint callback, a trainer) changes its attributes as the library runs, and
    reading a property may run code."""
    cls = type(obj)
    if isinstance(obj, types.ModuleType) or hasattr(cls, "__dataclass_fields__"):
        return True
    return (getattr(cls, "__module__", "") or "").split(".")[0] in _RECORD_MODULES


def install(rec) -> Branches:
    return Branches(rec)
