"""The project graph: every analysed file's functions, linked by calls, shared by all rules."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from auditor.static.callgraph import CallGraph
from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import Event, FileFacts, FunctionInfo, Span
from auditor.static.frameworks import add_framework_loops
from auditor.static.imports import Layout
from auditor.static.programs import LIBRARY, Program, entry_programs, import_graph, programs_with
from auditor.static.texts import container_items, dict_entries, loop_iterable, string_literal, top_level_items

# calls followed up from a parameter to what the callers pass: a trainer's ``self.model`` from
# ``Trainer(model)``, that ``model`` from ``main(model)``'s caller
MAX_PASSED = 2
# an argument that is a call (`Engine(make_step(model, opt))`): the callee as written
CALL_ARGUMENT = re.compile(r"([\w.]+)\(.*\)", re.S)
# a call of what a container holds under some key: `LOSSES[cfg["loss"]](pred, target)`
_LOOKUP = re.compile(r"([\w.]+)\[.+\]")
# what a call of ``functools.partial(f, ...)``'s result runs: ``f``
PARTIALS = ("functools.partial",)
# a `getattr(obj, name)(...)` whose object's class is unknown: at most this many methods so named
MAX_NAMED_METHODS = 16


# subclasses whose other bases are searched for a method a class's own code calls on `self`
MAX_COMPOSED = 8

def canonicalise(facts: FileFacts, layout: Layout) -> None:
    """Rewrite the names a file imports to the modules they reach from that file (in place):
    ``layers.GraphMAE`` in ``exp1/train.py`` is ``exp1.layers.GraphMAE``."""
    search = layout.search_path(facts.path, facts.runs_as_script)
    own = facts.module + "."
    local = tuple(facts.local_imports)
    # `try: import fast as m` / `except ImportError: import slow as m`: the `try` body's module
    # when the tree has it, else the fallback when the tree has that (the try body is an
    # optional third-party package the program does without)
    swap: dict[str, str] = {}
    for alias, fallback in facts.import_fallbacks.items():
        primary = facts.imports.get(alias, "")
        if layout.resolve(primary, search) is None and layout.resolve(fallback, search) is not None:
            swap[primary] = fallback
    # what the file's imports bind: a name is one of theirs only when it starts with one (a
    # local `model` in a file that does `from model import GCN` is no module)
    bound = [*facts.imports.values(), *facts.star_imports]

    def canon(name: str) -> str:
        if name.startswith(own) or not any(name == v or name.startswith(v + ".") for v in bound):
            return name
        for primary, fallback in swap.items():
            if name == primary or name.startswith(primary + "."):
                name = fallback + name[len(primary):]
                break
        if any(name == v or name.startswith(v + ".") for v in local):
            return name  # a relative import: already the module's identity
        return layout.resolve(name, search) or name

    facts.imports = {alias: canon(q) for alias, q in facts.imports.items()}
    facts.star_imports = [canon(m) for m in facts.star_imports]
    facts.submodules = [canon(m) for m in facts.submodules]
    for cls in facts.classes.values():
        cls.bases = [canon(b) for b in cls.bases]
        cls.decorators = [canon(d) for d in cls.decorators]
    for fn in facts.functions.values():
        fn.decorators = [canon(d) for d in fn.decorators]
        for event in fn.events:
            if event.kind == "call":
                event.func = canon(event.func)


# a copy of a container walked instead of the container: the same items
_COPIED = re.compile(r"(?:list|tuple|sorted|reversed)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_STORING = ("append", "add", "insert", "appendleft")


# the entries of a container a store reaches: `[k]`, and `.setdefault(k, {})` (which gives one)
_ENTRY = r"(?:\[[^\[\]]*\]|\.setdefault\([^()]*\))"
_ENTRIES_AT_END = re.compile(rf"{_ENTRY}+\s*$")
_LAST_ENTRY = re.compile(rf"{_ENTRY}*\[[^\[\]]*\]\s*")  # what follows a store's container


def _stored_item(event: Event, base: str) -> str:
    """What ``event`` puts into the container ``base`` (or into one of its entries):
    ``base.append(x)``, ``base[k].append(x)``, ``base[k] = x``,
    ``base.setdefault(kind, {})[k] = x``; "" for anything else."""
    if event.kind == "call" and event.method in _STORING and event.args \
            and _ENTRIES_AT_END.sub("", event.receiver) == base:
        return event.args[-1]
    if event.kind == "assign" and event.text.startswith((base + "[", base + ".setdefault(")):
        head, _, value = event.text.partition("=")
        if _LAST_ENTRY.fullmatch(head, len(base)):
            return value.strip()
    return ""


def _stores(event: Event) -> tuple[str, list[str]]:
    """The container ``event`` puts items in and those items (``LOSSES[name] = fn``: LOSSES,
    [fn]); ("", []) where it stores nothing."""
    if event.kind not in ("call", "assign") or event.kind == "call" and event.method not in _STORING:
        return "", []  # asked of every event of every module scope: most store nothing
    head = event.receiver if event.kind == "call" else event.text.split("=", 1)[0]
    base = _ENTRIES_AT_END.sub("", head.strip())
    if not re.fullmatch(r"[\w.]+", base):
        return "", []
    display = event.kind == "assign" and base == head.strip()
    stored = container_items(event.text.split("=", 1)[-1]) if display else [_stored_item(event, base)]
    return base, stored


def _returned_values(fn: FunctionInfo) -> list[tuple[str, int]]:
    """(the value as written, line) of each ``return`` of ``fn``."""
    return [(e.text.removeprefix("return").strip(), e.span.line) for e in fn.events if e.kind == "return"]


def _key(text: str) -> str:
    """A key as written, the same for ``Events.ITERATION_COMPLETED``, a filtered
    ``Events.ITERATION_COMPLETED(every=50)`` and the member read off another name for the enum
    (``events.ITERATION_COMPLETED``): a constant's member (an upper-case member, or one read
    off a class), or what a string literal spells, else "" (``cfg.loss`` is a value, not a key)."""
    text = re.sub(r"\(.*\)$", "", text.strip(), flags=re.S)
    if re.fullmatch(r"[A-Za-z_]\w*(\.\w+)+", text):
        member = text.rsplit(".", 1)[1]
        return member if member.isupper() or text[:1].isupper() else ""
    return string_literal(text)


def _keyed_param(fn: FunctionInfo) -> str:
    """The parameter ``fn`` looks a container up by, in a loop whose items it calls
    (``for h in list(self._handlers[event]):``) or in what it returns (``return
    REGISTRY[name]``), or ""."""
    for e in fn.events:
        walked = loop_iterable(e.text) if e.kind == "assign" else \
            e.text.removeprefix("return").strip() if e.kind == "return" else ""
        if not walked:
            continue
        copied = _COPIED.fullmatch(walked)
        looked_up = re.fullmatch(r"[\w.]+\[(\w+)\]", copied.group(1) if copied else walked)
        if looked_up and looked_up.group(1) in fn.positional:
            return looked_up.group(1)
    return ""


def _store_key(event: Event, base: str) -> str:
    """The key ``event`` stores under in ``base``: ``base[key].append(x)``, ``base[key] = x``."""
    head = event.receiver if event.kind == "call" else event.text.split("=", 1)[0].strip()
    found = re.match(re.escape(base) + r"\[([^\[\]]+)\]", head)
    return found.group(1).strip() if found else ""


class Project:
    """Functions by qualified name, classes, rule facts, and a call graph.

    Graph nodes are function qualnames; an edge ``caller -> callee`` carries the call events
    (``events`` attribute). Files the prefilter skipped are analysed on demand through
    ``loader`` when a call resolves into them, so cross-file facts are never silently missing.
    """

    def __init__(
        self,
        files: Iterable[FileFacts],
        skipped: Optional[dict[str, str]] = None,
        loader: Optional[Callable[[str], Optional[FileFacts]]] = None,
        layout: Optional[Layout] = None,
        outlines: Iterable[FileFacts] = (),
    ) -> None:
        # (function, name) -> what the name holds when the program finds it by configured names
        # (a plugin module's attribute): auditor/static/named_objects.py
        self._named: dict[tuple[str, str], list[str]] = {}
        self._named_instances: dict[tuple[str, str], list[str]] = {}
        self._handing: set[tuple[str, str]] = set()  # _handed_back's questions being answered
        self.files: dict[str, FileFacts] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, Any] = {}
        self.modules: dict[str, FileFacts] = {}
        self._roots: set[str] = set()  # top-level names of the project's modules
        self._skipped = dict(skipped or {})  # module name -> path, not yet analysed
        self._loader = loader
        self._mentioned: set[str] = set()
        self._texts: dict[str, Optional[str]] = {}
        # calls whose candidate callee is not (yet) known: linked when a lazy load defines it
        self._pending: dict[str, list[tuple[str, Event]]] = {}
        # memo tables: rules ask the same questions many times; a lazy load (new functions and
        # classes) bumps the generation and so invalidates the answers that depend on it
        self._generation = 0
        self._resolved: dict[int, tuple[int, list[str]]] = {}
        self._reexports: dict[tuple[str, int], tuple[int, bool, Optional[str]]] = {}
        self._returning: set[str] = set()  # factories whose returned callables are being read
        self._members: tuple[int, dict[str, list[str]]] = (0, {})  # (functions indexed, index)
        self._constructed: dict[str, dict[str, list[tuple[int, str]]]] = {}
        self._class_made: dict[str, dict[str, list[tuple[FunctionInfo, int, str]]]] = {}
        self._bound_by_loops: dict[str, frozenset[str]] = {}  # qualname -> names its loops bind
        self._not_skipped: set[str] = set()
        self._memos: dict[str, dict[str, Any]] = {}
        # a framework's method that runs a synthetic method of the instance handed to it
        # (auditor/static/frameworks.py): `pytorch_lightning.Trainer.fit` -> (`<fit>`, the
        # parameter whose argument is the instance: `model`)
        self.dispatch: dict[str, tuple[str, str]] = {}
        self.graph = CallGraph()
        # a function calling the method its parameter names -> that parameter; its copies by the
        # name a call passes; each copy's (parameter, name)  (see `copy_for`)
        self._dispatch_params: dict[str, str] = {}
        self._subclasses: tuple[int, dict[str, list[str]]] = (0, {})  # (classes indexed, base -> subclasses)
        self._copies: dict[str, dict[str, str]] = {}
        self._fixed: dict[str, tuple[str, str]] = {}
        # dispatchers that call what a container holds under the key their parameter names
        # (``for h in self._handlers[event]: h(self)``): their copies are by that key
        self._keyed: set[str] = set()
        files = list(files)
        # path -> what an analysis left unjudged there, and why (a cap that keeps it linear):
        # reported with the file, never dropped in silence
        self.truncated: dict[str, list[str]] = {}
        # every file of the tree, analysed or not: where imports can lead
        self.layout = layout or Layout([f.path for f in files] + list(self._skipped.values()))
        self.root = Path.cwd()  # what the files' relative paths start from (packaging files too)
        self.module_paths: dict[str, str] = {f.module: f.path for f in files}
        self.module_paths.update(self._skipped)
        self._programs: Optional[list[Program]] = None
        self._imports: dict[str, set[str]] = {}
        # skipped files' imports (auditor/static/imports.py:outline): what programs are made of
        self.outlines: dict[str, FileFacts] = {}
        for facts in outlines:
            canonicalise(facts, self.layout)
            self.outlines[facts.path] = facts
        for facts in files:
            self._add(facts)
        # Linking never loads skipped files (that would analyse half the tree for nothing);
        # a rule's own queries do, and `_pending` then adds the edges into what was loaded.
        self._loading = False
        self._link_all()
        # again, now that every constructor's callers are known: what a parameter or an
        # attribute bound from one holds comes from them (`self.model(g)` in a Trainer); no
        # other call can resolve differently
        self._generation += 1
        self._link_all(handed_only=True)
        self._loading = True
        add_framework_loops(self)

    def memo(self, owner: str) -> dict[str, Any]:
        """The table where the analysis ``owner`` (a module of auditor/static) keeps answers it
        computed over this project, for the project's lifetime; its keys are the owner's own."""
        return self._memos.setdefault(owner, {})

    def truncate(self, path: str, what: str) -> None:
        """A rule gave up on part of ``path``: ``what`` it left unjudged, and why."""
        self.truncated.setdefault(path, []).append(what)

    # -- building --------------------------------------------------------------------------------
    def _add(self, facts: FileFacts) -> None:
        canonicalise(facts, self.layout)
        self._generation += 1
        self._programs = None
        self.files[facts.path] = facts
        self.modules[facts.module] = facts
        self._roots.add(facts.module.split(".")[0])
        self.functions.update(facts.functions)
        self.classes.update(facts.classes)
        for qual, fn in facts.functions.items():
            param = next((e.args[1] for e in fn.events if e.kind == "call" and e.func == "getattr"
                          and len(e.args) >= 2 and e.args[1] in fn.positional), None)
            if param is not None:
                self._dispatch_params[qual] = param
            keyed = _keyed_param(fn)
            if keyed and qual not in self._dispatch_params:
                self._dispatch_params[qual] = keyed
                self._keyed.add(qual)
        for qual, fn in facts.functions.items():
            self.graph.add_node(qual)
            for caller, event in self._pending.pop(qual, ()):
                self._add_edge(caller, self.copy_for(qual, event), event)

    def copy_for(self, callee: str, event: Event) -> str:
        """A function that calls the method its parameter names (``def _emit(self, hook, **kw):
        for cb in self.callbacks: getattr(cb, hook)(self, **kw)``) runs, for a call that passes
        a name (``self._emit("on_epoch_end", logs=logs)``), as its copy for that name: only the
        methods so named run, and they return only to the calls that named them. A function
        that looks a container up by its parameter (a dispatcher's handlers, a registry's
        ``return REGISTRY[name]``) has its copies by the key a call names (see :func:`_key`)."""
        param = self._dispatch_params.get(callee)
        fn = self.functions.get(callee) if param else None
        argument = event.argument(param, fn.positional.index(param)) if fn and param else ""
        given = _key(argument) if callee in self._keyed else string_literal(argument)
        if not given:
            return callee
        copies = self._copies.setdefault(callee, {})
        if given not in copies:
            copy = dataclasses.replace(fn, qualname=f"{callee}<{given}>",
                                       events=[dataclasses.replace(e) for e in fn.events])
            copies[given] = copy.qualname
            self._fixed[copy.qualname] = (param, given)
            self.functions[copy.qualname] = copy
            self.graph.add_node(copy.qualname)
            self._link(copy)
        return copies[given]

    def named_instance(self, fn: FunctionInfo, name: str) -> list[str]:
        """The classes, of the project or a library, that ``name`` holds an instance of in
        ``fn`` when a configured ``_target_`` names them (``auditor/static/named_objects.py``)."""
        return self._named_instances.get((fn.class_name if name.startswith("self.") else fn.qualname, name), [])

    def _named_imports(self) -> dict[str, set[str]]:
        """path -> the files of the objects it finds by configured names (a plugin module that
        ``importlib.import_module`` imports by a configured name)."""
        def file_of(qualname: str) -> Optional[str]:
            module = qualname
            while module and module not in self.module_paths:
                module = module.rpartition(".")[0]
            return self.module_paths.get(module) if module else None

        out: dict[str, set[str]] = {}
        for (qual, _), found in [*self._named.items(), *self._named_instances.items()]:
            where = file_of(qual)
            for name in found if where is not None else ():
                path = file_of(name)
                if path is not None:
                    out.setdefault(where, set()).add(path)
        return out

    def link_named_objects(self, held: dict[tuple[str, str], list[str]],
                           instances: dict[tuple[str, str], list[str]]) -> None:
        """What names hold, and hold instances of, that the program finds by configured names
        (``auditor/static/named_objects.py``; keyed by function, or by class for ``self.x``);
        the calls are linked again through them."""
        self._named, self._named_instances = held, instances
        if held or instances:  # what the analyses derived from the calls and imports is derived again
            self._memos.clear()
            self._programs = None
            self.relink()

    def add_function(self, fn: FunctionInfo) -> None:
        """A function no file defines (a framework's loop, auditor/static/frameworks.py)."""
        self._generation += 1
        self.functions[fn.qualname] = fn
        self.graph.add_node(fn.qualname)
        self._link(fn)

    def relink(self) -> None:
        """Link every call again: ``dispatch`` or added functions changed what calls run."""
        self._generation += 1
        self._link_all()

    def _link_all(self, handed_only: bool = False) -> None:
        for fn in list(self.functions.values()):
            self._link(fn, handed_only)

    def _link(self, fn: FunctionInfo, handed_only: bool = False) -> None:
        """Edges for ``fn``'s calls (``handed_only``: for those that call what ``fn`` was handed,
        a parameter or ``self.attr``, whose class only the callers' edges tell)."""
        # what a call resolves to is `resolve_call`'s answer too, while no file is left to load
        # on demand (a load could add a callee): rules ask it of every call again. Not for a
        # handed call: the edges linked after it may still add to what it was handed
        complete = not self._skipped and not handed_only
        for event in fn.events:
            if event.kind != "call":
                continue
            if handed_only and not any(name.startswith("self.") or name in fn.params
                                       or name in self._loop_targets(fn) or self._closed_over(fn, name)
                                       for name in (event.func.removesuffix("()"), event.receiver) if name):
                kept = self._resolved.get(id(event))
                if kept is not None and kept[0] == self._generation - 1:
                    self._resolved[id(event)] = (self._generation, kept[1])  # it cannot change
                continue
            found: list[str] = []
            for callee in self._candidates(event, fn):
                if callee not in self.functions and callee.split(".")[0] in self._roots:
                    callee = self.reexported(callee) or callee
                if callee in self.functions:
                    self._add_edge(fn.qualname, callee, event)
                    found.append(callee)
                else:
                    self._pending.setdefault(callee, []).append((fn.qualname, event))
            if complete:
                self._resolved[id(event)] = (self._generation, list(dict.fromkeys(found)))

    def _closed_over(self, fn: FunctionInfo, name: str) -> bool:
        """``name`` is a parameter of a function enclosing ``fn`` (``fn(*args)`` in the wrapper
        of a decorator factory's decorator): what it holds, the callers of that function tell."""
        outer = self.enclosing(fn) if "." not in name else None
        while outer is not None:
            if name in outer.params:
                return True
            outer = self.enclosing(outer)
        return False

    def _add_edge(self, caller: str, callee: str, event: Event) -> None:
        self.graph.add_call(caller, callee, event)

    def _load_module_of(self, qualname: str, force: bool = False) -> None:
        """Analyse a skipped file on demand when a qualified name points into it (``force``:
        while linking too)."""
        if not self._skipped or self._loader is None or not (self._loading or force):
            return
        if qualname in self._not_skipped:  # the skipped set only shrinks: a no stays a no
            return
        parts = qualname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            path = self._skipped.pop(module, None)
            if path is not None:
                facts = self._loader(path)
                if facts is not None:
                    self._add(facts)
                    for fn in facts.functions.values():
                        self._link(fn)
                return
        self._not_skipped.add(qualname)

    def load_mentioning(self, word: str) -> None:
        """Analyse the skipped files whose text mentions ``word``: a rule walking *up* the call
        graph (to a function's callers) must see callers in files its prefilter skipped."""
        if not self._skipped or self._loader is None or word in self._mentioned:
            return
        self._mentioned.add(word)
        for module, path in list(self._skipped.items()):
            text = self._skipped_text(path)
            if text is not None and word in text:
                self._load_module_of(module + ".x")

    def any_source_matches(self, pattern: "re.Pattern[str]") -> bool:
        """Does the text of any Python file of the tree, analysed or skipped, match ``pattern``?
        (What no per-file fact records: where a configuration key is set, say.)"""
        return any((text := self._skipped_text(path)) is not None and pattern.search(text)
                   for path in [*self.files, *self._skipped.values()])

    def source_text(self, path: str) -> Optional[str]:
        """The text of a file of the tree (analysed or not), read once; None when unreadable."""
        return self._skipped_text(path)

    def body_start(self, fn: FunctionInfo) -> Optional[int]:
        """The line of the first statement of ``fn``'s body, its docstring left out: where a
        call that must run before the rest of it goes. None when the file cannot say."""
        memo = self.memo("body_start")
        if fn.qualname not in memo:
            memo[fn.qualname] = self._body_start(fn)
        return memo[fn.qualname]

    def _body_start(self, fn: FunctionInfo) -> Optional[int]:
        text = self.source_text(fn.path) if fn.span is not None else None
        try:
            tree = ast.parse(text) if text is not None else None
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == fn.name and fn.span.line <= n.lineno <= fn.span.end_line] if tree else []
        if not defs:
            return None
        body = min(defs, key=lambda n: n.lineno).body
        first = body[0]
        if len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                and isinstance(first.value.value, str):
            first = body[1]
        return first.lineno

    def text_at(self, path: str, span: Span) -> Optional[str]:
        """The source of ``path`` within ``span`` (an event keeps its text shortened)."""
        text = self.source_text(path)
        lines = text.splitlines() if text is not None else []
        if not 0 < span.line <= span.end_line <= len(lines):
            return None
        if span.line == span.end_line:
            return lines[span.line - 1][span.column - 1:span.end_column - 1]
        return "\n".join([lines[span.line - 1][span.column - 1:], *lines[span.line:span.end_line - 1],
                          lines[span.end_line - 1][:span.end_column - 1]])

    def _skipped_text(self, path: str) -> Optional[str]:
        """A skipped file's text, read once (rules ask about many words)."""
        if path not in self._texts:
            try:
                self._texts[path] = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    # -- queries ---------------------------------------------------------------------------------
    def function(self, qualname: str) -> Optional[FunctionInfo]:
        if qualname not in self.functions:
            self._load_module_of(qualname)
        found = self.functions.get(qualname)
        if found is None:
            target = self.reexported(qualname)
            found = self.functions.get(target) if target else None
        return found

    def reexported(self, qualname: str, depth: int = 0) -> Optional[str]:
        """Where ``pkg.name`` really lives when the package only re-exports it
        (``from .utils import name`` or ``from .utils import *`` in ``pkg/__init__.py``)."""
        # asked about every unresolved call: an answer stands until a load changes the project
        # (kept only when none happened while it was worked out: then asking again would try
        # the same loads, all impossible)
        state = (self._generation, self._loading)
        memo = self._reexports.get((qualname, depth))
        if memo is not None and memo[:2] == state:
            return memo[2]
        found = self._reexported(qualname, depth)
        if (self._generation, self._loading) == state:
            self._reexports[(qualname, depth)] = (*state, found)
        return found

    def _reexported(self, qualname: str, depth: int) -> Optional[str]:
        parts = qualname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            if module not in self.modules:
                # a package's `__init__` is mostly imports: cheap to read even while linking
                self._load_module_of(module + ".x", force=True)
            facts = self.modules.get(module)
            if facts is None:
                continue
            name, rest = parts[i], parts[i + 1:]
            targets = [facts.imports[name]] if name in facts.imports else []
            # the last `import *` that binds the name wins, as it would at run time
            targets += [f"{m}.{name}" for m in reversed(facts.star_imports) if self._star_exports(m, name)]
            for target in targets:
                full = ".".join([target, *rest])
                if full == qualname:
                    continue
                self._load_module_of(full)
                if full in self.functions or full in self.classes:
                    return full
                if depth < 3:
                    deeper = self.reexported(full, depth + 1)
                    if deeper:
                        return deeper
            return None
        return None

    def _star_exports(self, module: str, name: str) -> bool:
        """Does ``from module import *`` bind ``name``? Its ``__all__`` when it has one, else
        every public name. None that leads into the project when the tree has no such module (a
        third-party one, a file left out): guessing every name there multiplied the targets at
        each level of the chase, (missing star imports) ** 3 per name asked."""
        if module not in self.module_paths:
            return False
        facts = self.modules.get(module)
        if facts is None or facts.exports is None:
            return not name.startswith("_")
        return name in facts.exports

    def resolve_call(self, event: Event, caller: FunctionInfo) -> list[str]:
        """Functions a call event may run: direct names, ``self.method``, constructors, and
        methods of instances whose class is known (``model = GraphMAE()``; ``model(g)`` runs
        ``GraphMAE.forward``; ``trainer.validate()`` runs ``Trainer.validate``)."""
        memo = self._resolved.get(id(event))
        if memo is not None and memo[0] == self._generation:
            return list(memo[1])
        # the function's own qualname: a re-exported `pkg.f` is `pkg.impl.f`
        found = list(dict.fromkeys(fn.qualname for c in self._candidates(event, caller)
                                   for fn in [self.function(c)] if fn is not None))
        self._resolved[id(event)] = (self._generation, found)
        return list(found)

    def _candidates(self, event: Event, caller: FunctionInfo) -> list[str]:
        func = event.func.removesuffix("()")
        candidates: list[str] = []
        if func.startswith("self.") and caller.class_name:
            # `self.training_step(batch)` in a base class's loop: its own, or a subclass's
            # override (a template method's hooks)
            candidates += self.method_candidates(caller.class_name, func[5:])
            candidates += self.overrides(caller.class_name, func[5:])
        cls = self.instance_class(caller, func, event.span.line)
        if cls is not None:  # calling an instance: nn.Module.__call__ runs forward
            candidates += self.method_candidates(cls, "forward") + self.method_candidates(cls, "__call__")
        if event.receiver and event.method:
            dispatched = self._dispatched(event, caller) if self.dispatch else []
            cls = None if dispatched else self.instance_class(caller, event.receiver, event.span.line)
            if cls is not None:
                candidates += self.method_candidates(cls, event.method)
            candidates += dispatched
        if event.receiver == "super()" and caller.class_name and event.method:
            # `super().__init__(model, cfg)`: the method of the class's bases (each of them: a
            # mixin's cooperative call goes on along the instance's MRO)
            owner = caller.class_name if caller.class_name in self.classes else ""
            candidates += [q for base in self.bases_of(owner) if base != owner
                           for q in self.method_candidates(base, event.method)]
        if func == "cls" and caller.class_name and caller.params[:1] == ["cls"]:
            # `cls(...)` in a classmethod builds the class
            candidates += self.method_candidates(caller.class_name, "__init__")
        if event.func.endswith("()") and not func.startswith("self."):
            # `lookup(kind, name)(*args)`: what the inner call returns runs
            inner = func if "." in func else next(
                (q for q in (f"{caller.qualname}.{func}", f"{caller.module}.{func}") if q in self.functions), func)
            if inner in self._keyed:  # `lookup("sce")(pred, target)`: the copy for that key
                looked_up = next((e for e in caller.events if e.kind == "call" and e is not event
                                  and e.func == func and e.span.within(event.span)), None)
                inner = self.copy_for(inner, looked_up) if looked_up is not None else inner
            candidates += self._named_methods(caller, event) if func == "getattr" \
                else self.returned_callables(inner)
            return list(dict.fromkeys(candidates))  # not a call of `lookup` itself
        candidates += [func, f"{func}.__init__"]
        if "." not in func or func.startswith("self."):
            # `step = make_step(model, opt)` then `step(x)`, or a callable an object was handed
            # (`self.process_fn(batch)`): the closure the factory returns
            candidates += self._callables(caller, func, event.span.line)
            # a name defined in the caller's module (nested scopes included)
            candidates += [f"{caller.module}.{func}", f"{caller.qualname}.{func}"]
        candidates += self._registered(caller, func, event.span.line)
        if "." not in func and func in self._loop_targets(caller):
            candidates += self._contained(caller, func, event.span.line)
        if self._dispatch_params:
            candidates = [self.copy_for(c, event) if c in self._dispatch_params else c for c in candidates]
        return list(dict.fromkeys(candidates))

    def _loop_targets(self, fn: FunctionInfo) -> frozenset[str]:
        """The names ``fn``'s ``for`` loops bind (asked at each of its calls: kept)."""
        found = self._bound_by_loops.get(fn.qualname)
        if found is None:
            found = frozenset(t for e in fn.events if e.kind == "assign"
                              and e.text.startswith(("for ", "async for ")) for t in e.targets)
            self._bound_by_loops[fn.qualname] = found
        return found

    def _contained(self, fn: FunctionInfo, name: str, line: int) -> list[str]:
        """``for flt, handler in self._handlers[event]: handler(self)``: the callables the
        container the loop walks was filled with (``.append``, ``.add``, ``.insert``,
        ``c[k] = f``), in any method of the class for ``self.attr``: handlers and callbacks
        registered on an object."""
        loop = next((e for e in reversed(fn.events) if e.span.line <= line and e.kind == "assign"
                     and name in e.targets and e.text.startswith(("for ", "async for "))), None)
        walked = loop_iterable(loop.text) if loop is not None else ""
        if not walked:
            return []
        copied = _COPIED.fullmatch(walked)  # `list(self._handlers[event])`: the same items
        base = re.sub(r"(\[[^\[\]]*\]|\.values\(\))+$", "", copied.group(1) if copied else walked)
        position = loop.targets.index(name) if len(loop.targets) > 1 else None
        scopes = [fn]
        if base.startswith("self.") and fn.class_name:
            scopes = [self.functions[q] for q in self.members(fn.class_name) if q in self.functions]
        fixed = self._fixed.get(fn.qualname) if fn.qualname.split("<", 1)[0] in self._keyed else None
        out: list[str] = []
        for scope in scopes:
            for e in scope.events:
                item = _stored_item(e, base)
                if item and position is not None:
                    parts = top_level_items(item[1:-1]) if item.startswith("(") else []
                    item = parts[position].strip() if len(parts) > position else ""
                if not item:
                    continue
                item = self._argument_text(scope, e, item)
                key = _store_key(e, base) if fixed is not None else ""
                out += self._keyed_callables(scope, item, key, fixed[1], e.span.line) if key \
                    else self._callables(scope, item, e.span.line)
        return out

    def _keyed_callables(self, scope: FunctionInfo, item: str, key: str, given: str, line: int,
                         up: int = 0) -> list[str]:
        """The callables ``scope`` stores under ``key`` where that key is ``given`` (a handler
        registered for one event): a key written there, or one the callers of ``scope`` pass
        along with the item (``add_event_handler(Events.X, fn)``), or, in a decorator, the key
        its decorations name (``@trainer.on(Events.X)``)."""
        if key not in scope.params:
            outer = self.enclosing(scope)
            if outer is not None and key in outer.params and scope.params[:1] == [item]:
                # a decorator's argument stored under its maker's parameter: the functions
                # decorated with that key
                return [q for q in self.decorated_by(scope) if self._decorated_key(q, outer) == given]
            return self._callables(scope, item, line) if _key(key) == given else []
        if up >= MAX_PASSED or key not in scope.positional:
            return []
        out: list[str] = []
        for caller in list(self.graph.predecessors(scope.qualname)):
            caller_fn = self.functions.get(caller)
            for event in self.graph.calls(caller, scope.qualname) if caller_fn else ():
                passed_key = self._argument_text(
                    caller_fn, event, event.argument(key, scope.positional.index(key)))
                if item not in scope.positional:  # the item is the scope's own: the key decides
                    out += self._callables(scope, item, line) if _key(passed_key) == given else []
                    continue
                passed_item = self._argument_text(
                    caller_fn, event, event.argument(item, scope.positional.index(item)))
                if passed_key and passed_item:
                    out += self._keyed_callables(caller_fn, passed_item, passed_key, given,
                                                 event.span.line, up + 1)
        return out

    def _decorated_key(self, qual: str, maker: FunctionInfo) -> str:
        """The key a function's decoration by ``maker`` names (``@trainer.on(Events.X)``)."""
        fn = self.functions.get(qual)
        if fn is None:
            return ""
        for deco, key in zip(fn.decorators, fn.decorator_keys):
            if deco.removesuffix("()").rsplit(".", 1)[-1] == maker.name:
                return _key(key)
        return ""

    def _callables(self, fn: FunctionInfo, name: str, line: int, up: int = 0) -> list[str]:
        """The functions a call of what ``name`` holds in ``fn`` runs: a function defined by that
        name, an instance's ``__call__`` (``self``, an object built from a project class), a
        closure a factory returned; for a parameter, what the callers pass."""
        if name == "self" and fn.class_name:
            return self.method_candidates(fn.class_name, "__call__")
        defined = [q for q in (f"{fn.qualname}.{name}", f"{fn.module}.{name}") if q in self.functions]
        if defined:
            return defined
        out: list[str] = []
        for built in self._built_from(fn, name, line):
            if built.endswith("()"):  # `step = accumulate(n)(micro_step)`: what `deco` returns
                out += [c for made in self.returned_callables(built[:-2])
                        for c in self.returned_callables(made)]
            elif built in self.classes:
                out += self.method_candidates(built, "__call__")
            elif built.startswith("self.") and fn.class_name:  # `cls = self.get(key)`
                out += [c for m in self.method_candidates(fn.class_name, built[5:])
                        for c in self.returned_callables(m)]
            else:
                out += self.returned_callables(built)
        out += self._partials(fn, name, line)
        looked_up = next((e.text.split("=", 1)[1].strip() for e in reversed(fn.assigned(name))
                          if e.span.line <= line and "=" in e.text), "")
        if _LOOKUP.fullmatch(looked_up):  # `cls = self._items[key]`: what the container holds
            out += self._registered(fn, looked_up, line)
        if not out:  # `cls = load_plugin(pkg, cfg["name"], cfg["cls"])`: found by configured names
            out += [f"{q}.__init__" if q in self.classes else q
                    for q in self._named.get((fn.qualname, name), ())]
        if fn.params[:1] == [name] and self.enclosing(fn) is not None:
            out += self.decorated_by(fn)  # a decorator's argument: what it decorates
        if up < MAX_PASSED and (name in fn.params or not out and name.startswith("self.")):
            # what the callers hand over that no construction names: `self`, a `def`
            for caller, argument, at in self._passed_as(fn, name):
                out += self._callables(caller, argument, at, up + 1)
        outer = self.enclosing(fn) if not out and up < MAX_PASSED and "." not in name else None
        if outer is not None and name not in fn.params and name not in self._constructions(fn):
            # a closure's free variable (`fn(*args)` in a decorator's wrapper): what the function
            # defining it holds by that name (its parameter: what its callers pass)
            out += self._callables(outer, name, outer.span.end_line if outer.span else line, up + 1)
        if not out and up < MAX_PASSED and "." in name:
            out += self._attribute_callables(fn, name, line, up)
        return out

    def _partials(self, fn: FunctionInfo, name: str, line: int) -> list[str]:
        """``crit = functools.partial(sce_loss, alpha=2)`` (in ``fn``, or in any method of its
        class for ``self.attr``): the function a call of it runs."""
        if name.startswith("self.") and fn.class_name in self.classes:
            made = self._class_partials(fn.class_name).get(name, [])
        else:
            made = [(fn, at, wrapped) for at, wrapped in self._partials_in(fn).get(name, ())]
        out: list[str] = []
        for scope, at, wrapped in made:
            if scope is fn and at > line:
                continue
            target = self.function(wrapped)
            out += [target.qualname] if target is not None else \
                self.method_candidates(wrapped, "__call__") if wrapped in self.classes else []
        return out

    def _class_partials(self, cls: str) -> dict[str, list[tuple[FunctionInfo, int, str]]]:
        """``self.attr`` -> [(method, line, wrapped)] of the partials the class's methods assign."""
        memo = self.memo("class_partials")
        found = memo.get(cls)
        if found is None:
            found = memo[cls] = {}
            for q in self.classes[cls].methods:
                method = self.functions.get(q)
                for target, made in self._partials_in(method).items() if method is not None else ():
                    found.setdefault(target, []).extend((method, at, w) for at, w in made)
        return found

    def _partials_in(self, fn: FunctionInfo) -> dict[str, list[tuple[int, str]]]:
        """name -> [(line, wrapped function)] of the partials ``fn`` assigns (read once: asked
        at every call through an attribute)."""
        memo = self.memo("partials_in")
        found = memo.get(fn.qualname)
        if found is None:
            found = memo[fn.qualname] = {}
            for e in fn.events:
                if e.kind == "call" and e.func in PARTIALS and e.args and e.targets:
                    for target in e.targets:
                        found.setdefault(target, []).append((e.span.line, self.qualified(fn, e.args[0])))
        return found

    def partial_names(self, fn: FunctionInfo) -> set[str]:
        """The names a ``functools.partial`` of ``fn`` is kept under (``self.criterion``:
        ``criterion``): a call of it may be written with that name only."""
        memo = self.memo("partial_names")
        count, index = memo.get("", (0, {}))
        for scope in self.functions_since(count):
            for target, made in self._partials_in(scope).items():
                for _, wrapped in made:
                    index.setdefault(wrapped, set()).add(target.rsplit(".", 1)[-1])
        memo[""] = (len(self.functions), index)
        return set(index.get(fn.qualname, ()))

    def _attribute_callables(self, fn: FunctionInfo, name: str, line: int, up: int) -> list[str]:
        """What a call of an attribute runs that ``fn``'s class copies from another object
        (``self.criterion = model.criterion``), or that an object of a known class holds
        (``model.criterion(...)``): what that object's class assigns it."""
        base, _, attr = name.rpartition(".")
        if base == "self" and fn.class_name in self.classes:
            out: list[str] = []
            for method, other, at in self._copied_attributes(fn.class_name).get(name, ()):
                out += self._callables(method, other, at, up + 1)
            return out
        out = []
        for cls in self._object_classes(fn, base, line) if base != "self" else []:
            init = self.function(f"{cls}.__init__")
            if init is not None and init.span is not None:
                out += self._callables(init, f"self.{attr}", init.span.end_line, up + 1)
        return out

    def _copied_attributes(self, cls: str) -> dict[str, list[tuple[FunctionInfo, str, int]]]:
        """``self.attr`` -> [(method, other object's attribute, line)] of the assignments in the
        class's methods that make an attribute another object's (``self.criterion =
        model.criterion``). Made once per class (its methods come with its file)."""
        memo = self.memo("copied_attributes")
        found = memo.get(cls)
        if found is None:
            found = memo[cls] = {}
            for q in self.classes[cls].methods:
                method = self.functions.get(q)
                for e in method.events if method is not None else ():
                    if e.kind != "assign":
                        continue
                    for target in e.targets:
                        for other in e.bound_to(target) if target.startswith("self.") else ():
                            if other != target and "." in other and not other.startswith("self."):
                                found.setdefault(target, []).append((method, other, e.span.line))
        return found

    def _object_classes(self, fn: FunctionInfo, name: str, line: int) -> list[str]:
        """The project classes of the objects ``name`` holds: built there, or returned by the
        factory that built them (``model = build_model(cfg)`` returning ``GraphMAE(...)``)."""
        return list(dict.fromkeys(self._object_classes_iter(fn, name, line)))

    def _object_classes_iter(self, fn: FunctionInfo, name: str, line: int,
                             every: bool = True) -> Iterator[str]:
        """``every``: all the classes a factory may return; else only a factory's one class (a
        factory choosing among several says nothing of which one this object is)."""
        named = [c for c in self.named_instance(fn, name) if c in self.classes]
        if named:  # built from the class a configured `_target_` names
            yield from named
            return
        for built in self._built_from(fn, name, line):
            if built in self.classes:
                yield built
            elif built.split(".", 1)[0] in self._roots:  # a project factory, not a library's
                made = self._returned_classes(built) or self._global_method_classes(built)
                yield from made if every or len(made) == 1 else ()

    def _global_method_classes(self, built: str) -> list[str]:
        """The classes a method of a module's global object returns (``LOSSES.build(cfg.loss)``
        as ``pkg.registry.LOSSES.build``), of a registry those registered through it."""
        holder, _, method = built.rpartition(".")
        module, _, var = holder.rpartition(".")
        scope = self.functions.get(f"{module}.{MODULE_SCOPE}")
        cls = self.instance_class(scope, var, scope.span.end_line if scope.span else 1 << 30) \
            if scope is not None and var else None
        if cls is None:
            return []
        return [c for m in self.method_candidates(cls, method)
                for c in self.registered_through(holder, cls, self._returned_classes(m))]

    def registered_through(self, holder: str, owner: str, classes: list[str]) -> list[str]:
        """Of ``classes``, those a registry object ``holder`` (of class ``owner``) holds: a class
        registered by a decorator that is a method of ``owner`` (``@MODELS.register("gmae")``)
        is held by the object it was registered through, not by every object of that class
        (``LOSSES``)."""
        methods = {q.rsplit(".", 1)[-1] for q in self.classes[owner].methods} \
            if owner in self.classes else set()

        def registrars(cls: str) -> set[str]:
            info = self.classes.get(cls)
            decorators = [d.removesuffix("()") for d in (info.decorators if info else ())]
            return {d.rsplit(".", 1)[0] for d in decorators if d.rsplit(".", 1)[-1] in methods}

        return [c for c in classes if not registrars(c) or holder in registrars(c)]

    def _returned_classes(self, factory_name: str) -> list[str]:
        """The project classes of the objects a factory returns by name (``return model``)."""
        memo = self.memo("returned_classes")
        state = (self._generation, self._loading)
        known = memo.get(factory_name)
        if known is not None and known[0] == state:
            return known[1]
        memo[factory_name] = (state, [])  # a factory returning what it calls itself: none
        factory = self.function(factory_name)
        out: list[str] = []
        for value, line in _returned_values(factory) if factory is not None else ():
            if re.fullmatch(r"[\w.]+", value):
                out += [c for c in self._built_from(factory, value, line) if c in self.classes]
            elif re.match(r"[\w.]+\(", value):  # (the text may be shortened)
                called = self.qualified(factory, value.split("(", 1)[0])
                called = called if called in self.classes else self.reexported(called) or called
                if called in self.classes:  # `return Dataset(graph=g, ...)`
                    out.append(called)
                    continue
                # `return cls(**kwargs)` of a class looked up (a registry's `build`)
                held = self._callables(factory, value.split("(", 1)[0], line)
                out += [c.removesuffix(".__init__") for c in held
                        if c.endswith(".__init__") and c.removesuffix(".__init__") in self.classes]
        out = list(dict.fromkeys(out))
        if (self._generation, self._loading) == state:
            memo[factory_name] = (state, out)
        return out

    def qualified(self, fn: FunctionInfo, text: str) -> str:
        """A dotted name written in ``fn`` as its module's imports resolve it (a function or
        class of the module when defined there)."""
        root, _, rest = text.partition(".")
        imports = self.files[fn.path].imports if fn.path in self.files else {}
        if root in imports:
            return imports[root] + (f".{rest}" if rest else "")
        local = f"{fn.module}.{text}"
        return local if local in self.functions or local in self.classes else text

    def returned_callables(self, callee: str) -> list[str]:
        """What a call of ``callee``'s result runs (``lookup(kind, name)(*args)``): the functions
        it returns by name (a closure, a module's function, one it was handed) and those held by
        a registry it returns an entry of (``return TABLE[kind][name]``)."""
        fn = self.function(callee)
        if fn is None or fn.qualname in self._returning:  # a factory returning its own call
            return []
        self._returning.add(fn.qualname)
        out: list[str] = []
        try:
            for value, line in _returned_values(fn):
                if re.fullmatch(r"[\w.]+", value):
                    out += self._callables(fn, value, line)
                elif _LOOKUP.fullmatch(value):
                    out += self._registered(fn, value, line)
        finally:
            self._returning.discard(fn.qualname)
        return list(dict.fromkeys(out))

    def _named_methods(self, caller: FunctionInfo, event: Event) -> list[str]:
        """``getattr(cb, hook)(self, **kw)``: the methods named by the strings ``hook`` holds (a
        literal, or those the caller's callers pass for it: ``self._emit("on_epoch_end")``), of
        ``cb``'s class when known, else of the classes in a program of the caller's."""
        inner = next((e for e in caller.events if e.kind == "call" and e.func == "getattr"
                      and len(e.args) >= 2 and e.span.within(event.span)), None)
        if inner is None:
            return []
        names = self._strings_of(caller, inner.args[1])
        cls = self.instance_class(caller, inner.args[0], event.span.line)
        out: list[str] = []
        for name in names:
            if cls is not None:
                out += self.method_candidates(cls, name)
                continue
            named = [fn for fn in list(self.functions.values()) if fn.name == name and fn.class_name]
            # those a program running the caller holds, when one does (a library's: all)
            mine = [fn for fn in named if self.share_program(caller.path, fn.path)]
            library = all(p.kind == LIBRARY for p in self.programs_with(caller.path))
            out += [fn.qualname for fn in (named if library and not mine else mine)]
        return out if len(out) <= MAX_NAMED_METHODS else []

    def _strings_of(self, fn: FunctionInfo, text: str) -> list[str]:
        """The strings an argument may hold: its literal, or for a parameter of ``fn`` the
        literals ``fn``'s callers pass for it."""
        if string_literal(text):
            return [string_literal(text)]
        fixed = self._fixed.get(fn.qualname)
        if fixed is not None and fixed[0] == text:  # a dispatcher's copy for one name
            return [fixed[1]]
        if text not in fn.positional:
            return []
        position = fn.positional.index(text)
        out: list[str] = []
        for caller in self.callers(fn.qualname):
            for site in self.graph.calls(caller, fn.qualname):
                given = string_literal(site.argument(text, position))
                if given:
                    out.append(given)
        return list(dict.fromkeys(out))

    def forwarded(self, caller: FunctionInfo, event: Event,
                  callee: FunctionInfo) -> list[tuple[FunctionInfo, Event, str, str]]:
        """The parameters of ``callee`` that the call ``event`` in ``caller`` fills from
        ``caller``'s own ``*args`` / ``**kwargs`` (``return lookup(kind, name)(*args, **kwargs)``):
        (function, call event, parameter, argument) at each call of ``caller`` that gives one."""
        if not (caller.varargs or caller.varkw):
            return []
        spread = bool(caller.varargs) and f"*{caller.varargs}" in event.args
        spread_kw = bool(caller.varkw) and f"**{caller.varkw}" in event.args
        if not (spread or spread_kw):
            return []
        memo = self.memo("forwarded")
        key = (id(event), callee.qualname)
        known = memo.get(key)
        if known is not None and known[0] == self._generation:
            return known[1]
        given = next((n for n, a in enumerate(event.args) if a.startswith("*")), len(event.args))
        named = callee.positional
        wanted = [(p, n - given) for n, p in enumerate(named) if n >= given and p not in event.kwargs]
        wanted += [(p, -1) for p in callee.params[len(callee.params) - callee.kwonly:]
                   if p not in event.kwargs]
        skip = len(caller.positional)
        out: list[tuple[FunctionInfo, Event, str, str]] = []
        for outer_name in self.callers(caller.qualname):
            outer = self.functions.get(outer_name)
            for site in self.graph.calls(outer_name, caller.qualname) if outer is not None else ():
                given_there = [a for a in site.args if not a.startswith("*")]
                for param, j in wanted:
                    arg = given_there[skip + j] if spread and 0 <= j and skip + j < len(given_there) else ""
                    arg = arg or (site.kwargs.get(param, "") if spread_kw else "")
                    if arg:
                        out.append((outer, site, param, arg))
        memo[key] = (self._generation, out)
        return out

    def _registered(self, caller: FunctionInfo, func: str, line: int) -> list[str]:
        """``LOSSES[cfg.loss](pred, target)``: the functions the container it looks up holds (a
        registry of losses, models or handlers): those of its display, those stored in it
        (``LOSSES["mse"] = mse``), and those decorated by a function that stores its argument
        there (``@register("mse")``). The container is a local assigned before the call, else
        a global of its module (imported ones followed)."""
        lookup = _LOOKUP.fullmatch(func)
        if lookup is None:
            return []
        name = lookup.group(1)
        # in a lookup function's copy for one key (``lookup("sce")``), the entries stored
        # under that key only
        fixed = self._fixed.get(caller.qualname)
        given = fixed[1] if fixed is not None and func == f"{name}[{fixed[0]}]" else ""
        local = [e for e in caller.assigned(name) if e.span.line < line]
        if local:
            return self._held_callables(caller, name, given)
        if name.startswith("self.") and caller.class_name in self.classes:
            # a registry object's own table (`self._items[name]`), filled by its methods and
            # the decorators they return
            return [q for m in self.members(caller.class_name) if m in self.functions
                    for q in self._held_callables(self.functions[m], name, given)]
        imports = self.files[caller.path].imports if caller.path in self.files else {}
        home, _, var = imports.get(name, f"{caller.module}.{name}").rpartition(".")
        self._load_module_of(f"{home}.{var}", force=True)
        out: list[str] = []
        for qual in [f"{home}.{MODULE_SCOPE}", *self.members(home)]:
            scope = self.functions.get(qual)
            if scope is not None and scope.module == home:
                out += self._held_callables(scope, var, given)
        return out

    def _held_callables(self, scope: FunctionInfo, name: str, given: str = "") -> list[str]:
        """The functions ``scope`` puts in the container ``name`` (see :meth:`_registered`);
        with ``given``, those stored under that key."""
        out: list[str] = []
        for e, key, item in self._stored_in(scope, name):
            if given and key:
                out += self._keyed_callables(scope, item, key, given, e.span.line)
            elif given and e.kind == "call":
                continue  # appended, under no key
            elif item in scope.params:  # a decorator storing what it decorates
                # classes too where a registry object's methods store them, or a key picks one
                # (a module's table of every model, looked up by a value, would link them all)
                out += [q if q in self.functions else f"{q}.__init__" for q in self.decorated_by(scope)
                        if q in self.functions or q in self.classes and (given or scope.class_name)]
            else:
                out += [f"{scope.module}.{item}", item]
        return out

    @staticmethod
    def _stored_in(scope: FunctionInfo, name: str) -> list[tuple[Event, str, str]]:
        """(event, key as written or "", name) of what ``scope`` puts in the container ``name``:
        its display's items, what is stored in it (``name[k] = x``, ``name.append(x)``)."""
        display = re.compile(rf"{re.escape(name)}\s*=[^=]")
        out: list[tuple[Event, str, str]] = []
        for e in scope.events:
            if e.kind == "assign" and display.match(e.text):
                value = e.text.split("=", 1)[-1]
                entries = dict_entries(value)
                stored = [(f'"{k}"', v) for k, v in entries.items()] if entries else \
                    [("", x) for x in container_items(value)]
            else:
                stored = [(_store_key(e, name), _stored_item(e, name))]
            out += [(e, k, x) for k, x in stored if x and re.fullmatch(r"[\w.]+", x)]
        return out

    def decorated_by(self, deco: FunctionInfo) -> list[str]:
        """The functions and classes decorated with ``deco`` (``@deco``), or with the function
        that returns it (``@register("mse")``)."""
        makers = {deco.qualname}
        outer = self.enclosing(deco)
        if outer is not None and deco.qualname in self.returned_closures(outer.qualname):
            makers.add(outer.qualname)
        functions, classes = self._decorations()
        hits = {hit for m in makers for index in (functions, classes) for hit in index.get(m, ())}
        for maker in (self.functions.get(m) for m in makers):
            if maker is not None and maker.class_name:
                hits |= self._method_decorated(maker, functions) | self._method_decorated(maker, classes)
        return [q for _, q in sorted(hits)]

    def _method_decorated(self, maker: FunctionInfo, functions: dict[str, list[tuple[int, str]]]
                          ) -> set[tuple[int, str]]:
        """The functions decorated by ``maker``, a method, through an object of its class:
        ``@trainer.on(Events.ITERATION_STARTED)`` where ``trainer = Engine(step)`` (handlers and
        callbacks registered on an object)."""
        out: set[tuple[int, str]] = set()
        for text, hits in functions.items():
            receiver, _, method = text.rpartition(".")
            if method != maker.name or not receiver:
                continue
            home = ""
            if receiver.split(".", 1)[0] in self._roots:
                # an object another module holds (`@LOSSES.register("mse")`, imported)
                home, _, receiver = receiver.rpartition(".")
                if not home or f"{home}.{MODULE_SCOPE}" not in self.functions:
                    continue
            for hit in hits:
                fn = self.functions.get(hit[1]) or self.classes.get(hit[1])
                scope = self.enclosing(fn) if isinstance(fn, FunctionInfo) and not home else None
                scope = scope or (self.functions.get(f"{home or fn.module}.{MODULE_SCOPE}") if fn else None)
                line = 1 << 30 if home else fn.span.line if fn and fn.span else 0
                cls = self.instance_class(scope, receiver, line) if scope is not None else None
                if cls is not None and maker.qualname in self.method_candidates(cls, maker.name):
                    out.add(hit)
        return out

    def _decorations(self) -> tuple[dict[str, list[tuple[int, str]]], dict[str, list[tuple[int, str]]]]:
        """The functions and the classes by each decorator they have (call parentheses dropped),
        with their place in the project's order. Kept up to date as loads add to the project
        (which only grows): asked about every registry, a scan of the whole project each time
        made the registries quadratic in the tree."""
        memo = self.memo("decorations")
        out = []
        for kind, table in (("functions", self.functions), ("classes", self.classes)):
            seen, index = memo.setdefault(kind, (0, {}))
            for position, (qual, info) in enumerate(itertools.islice(table.items(), seen, None), seen):
                for d in dict.fromkeys(d.removesuffix("()") for d in info.decorators):
                    index.setdefault(d, []).append((position, qual))
            memo[kind] = (len(table), index)
            out.append(index)
        return out[0], out[1]

    def registries_of(self, fn: FunctionInfo) -> set[str]:
        """The containers of ``fn``'s module that hold it (by display, by store, or stored by a
        decorator it has): a call of it may be written as a lookup in one of them."""
        memo = self.memo("registries_of")
        if fn.qualname not in memo:
            memo[fn.qualname] = self._registries_of(fn)
        return memo[fn.qualname]

    def _registries_of(self, fn: FunctionInfo) -> set[str]:
        makers = [m for d in fn.decorators if (m := self.functions.get(d.removesuffix("()")))]
        makers += [self.functions[q] for m in list(makers) for q in self.returned_closures(m.qualname)]
        out: set[str] = set()
        for maker in makers:
            out |= self._containers_in(maker, maker.params)
        for qual in [f"{fn.module}.{MODULE_SCOPE}", *self.members(fn.module)]:
            if (scope := self.functions.get(qual)) is not None:
                out |= self._containers_in(scope, [fn.name])
        return out

    def _containers_in(self, scope: FunctionInfo, items: list[str]) -> set[str]:
        """The containers ``scope`` puts one of ``items`` in. Its stores are read once: every
        function of a module asks about the module's scope."""
        memo = self.memo("stores")
        stores = memo.get(scope.qualname)
        if stores is None:
            stores = memo[scope.qualname] = [s for e in scope.events if (s := _stores(e))[0]]
        return {base for base, stored in stores if any(x in items for x in stored)}

    def bases_of(self, class_qualname: str) -> list[str]:
        """The bases of a project class, each where it is defined: a base imported from a
        package that only re-exports it (``from pkg import BaseModel``) is that class."""
        info = self.classes.get(class_qualname)
        return [b if b in self.classes else self.reexported(b) or b
                for b in info.bases] if info is not None else []

    def method_candidates(self, class_qualname: str, method: str) -> list[str]:
        """``Class.method`` and the same method on the class's known bases (nearest first)."""
        # asked about every method call on an instance: kept until a load changes the project
        state = (self._generation, self._loading)
        memo = self.memo("method_candidates")
        known = memo.get((class_qualname, method))
        if known is not None and known[0] == state:
            return list(known[1])
        found = self._method_candidates(class_qualname, method)
        if (self._generation, self._loading) == state:
            memo[(class_qualname, method)] = (state, found)
        return list(found)

    def overrides(self, class_qualname: str, method: str) -> list[str]:
        """The methods named ``method`` that subclasses of the class define (at any depth), or
        that the other bases composed with it in a subclass define (a mixin beside a loop's base
        class): what ``self.method()`` in the class may run on an instance of one of them."""
        if "." in method:
            return []
        own = set(self.lineage(class_qualname))
        subs = self.subclasses(class_qualname)
        composed = [c for sub in subs[:MAX_COMPOSED] for c in self.lineage(sub) if c not in own]
        return list(dict.fromkeys(q for c in [*subs, *composed] if (q := f"{c}.{method}") in self.functions))

    def subclasses(self, class_qualname: str) -> list[str]:
        """The project classes deriving from the class, at any depth, nearest first."""
        memo = self.memo("subclasses")
        known = memo.get(class_qualname)
        if known is not None and known[0] == len(self.classes):
            return known[1]
        found = self._subclasses_of(class_qualname)
        memo[class_qualname] = (len(self.classes), found)
        return found

    def _subclasses_of(self, class_qualname: str) -> list[str]:
        count, index = self._subclasses
        fresh = list(itertools.islice(self.classes, count, None))  # a base may load a file
        for qual in fresh:
            for base in self.bases_of(qual):
                if base != qual:
                    index.setdefault(base, []).append(qual)
        self._subclasses = (count + len(fresh), index)
        out: list[str] = []
        todo, seen = list(index.get(class_qualname, ())), {class_qualname}
        while todo:
            sub = todo.pop(0)
            if sub not in seen:
                seen.add(sub)
                out.append(sub)
                todo += index.get(sub, ())
        return out

    def lineage(self, class_qualname: str) -> list[str]:
        """The class and its project bases, at any depth (its MRO's project classes)."""
        return [q.rsplit(".", 1)[0] for q in self.method_candidates(class_qualname, "_")]

    def _method_candidates(self, class_qualname: str, method: str) -> list[str]:
        out, todo, seen = [], [class_qualname], set()
        while todo:
            cls_name = todo.pop(0)
            if cls_name in seen:
                continue
            seen.add(cls_name)
            out.append(f"{cls_name}.{method}")
            cls = self.classes.get(cls_name)
            if cls is None:
                self._load_module_of(cls_name + ".x")
                cls = self.classes.get(cls_name)
            todo += self.bases_of(cls_name)
        return out

    def _dispatched(self, event: Event, caller: FunctionInfo) -> list[str]:
        """``trainer.fit(model)``: the synthetic method ``dispatch`` names for the framework
        class ``trainer`` was built from, on ``model``'s class (on every class that has it in a
        program of the caller's when ``model``'s class is not known)."""
        found = next((self.dispatch[key] for built in self._built_from(caller, event.receiver, event.span.line)
                      if (key := f"{built}.{event.method}") in self.dispatch), None)
        if found is None:
            return []
        name, param = found
        cls = self.instance_class(caller, event.argument(param), event.span.line)
        if cls is not None:
            return self.method_candidates(cls, name)
        return [q for q, fn in list(self.functions.items()) if fn.name == name and fn.instance_argument
                and self.share_program(caller.path, fn.path)]

    def _built_from(self, fn: FunctionInfo, name: str, before_line: int, up: int = 0) -> Iterator[str]:
        """What a local name (or ``self.attr``) was built from, latest first: project classes
        (re-exports followed) and other callees as the call names them; for a parameter, or an
        attribute the constructor binds from one (``self.model = model``), what the callers
        pass, up to :data:`MAX_PASSED` calls up."""
        if not name:
            return
        made = CALL_ARGUMENT.fullmatch(name)
        if made:
            yield self.reexported(made.group(1)) or made.group(1) \
                if made.group(1) not in self.functions else made.group(1)
            return
        built = False
        for callee in self._constructed_as(fn, name, before_line):
            built = True
            yield callee
        if up < MAX_PASSED:
            for caller, argument, line in self._handed_back(fn, name, before_line):
                built = True
                yield from self._built_from(caller, argument, line, up + 1)
        if built or up >= MAX_PASSED:
            return
        outer = self.enclosing(fn) if "." not in name and name not in fn.params else None
        if outer is not None:
            # a closure's free variable: what the function defining it holds by that name
            found = list(self._built_from(outer, name, outer.span.end_line if outer.span else 1 << 30, up + 1))
            yield from found
            if found:
                return
        target = self.qualified(fn, name) if "." not in name and name not in fn.params else ""
        if target and (fn.name != MODULE_SCOPE or "." in target):
            # a module's global (`LOSSES = Registry("loss")`, here or imported): what the
            # module's top-level code built it from
            module, attr = target.rsplit(".", 1) if "." in target else (fn.module, name)
            self._load_module_of(target)
            scope = self.functions.get(f"{module}.{MODULE_SCOPE}")
            found = list(self._constructed_as(scope, attr, scope.span.end_line if scope.span else 1 << 30)) \
                if scope is not None else []
            yield from found
            if found:
                return
        for caller, argument, line in self._passed_as(fn, name):
            yield from self._built_from(caller, argument, line, up + 1)

    def _handed_back(self, fn: FunctionInfo, name: str, line: int) -> Iterator[tuple[FunctionInfo, str, int]]:
        """``model, opt = runner.prepare(model, opt)`` (or ``self.model, ... =``, in any method
        of the class): a callee that returns the arguments it was given, each element of its
        tuple one of its parameters; (caller, argument, line) of the argument ``name`` takes."""
        key = (fn.qualname, name)
        if key in self._handing:  # asked again while resolving the call that hands it back
            return
        self._handing.add(key)
        try:
            yield from self._handed_back_uncached(fn, name, line)
        finally:
            self._handing.discard(key)

    def _handed_back_uncached(self, fn: FunctionInfo, name: str,
                              line: int) -> Iterator[tuple[FunctionInfo, str, int]]:
        unpacked = [(fn, e) for e in self._unpacking_calls(fn).get(name, ())]
        if name.startswith("self.") and fn.class_name in self.classes:
            unpacked += [(scope, e) for scope, e in self._class_unpacking_calls(fn.class_name).get(name, ())
                         if scope is not fn]
        for scope, event in unpacked:
            if scope is fn and event.span.line > line:
                continue
            position = event.targets.index(name)
            for q in self.resolve_call(event, scope):
                callee = self.functions.get(q)
                for value, _ in _returned_values(callee) if callee is not None else ():
                    items = top_level_items(value)
                    item = items[position].strip() if len(items) == len(event.targets) else ""
                    if item in callee.params and item not in ("self", "cls"):
                        bound = 1 if callee.params[:1] == ["self"] else 0
                        argument = event.argument(item, callee.params.index(item) - bound)
                        if re.fullmatch(r"[\w.]+", argument):
                            yield scope, argument, event.span.line

    def _unpacking_calls(self, fn: FunctionInfo) -> dict[str, list[Event]]:
        """target -> the calls of ``fn`` whose result is unpacked into several targets, that one
        among them (kept: asked for every name a construction is looked for)."""
        memo = self.memo("unpacking_calls")
        found = memo.get(fn.qualname)
        if found is None or found[0] is not fn.events:
            index: dict[str, list[Event]] = {}
            for e in fn.events:
                if e.kind == "call" and len(e.targets) > 1:
                    for target in dict.fromkeys(e.targets):
                        index.setdefault(target, []).append(e)
            found = memo[fn.qualname] = (fn.events, index)
        return found[1]

    def _class_unpacking_calls(self, class_name: str) -> dict[str, list[tuple[FunctionInfo, Event]]]:
        """target -> (method, call) of the unpacking calls of all the class's methods."""
        memo = self.memo("class_unpacking_calls")
        state = (self._generation, len(self.functions))
        found = memo.get(class_name)
        if found is None or found[0] != state:
            index: dict[str, list[tuple[FunctionInfo, Event]]] = {}
            for q in self.classes[class_name].methods:
                scope = self.functions.get(q)
                for target, events in self._unpacking_calls(scope).items() if scope else ():
                    index.setdefault(target, []).extend((scope, e) for e in events)
            found = memo[class_name] = (state, index)
        return found[1]

    def _passed_as(self, fn: FunctionInfo, name: str) -> Iterator[tuple[FunctionInfo, str, int]]:
        """(caller, argument, line) of the calls whose argument ``name`` holds in ``fn``: a
        parameter of ``fn``, or ``self.attr`` that the class's constructor binds from its own."""
        target, param = fn, name if name in fn.params else ""
        if name.startswith("self.") and fn.class_name and "." not in name[5:]:
            init = next((self.functions[q] for q in self.method_candidates(fn.class_name, "__init__")
                         if q in self.functions), None)
            bound = [e.bound_to(name)[0] for e in (init.events if init else ()) if e.kind == "assign"
                     and len(e.bound_to(name)) == 1]
            target, param = init, bound[0] if bound and init and bound[0] in init.params else ""
        if not param or param in ("self", "cls") or target is None:
            return
        position = target.params.index(param) - (1 if target.class_name and target.params[:1] == ["self"] else 0)
        for caller in self.graph.predecessors(target.qualname):
            caller_fn = self.functions.get(caller)
            for event in self.graph.calls(caller, target.qualname) if caller_fn else ():
                argument = self._argument_text(caller_fn, event, event.argument(param, position))
                if re.fullmatch(r"[\w.]+", argument) or CALL_ARGUMENT.fullmatch(argument):
                    yield caller_fn, argument, event.span.line

    @staticmethod
    def _argument_text(fn: FunctionInfo, event: Event, argument: str) -> str:
        """An argument of ``event`` as written, a call in it named by its own event, as imports
        resolve it (``Handler(...)`` -> ``pkg.handlers.Handler(...)``); "" when none is."""
        made = CALL_ARGUMENT.fullmatch(argument)
        if not made:
            return argument
        return next((f"{e.func}(...)" for e in fn.events if e.kind == "call"
                     and e is not event and e.span.within(event.span)
                     and e.func.rsplit(".", 1)[-1] == made.group(1).rsplit(".", 1)[-1]), "")

    def _constructed_as(self, fn: FunctionInfo, name: str, before_line: int) -> Iterator[str]:
        """The callees whose result ``fn`` (or, for ``self.attr``, its class) assigns to
        ``name``, latest first."""
        made = [(fn, line, callee)
                for line, callee in reversed(self._constructions(fn).get(name, ()))]
        if name.startswith("self.") and fn.class_name in self.classes:
            made += self._class_constructions(fn.class_name).get(name, ())
        for scope, line, callee in made:
            if scope is fn and line > before_line:
                continue
            if callee not in self.classes:
                self._load_module_of(callee)
            if callee not in self.classes:  # `from pkg import Model`: pkg re-exports it
                callee = self.reexported(callee) or callee
            yield self._constructor_class(callee) or callee

    def _class_constructions(self, cls: str) -> dict[str, list[tuple[FunctionInfo, int, str]]]:
        """name -> [(method, line, callee)] of the assignments of calls' results in the methods
        of ``cls``, each method's latest first, methods in order. A class's methods come with its
        file, so the table is made once (asked for every ``self.x`` an instance call reads)."""
        table = self._class_made.get(cls)
        if table is None:
            table = {}
            for q in self.classes[cls].methods:
                method = self.functions.get(q)
                for target, made in (self._constructions(method).items() if method else ()):
                    table.setdefault(target, []).extend((method, line, c) for line, c in reversed(made))
            self._class_made[cls] = table
        return table

    def _constructor_class(self, callee: str) -> Optional[str]:
        """The class an alternative constructor ``Cls.make`` builds: a classmethod that returns
        ``cls(...)`` (``GraphMAE.from_config(cfg)``)."""
        owner, _, name = callee.rpartition(".")
        if owner and owner not in self.classes:
            owner = self.reexported(owner) or owner
        if owner not in self.classes:
            return None
        method = self.function(f"{owner}.{name}")
        if method is None or "classmethod" not in method.decorators:
            return None
        built = any(e.kind == "call" and e.func == "cls" for e in method.events)
        return owner if built else None

    def instance_class(self, fn: FunctionInfo, name: str, before_line: int) -> Optional[str]:
        """The project class a local name (or ``self.attr``) was last built from, if known: by
        a constructor, or by the factory that returned it (``model = build_model(cfg)``)."""
        return next(self._object_classes_iter(fn, name, before_line, every=False), None)

    def _constructions(self, fn: FunctionInfo) -> dict[str, list[tuple[int, str]]]:
        """name -> [(line, callee)] of the calls whose result ``fn`` assigns to that name."""
        table = self._constructed.get(fn.qualname)
        if table is None:
            table = {}
            outer: Optional[Event] = None
            for event in fn.events:
                if event.kind == "call" and event.targets:
                    if outer is not None and event.targets == outer.targets \
                            and event.span.within(outer.span):
                        continue  # in `f(a)(g(b))`, `f(a)` and `g(b)` are not the value
                    outer = event if event.func.endswith("()") else None
                    # `f(a)(b)` keeps `()`: its value is what f's result returns; a lookup by
                    # a key (`lookup("sce")`) is its copy for that key
                    callee = self.copy_for(event.func, event) if event.func in self._keyed \
                        else event.func
                    for target in event.targets:
                        table.setdefault(target, []).append((event.span.line, callee))
            self._constructed[fn.qualname] = table
        return table

    def enclosing(self, fn: FunctionInfo) -> Optional[FunctionInfo]:
        """The function ``fn`` is defined in (a closure's), or None."""
        outer = self.functions.get(fn.qualname.rsplit(".", 1)[0])
        return outer if outer is not None and outer.name != MODULE_SCOPE else None

    def returned_closures(self, callee: str) -> list[str]:
        """The functions defined in ``callee`` that it returns by name (``return train_step``):
        what a call of its result runs."""
        fn = self.functions.get(callee)
        return [f"{callee}.{name}" for name, _ in (_returned_values(fn) if fn else ())
                if f"{callee}.{name}" in self.functions]

    def members(self, qualname: str) -> list[str]:
        """The functions defined inside ``qualname`` (a class's methods, the functions nested in
        them, its nested classes' methods), in the project's order."""
        count, index = self._members
        for fn in self.functions_since(count):
            parts = fn.qualname.split(".")
            for i in range(1, len(parts)):
                index.setdefault(".".join(parts[:i]), []).append(fn.qualname)
        self._members = (len(self.functions), index)
        return list(index.get(qualname, ()))

    def functions_since(self, count: int) -> list[FunctionInfo]:
        """The functions added after the first ``count``, in the project's order. Functions are
        only ever added (a lazy load appends a file's, a framework's loop its synthetic one), so
        an index over them is extended with these, never rebuilt."""
        return list(self.functions.values())[count:] if count != len(self.functions) else []

    def callees(self, qualname: str) -> list[str]:
        return self.graph.successors(qualname)

    def callers(self, qualname: str) -> list[str]:
        return self.graph.predecessors(qualname)

    def ancestors(self, qualname: str) -> set[str]:
        """Every function from which a chain of calls leads to ``qualname``."""
        return self.graph.reachable([qualname], backwards=True) - {qualname}

    def reachable_from(self, qualname: str) -> set[str]:
        """Every function a call to ``qualname`` may run, itself included."""
        return self.graph.reachable([qualname])

    def reachable_from_all(self, qualnames: Iterable[str]) -> set[str]:
        """Every function calls from any of ``qualnames`` may run, those included."""
        return self.graph.reachable(qualnames)

    def call_sites(self, caller: str, callee: str) -> list[Event]:
        return self.graph.calls(caller, callee)

    def events(self, kind: Optional[str] = None) -> Iterator[tuple[FunctionInfo, Event]]:
        for fn in list(self.functions.values()):
            for event in fn.events:
                if kind is None or event.kind == kind:
                    yield fn, event

    def rule_facts(self, code: str) -> Iterator[tuple[FileFacts, Any]]:
        for facts in list(self.files.values()):
            for value in facts.rule_facts.get(code, ()):
                yield facts, value

    def programs(self) -> list[Program]:
        """The programs the tree's entry points start (auditor/static/programs.py)."""
        if self._programs is None:
            self._imports = import_graph(self)
            for path, found in self._named_imports().items():  # plugins imported by name
                self._imports.setdefault(path, set()).update(found)
            self._programs = entry_programs(self, self._imports, self.root)
        return self._programs

    def programs_with(self, path: str) -> list[Program]:
        """The programs that run the file at ``path``; for library code, its own closure."""
        programs = self.programs()
        return programs_with(programs, self, self._imports, path)

    def share_program(self, *paths: str) -> bool:
        """Do the files at ``paths`` run in one program? Evidence spanning files must."""
        if len(set(paths)) < 2:
            return True
        return any(all(p in prog.files for p in paths) for prog in self.programs_with(paths[0]))

    def entry_points(self) -> list[str]:
        """Module bodies: where scripts start running."""
        return [q for q, fn in self.functions.items() if fn.name == MODULE_SCOPE]
