"""Configuration values: what constants an expression may hold on this program, and where each
one was written.

Rules see ``reduction=reduction``, ``w * loss``, ``model.to(dtype)``; the value that decides
whether it is a bug arrives from configuration, often through several files. :func:`values_of`
answers with every constant the expression may take (paths it cannot follow are left out), each
with the :class:`Source` that wrote it. It follows, demand-driven and across files:

* argparse: ``args.w_coord`` where ``args`` is what ``parser.parse_args()`` returned (directly or
  through a project function): the ``default=`` of the option whose dest is ``w_coord`` (what a
  run without the flag uses; ``store_true`` -> False);
* dicts: literals, ``dict(BASE, k=v)``, ``{**BASE, "k": v}``, copies, then ``cfg["k"] = v`` and
  ``cfg.update(...)`` before the read; ``cfg["k"]``, ``cfg.get("k", d)``, ``getattr(cfg, "k", d)``
  (the default when the dict lacks the key, or when nothing in the tree sets it:
  :func:`auditor.static.values.config_default`);
* module constants, imported ones too; dataclass-style config objects (``Config(k=v).k``,
  ``Config(**loaded).k``, ``dataclasses.replace(base, k=v)``, else the class-level default) and
  namespaces (``argparse.Namespace(**loaded)``);
* calls: a parameter is what each caller passes (or its default where a caller leaves it out);
  ``self.attr`` is what the class's methods assign (constructor arguments, so); a project
  function's result is what its returns give, for that call's arguments;
* ``a if c else b`` (both), ``-x``, and library names (``torch.bfloat16``) as :class:`Symbol`;
* configuration files: ``yaml.safe_load(f)`` / ``json.load(f)`` / ``tomllib.load(f)`` of ``open(path)`` (directly, or
  ``with open(path) as f``) where ``path`` is a constant (a literal, an option's default): the
  file's keys and values, each with its line there (:mod:`auditor.static.config_files`);
  ``OmegaConf.load(path)`` likewise, ``OmegaConf.merge`` (later keys win, nested ones key by key),
  and the attribute-style mappings of configuration libraries (``cfg.loss.weight`` of an
  ``OmegaConf``/``EasyDict``/``SimpleNamespace``: the key's values); the parameter of a
  ``@hydra.main`` entry point holds its primary config composed with its ``defaults`` groups.

Files are read with Python's ``ast`` on demand; statements are located through the project's
events (:mod:`auditor.static.dataflow`), so reaching definitions are the ones every rule sees.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import operator
import posixpath
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from auditor.static.config_files import SUFFIXES, ConfigFile, config_file, tree_configs
from auditor.static.dataflow import (_bound, _self_definitions, callers_of, definitions,
                                     statement_at, statements)
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo, Span
from auditor.static.path_values import SAME_PATH, SAME_PATH_METHODS, concat, join, own_file, parent
from auditor.static.project import Project
from auditor.static.values import UNKNOWN_VALUE, config_default

MAX_DEPTH = 24  # links followed for one answer (names, attributes, calls)
MAX_CALLERS = 20
MAX_VALUES = 16
# expressions evaluated for one answer: a bound for trees whose names chain without end
MAX_STEPS = 5000
LITERAL = "a literal"  # a constant written in code, not as a configuration's setting
# what parses a configuration file's text into data (the file is read here as data only)
FILE_LOADERS = {"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "json.loads",
                "tomllib.load", "tomllib.loads", "tomli.load", "tomli.loads", "toml.load", "toml.loads"}
# loaders given the file's path itself, and wrappers that make a mapping's keys attributes
PATH_LOADERS = {"omegaconf.OmegaConf.load"}
# `float(cfg.get("w", 1.0))`: the number a setting converts to
NUMBER_TYPES: dict[str, type] = {"float": float, "int": int}
# two keys this alike are one misspelt (`visible_weights` / `visible_weight`: 0.97;
# `mask_weight` / `mask_rate`: 0.6)
NEAR_KEY_RATIO = 0.88
ATTRIBUTE_MAPPINGS = {"omegaconf.OmegaConf.create", "easydict.EasyDict", "addict.Dict",
                      "munch.Munch", "munch.munchify", "types.SimpleNamespace", "argparse.Namespace"}
SECTION = "<section>"  # a bulk setter's target: whichever section object a key names
REPLACERS = {"dataclasses.replace", "copy.replace"}  # a copy of an object with some fields changed
MERGERS = {"omegaconf.OmegaConf.merge"}
OPENERS = {"open", "io.open", "builtins.open"}
COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a), ast.NotIn: lambda a, b: not operator.contains(b, a),
}
# keys by which a configuration file names the files it extends (Hydra's `defaults`, mmcv's
# `_base_`, yacs' `_BASE_`): read first, the file's own keys over theirs
INHERITS = ("defaults", "_base_", "_BASE_", "base", "bases", "inherit", "inherits", "extends")


@dataclass(frozen=True)
class Source:
    """Where a constant was written: ``path:line`` and what wrote it (``the default of --w-coord``)."""

    path: str
    line: int
    what: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


class Symbol(str):
    """A library name used as a value: ``torch.bfloat16``."""


@dataclass(eq=False)
class Table:
    """A dict's keys, each with the values it may hold."""

    entries: dict[Any, list["Value"]] = field(default_factory=dict)


@dataclass(eq=False)
class Options:
    """The namespace ``parser.parse_args()`` returns; ``path``: the file that parsed it."""

    path: str


@dataclass(eq=False)
class Instance:
    """An object of a project class built at a call (a dataclass config): its attributes are the
    call's keywords, else (``dataclasses.replace(base, k=v)``) the ``base`` object's, else the
    class-level defaults."""

    cls: str
    fn: FunctionInfo
    call: ast.Call
    index: int
    base: Optional["Value"] = None


@dataclass(eq=False)
class Value:
    value: Any  # float | int | str | bool | None | Symbol | Table | Options | Instance
    source: Source
    # a configuration default of a key the program never sets (``cfg.get("k", 1.0)``)
    default: bool = False
    # for a default: the key of the looked-up table spelt almost as the key asked for, and
    # its values (``cfg.get("visible_weights", 1.0)`` where the file sets ``visible_weight``)
    near: Optional[tuple[str, list["Value"]]] = None
    # None standing for what the command line names: an option without a default, ``sys.argv[i]``
    named: bool = False

    def describe(self) -> str:
        return f"{self.value!r} ({self.source.what}, {self.source.where})"


Env = dict[str, tuple[FunctionInfo, Optional[ast.expr], int]]  # parameter -> argument in the caller


def values_of(project: Project, fn: FunctionInfo, node: Union[str, ast.expr], line: int) -> list[Value]:
    """The constants the expression ``node`` (its text, or a node of ``fn``'s file) may hold in
    ``fn`` at ``line``; empty when none is known."""
    if isinstance(node, str):
        node = parsed(project, node, line)
        if node is None:
            return []
    evaluator = _evaluator(project)
    return _scalars(evaluator.expr(fn, node, _index_at(fn, line), None, 0))


def tables_of(project: Project, fn: FunctionInfo, node: Union[str, ast.expr], line: int) -> list[Value]:
    """The dicts the expression may hold in ``fn`` at ``line``, as :class:`Table` values (their
    keys, each with the constants it may hold); empty when none is known."""
    if isinstance(node, str):
        node = parsed(project, node, line)
        if node is None:
            return []
    found = _evaluator(project).expr(fn, node, _index_at(fn, line), None, 0)
    return [v for v in found if isinstance(v.value, Table)][:MAX_VALUES]


def parsed(project: Project, text: str, line: int) -> Optional[ast.expr]:
    """The expression ``text`` written at ``line``, parsed once: the evaluator keeps answers by
    node identity, so a node must live as long as they do."""
    kept = _evaluator(project).parsed
    key = (text.strip(), line)
    if key not in kept:
        try:
            node: Optional[ast.expr] = ast.parse(key[0], mode="eval").body
        except SyntaxError:
            node = None
        if node is not None:
            ast.increment_lineno(node, line - 1)  # sources name the file's lines
        kept[key] = node
    return kept[key]


def argument_values(project: Project, caller: FunctionInfo, call: Event, callee: FunctionInfo,
                    param: str) -> list[Value]:
    """The constants ``callee``'s parameter ``param`` may hold when ``call`` of ``caller``
    enters it: what the argument may hold there, or the parameter's default when the call leaves
    it out; empty when none is known (an unpacked ``*args``/``**kwargs`` may pass it)."""
    evaluator = _evaluator(project)
    node = evaluator._node_at(caller.path, call.span, (ast.Call,))
    arg = _argument(callee, call, node, param) if isinstance(node, ast.Call) else _STARRED
    if arg is _STARRED:
        return []
    return _scalars(evaluator.passed(caller, arg, _index_at(caller, call.span.line), callee, param, 0))


def files_read(project: Project) -> dict[str, str]:
    """The configuration files the project's answers read, with their text: answers kept across
    runs hold only while these stay the same."""
    return project.memo("config_values").setdefault("files_read", {})


def _evaluator(project: Project) -> "_Evaluator":
    """The project's evaluator (its answers kept across questions), with a fresh step bound."""
    memo = project.memo("config_values")
    evaluator = memo.get("evaluator")
    if evaluator is None or evaluator.project is not project:
        evaluator = memo["evaluator"] = _Evaluator(project)
    if evaluator.generation != project._generation:
        # files loaded or calls linked since: an answer may now follow further
        evaluator.answers.clear()
        evaluator.generation = project._generation
    evaluator.steps = MAX_STEPS
    return evaluator


def _index_at(fn: FunctionInfo, line: int) -> int:
    stmt = statement_at(fn, line)
    return stmt.index if stmt is not None else len(statements(fn))


def _scalars(values: list[Value]) -> list[Value]:
    return [v for v in values if not isinstance(v.value, (Table, Options, Instance))][:MAX_VALUES]


class _Evaluator:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.trees: dict[str, Optional[ast.Module]] = {}
        self.nodes: dict[str, dict[tuple[int, int], list[ast.AST]]] = {}
        self.lines: dict[str, list[str]] = {}
        # path -> (first line, last line, the statement until it is indexed, then None)
        self.indexed: set[ast.AST] = set()
        self.active: set[tuple] = set()  # questions being answered: cycles
        self.function_nodes: dict[str, Optional[ast.AST]] = {}
        self.configs: dict[str, list[str]] = {}  # the tree's configuration files, by kind
        self.files: dict[tuple[str, str], Optional[ConfigFile]] = {}  # (name, opener) -> read
        self.defs: dict[str, dict[str, list[ast.AST]]] = {}
        self.answers: dict[tuple, list[Value]] = {}
        self.generation = project._generation  # of the project the answers were found in
        self.parsed: dict[tuple[str, int], Optional[ast.expr]] = {}
        self.steps = MAX_STEPS
        self.with_names: dict[str, list[tuple[str, int, ast.expr]]] = {}  # `with open(p) as f`
        # argparse options by dest, indexed once per project generation: looking each up by a
        # scan of every call made the configuration values quadratic in the tree
        self._options: tuple[int, dict[str, list[tuple[FunctionInfo, Event]]]] = (-1, {})
        self._bulk: tuple[int, list[tuple[FunctionInfo, str, ast.expr, int]]] = (-1, [])

    # -- source -----------------------------------------------------------------------------------
    def _tree(self, path: str) -> Optional[ast.Module]:
        if path not in self.trees:
            text = self.project.source_text(path)
            try:
                self.trees[path] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError):
                self.trees[path] = None
            self.nodes[path] = {}
            self.lines[path] = text.splitlines() if text else []
        return self.trees[path]

    def _index_line(self, path: str, line: int) -> dict[tuple[int, int], list[ast.AST]]:
        """The statement and expression nodes of ``path`` by where they start (line, column as
        events count it), with those of the innermost statement covering ``line`` included
        (indexed when first asked about: most of a file never is)."""
        tree = self._tree(path)
        index, lines = self.nodes[path], self.lines[path]
        stmt, inner = None, _covering(tree.body if tree else [], line)
        while inner is not None:
            stmt, inner = inner, _covering(_inner_statements(inner), line)
        if stmt is not None and stmt not in self.indexed:
            self.indexed.add(stmt)
            todo: list[ast.AST] = [stmt]
            while todo:
                node = todo.pop()
                if isinstance(node, (ast.stmt, ast.expr)):
                    index.setdefault((node.lineno, _char(lines, node.lineno, node.col_offset)), []).append(node)
                # a nested statement covers other lines: it is indexed when one of them is asked
                todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
        return index

    def _node_at(self, path: str, span: Span, kinds: tuple[type, ...]) -> Optional[ast.AST]:
        """The node of one of ``kinds`` at an event's span (``f(x).to(d)`` and ``f(x)`` start
        at the same place: the end tells them apart)."""
        index = self._index_line(path, span.line)
        found = [n for n in index.get((span.line, span.column), []) if isinstance(n, kinds)]
        lines = self.lines[path]
        return next((n for n in found if n.end_lineno == span.end_line
                     and _char(lines, n.end_lineno, n.end_col_offset) == span.end_column),
                    found[0] if found else None)

    def _function_node(self, fn: FunctionInfo) -> Optional[ast.AST]:
        if fn.qualname not in self.function_nodes:
            defs = self._defs(fn.path)
            self.function_nodes[fn.qualname] = next(
                (n for n in defs.get(fn.name, ()) if n.lineno >= fn.span.line), None
            ) if fn.span is not None else None
        return self.function_nodes[fn.qualname]

    def _defs(self, path: str) -> dict[str, list[ast.AST]]:
        """The file's function definitions by name, in line order: one walk of the file, not
        one per function asked about."""
        if path not in self.defs:
            tree = self._tree(path)
            found: dict[str, list[ast.AST]] = {}
            for n in ast.walk(tree) if tree is not None else ():
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.setdefault(n.name, []).append(n)
            for nodes in found.values():
                nodes.sort(key=lambda n: n.lineno)
            self.defs[path] = found
        return self.defs[path]

    def _module_fn(self, fn: FunctionInfo) -> Optional[FunctionInfo]:
        return self.project.functions.get(f"{fn.module}.{MODULE_SCOPE}")

    def _source(self, fn: FunctionInfo, node: ast.AST, what: str) -> Source:
        return Source(fn.path, getattr(node, "lineno", 0), what)

    # -- expressions ------------------------------------------------------------------------------
    def expr(self, fn: FunctionInfo, node: ast.expr, index: int, env: Optional[Env], depth: int) -> list[Value]:
        self.steps -= 1
        if depth > MAX_DEPTH or self.steps < 0:
            return []
        key = (fn.qualname, id(node), index)  # trees are kept: a node's id is stable
        if key in self.active:
            return []
        # answers outside any call's bindings are kept: without them the same definitions are
        # followed again from every use, exponentially in the chains of names
        done = (key, depth) if env is None else None
        if done in self.answers:
            return self.answers[done]
        self.active.add(key)
        try:
            # a link (a name's definition, an attribute, a call) costs depth; a literal's parts do not
            link = isinstance(node, (ast.Name, ast.Attribute, ast.Call))
            out = self._expr(fn, node, index, env, depth + link)[:MAX_VALUES * 2]
        finally:
            self.active.discard(key)
        if done is not None and self.steps >= 0:  # an answer cut by the step bound is partial
            self.answers[done] = out
        return out

    def _expr(self, fn: FunctionInfo, node: ast.expr, index: int, env: Optional[Env], depth: int) -> list[Value]:
        if isinstance(node, ast.Constant):
            return [Value(node.value, self._source(fn, node, LITERAL))]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return [Value(-v.value, v.source, v.default) for v in self.expr(fn, node.operand, index, env, depth)
                    if isinstance(v.value, (int, float)) and not isinstance(v.value, bool)]
        if isinstance(node, ast.IfExp):
            return self.expr(fn, node.body, index, env, depth) + self.expr(fn, node.orelse, index, env, depth)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # `loaded or {}`: either
            return [v for operand in node.values for v in self.expr(fn, operand, index, env, depth)]
        if isinstance(node, ast.DictComp) and len(node.generators) == 1 \
                and _items_of(node.generators[0]) is not None:
            # `{k: wrap(v) for k, v in m.items()}`: a mapping rebuilt key by key holds m's keys
            # (those a filter drops, `if k != "name"`, too: a lookup asks for the others)
            return [v for v in self.expr(fn, _items_of(node.generators[0]), index, env, depth)
                    if isinstance(v.value, Table)]
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
            return self._compare(fn, node, index, env, depth)
        if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in node.elts):
            # a list of settings (`"transforms": []`): its items, as a tuple
            return [Value(tuple(e.value for e in node.elts), self._source(fn, node, LITERAL))]
        if isinstance(node, ast.JoinedStr):
            return self._joined(fn, node, index, env, depth)
        if isinstance(node, ast.Name):
            if node.id in ("__name__", "__package__") and not definitions(fn, node.id, index):
                # the module's own name, as the project names it (its package's for __package__)
                package = fn.path.endswith("__init__.py") or node.id == "__name__"
                return [Value(fn.module if package else fn.module.rpartition(".")[0],
                              self._source(fn, node, "the module's name"))]
            if node.id == "__file__" and not definitions(fn, node.id, index):
                own = own_file(fn.path, Path.cwd())
                return [Value(own, self._source(fn, node, "the script's own path"))] if own else []
            return self._name(fn, node.id, index, env, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
            return self._path_op(fn, node, index, env, depth)
        if isinstance(node, ast.Dict):
            return [Value(self._dict(fn, node, index, env, depth), self._source(fn, node, "a dict literal"))]
        if isinstance(node, ast.Attribute):
            return self._attribute(fn, node, index, env, depth)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "parents" and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, int) and node.slice.value >= 0:  # `path.parents[1]`
            return _paths([(parent(v.value, node.slice.value + 1), v.source)
                           for v in self.expr(fn, node.value.value, index, env, depth) if isinstance(v.value, str)])
        if isinstance(node, ast.Subscript) and self._library_name(fn, node.value) == "sys.argv":
            return [Value(None, self._source(fn, node, "the command line"), named=True)]
        if isinstance(node, ast.Subscript):
            out = []
            keys = self.expr(fn, node.slice, index, env, depth)
            for base in self.expr(fn, node.value, index, env, depth):
                if isinstance(base.value, Table):
                    for key in keys:
                        if not _hashable(key.value):
                            continue
                        chosen = base.value.entries.get(key.value, [])
                        if (key.source.path, key.source.line) != (fn.path, node.lineno):
                            # a lookup table indexed by configuration: the key is where it was chosen
                            chosen = [Value(v.value, Source(key.source.path, key.source.line,
                                                            f"chosen by {key.value!r}"), v.default)
                                      for v in chosen]
                        out += chosen
            return out
        if isinstance(node, ast.Call):
            return self._call(fn, node, index, env, depth)
        return []

    def _mapping_class(self, fn: FunctionInfo, event: Event) -> bool:
        """A call building a project class derived from ``dict`` (an attribute-access dict),
        or ``cls(...)`` in one's classmethod: the mapping it is given."""
        named = fn.class_name if event.func == "cls" else event.func.removesuffix("()")
        named = named if named in self.project.classes else self.project.reexported(named) or ""
        return named in self.project.classes and any(
            b.rsplit(".", 1)[-1] == "dict" for b in self.project.bases_of(named))

    def _compare(self, fn: FunctionInfo, node: ast.Compare, index: int, env: Optional[Env],
                 depth: int) -> list[Value]:
        """``amp = cfg.precision == "bf16"``: a truth value for each pair of constants the two
        sides may hold, with the side that is no literal as its source."""
        op = COMPARE[type(node.ops[0])]
        lefts = _scalars(self.expr(fn, node.left, index, env, depth))
        rights = _scalars(self.expr(fn, node.comparators[0], index, env, depth))
        out: list[Value] = []
        for left, right in itertools.islice(itertools.product(lefts, rights), MAX_VALUES):
            try:
                result = bool(op(left.value, right.value))
            except TypeError:
                return []
            out.append(Value(result, right.source if left.source.what == LITERAL else left.source))
        return out

    def _dict(self, fn: FunctionInfo, node: ast.Dict, index: int, env: Optional[Env], depth: int) -> Table:
        table = Table()
        for key, value in zip(node.keys, node.values):
            if key is None:  # `**base`
                for base in self.expr(fn, value, index, env, depth):
                    if isinstance(base.value, Table):
                        _merge(table, base.value)
                continue
            if isinstance(key, ast.Constant) and _hashable(key.value):
                table.entries[key.value] = _entry(key.value, self.expr(fn, value, index, env, depth))
        return table

    def _name(self, fn: FunctionInfo, name: str, index: int, env: Optional[Env], depth: int) -> list[Value]:
        """What ``name`` may hold before statement ``index`` of ``fn``. Asked of every earlier
        ``cfg["k"] = v`` of a chain of them, each with the definitions its branches leave: kept
        per (name, index), or the chain is walked once per path through it, exponentially."""
        if name in ("True", "False", "None"):
            return []
        self.steps -= 1
        if self.steps < 0:
            return []
        key = ("name", fn.qualname, name, index, depth)
        if env is None and key in self.answers:
            return self.answers[key]
        if key in self.active:
            return []
        self.active.add(key)
        try:
            out = self._name_uncached(fn, name, index, env, depth)
        finally:
            self.active.discard(key)
        if env is None and self.steps >= 0:
            self.answers[key] = out
        return out

    def _name_uncached(self, fn: FunctionInfo, name: str, index: int, env: Optional[Env],
                       depth: int) -> list[Value]:
        found = definitions(fn, name, index)
        if found:
            out: list[Value] = []
            for stmt in found:
                out += self._definition(fn, stmt.index, stmt.head, name, env, depth)
            return self._updated(fn, name, found[0].index, index, out, env, depth)
        if name in fn.params:
            return self._parameter(fn, name, env, depth)
        # a closure's free variable: that of the nearest enclosing function binding it (a
        # decorator factory's parameter read in the wrapper of its decorator)
        outer = self.project.enclosing(fn)
        while outer is not None and outer.name != MODULE_SCOPE:
            if name in outer.params or definitions(outer, name, len(statements(outer))):
                return self._name(outer, name, len(statements(outer)), None, depth)
            outer = self.project.enclosing(outer)
        module = self._module_fn(fn)
        if module is not None and module is not fn and definitions(module, name, len(statements(module))):
            return self._name(module, name, len(statements(module)), None, depth)
        facts = self.project.files.get(fn.path)
        target = facts.imports.get(name) if facts is not None else None
        if target and "." in target:
            owner, attr = target.rsplit(".", 1)
            other = self.project.function(f"{owner}.{MODULE_SCOPE}")
            if other is not None:
                return self._name(other, attr, len(statements(other)), None, depth)
        return []

    def _definition(self, fn: FunctionInfo, at: int, head: Event, name: str, env: Optional[Env],
                    depth: int) -> list[Value]:
        if head.kind != "assign":
            return []
        stmt = self._node_at(fn.path, head.span, (ast.Assign, ast.AnnAssign))
        if stmt is None or stmt.value is None:
            return []
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name or _dotted(target) == name:
                return self.expr(fn, stmt.value, at, env, depth)
            if isinstance(target, ast.Subscript) and _dotted(target.value) == name:
                # `cfg["k"] = v`: what `cfg` held before, with `k` set
                before = self._name(fn, name, at, env, depth) if "." not in name else []
                merged = self._merged_in_loop(fn, stmt, target, at, env, depth)
                if merged:
                    return [Value(_merged(b.value, m.value), b.source) for b in before
                            if isinstance(b.value, Table) for m in merged]
                if not isinstance(target.slice, ast.Constant) or not _hashable(target.slice.value):
                    return before
                key = target.slice.value
                value = _entry(key, self.expr(fn, stmt.value, at, env, depth))
                return [Value(_with(b.value, {key: value}), b.source) for b in before
                        if isinstance(b.value, Table)]
            keys = _nested_keys(target, name)
            if keys is not None:
                # `cfg["runner"]["init_file"] = v`: what `cfg` held before, that entry set
                before = self._name(fn, name, at, env, depth) if "." not in name else []
                value = _entry(keys[-1], self.expr(fn, stmt.value, at, env, depth))
                return [Value(_with_nested(b.value, keys, value), b.source) for b in before
                        if isinstance(b.value, Table)]
            if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                for part, value in zip(target.elts, stmt.value.elts):
                    if isinstance(part, ast.Name) and part.id == name or _dotted(part) == name:
                        return self.expr(fn, value, at, env, depth)
            if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name) \
                    and target.elts[0].id == name and isinstance(stmt.value, ast.Call) \
                    and isinstance(stmt.value.func, ast.Attribute) \
                    and stmt.value.func.attr == "parse_known_args":
                return self.expr(fn, stmt.value, at, env, depth)  # `known, rest = ...`: the options
        return []

    def _merged_in_loop(self, fn: FunctionInfo, stmt: ast.stmt, target: ast.Subscript, at: int,
                        env: Optional[Env], depth: int) -> list[Value]:
        """``for k, v in m.items(): out[k] = v`` (or ``= merge(out[k], v)``, a deep merge's
        recursion): the tables ``m`` may hold, whose keys this statement sets in ``out``."""
        if not isinstance(target.slice, ast.Name):
            return []
        node = self._function_node(fn) if fn.name != MODULE_SCOPE else self._tree(fn.path)
        for loop in ast.walk(node) if node is not None else ():
            if isinstance(loop, ast.For) and _items_loop(loop, stmt.lineno) \
                    and isinstance(loop.target.elts[0], ast.Name) \
                    and loop.target.elts[0].id == target.slice.id \
                    and isinstance(loop.target.elts[1], ast.Name) \
                    and any(isinstance(n, ast.Name) and n.id == loop.target.elts[1].id
                            for n in ast.walk(stmt.value)):
                return [v for v in self.expr(fn, loop.iter.func.value, at, env, depth)  # type: ignore[attr-defined]
                        if isinstance(v.value, Table)]
        return []

    def _updated(self, fn: FunctionInfo, name: str, start: int, stop: int, values: list[Value],
                 env: Optional[Env], depth: int) -> list[Value]:
        """``name.update(...)`` calls between its definition and the read, and calls of project
        helpers that merge another mapping into it in place (``merge(cfg, loaded)`` whose body
        is ``for k, v in over.items(): base[k] = ...``)."""
        for stmt in statements(fn)[start + 1:stop]:
            for call in stmt.calls:
                node = self._node_at(fn.path, call.span, (ast.Call,)) \
                    if call.receiver == name and call.method == "update" \
                    or call.args[:1] == [name] and len(call.args) >= 2 else None
                if node is None:
                    continue
                if call.method == "update":
                    added = self._dict_call(fn, node, stmt.index, env, depth)
                    values = [Value(_with(v.value, added.entries), v.source) for v in values
                              if isinstance(v.value, Table)]
                elif len(node.args) >= 2 and self._merges_in_place(fn, call):
                    over = [o for o in self.expr(fn, node.args[1], stmt.index, env, depth)
                            if isinstance(o.value, Table)]
                    if over:
                        values = [Value(_merged(v.value, o.value), v.source) for v in values
                                  if isinstance(v.value, Table) for o in over]
        return values

    def _merges_in_place(self, fn: FunctionInfo, call: Event) -> bool:
        """The project function ``call`` runs writes its second parameter's items into its
        first (a deep merge in place)."""
        for q in self.project.resolve_call(call, fn):
            helper = self.project.function(q)
            if helper is None or len(helper.params) < 2:
                continue
            base, over = helper.params[:2]
            loop = re.compile(rf"for\s+\w+\s*,\s*\w+\s+in\s+\(?{over}\b.*\.items\(\)")
            if any(loop.match(e.text) for e in helper.events if e.kind == "assign") and any(
                    e.kind == "assign" and any(t == base or t.startswith(base + "[") for t in e.targets)
                    and "[" in e.text.split("=", 1)[0] for e in helper.events):
                return True
        return False

    def _parameter(self, fn: FunctionInfo, name: str, env: Optional[Env], depth: int) -> list[Value]:
        """What the callers pass (``env``: the one call being followed), else the default; the
        composed configuration for the parameter of a ``@hydra.main`` entry point."""
        if env is not None:
            caller, arg, at = env.get(name, (fn, None, 0))
            return self.passed(caller, arg, at, fn, name, depth)
        if fn.params[:1] == [name]:
            composed = self._hydra_config(fn)
            if composed is not None:
                return [composed]
        out: list[Value] = []
        for caller, event in callers_of(self.project, fn.qualname)[:MAX_CALLERS]:
            call = self._node_at(caller.path, event.span, (ast.Call,))
            if call is None:
                continue
            arg = _argument(fn, event, call, name)
            if arg is _STARRED:
                continue
            stmt = statement_at(caller, event.span.line)
            out += self.passed(caller, arg, stmt.index if stmt is not None else 0, fn, name, depth)
        return out

    def passed(self, caller: FunctionInfo, arg: Any, at: int, callee: FunctionInfo, name: str,
               depth: int) -> list[Value]:
        """What a call of ``caller`` passes for ``callee``'s parameter ``name`` (``arg`` as
        :func:`_argument` gives it): the argument, the default when the call leaves it out, an
        unpacked mapping's entry for it, else the default (a key the mapping lacks)."""
        if arg is None:
            return self._default(callee, name, depth)
        if not isinstance(arg, _Unpacked):
            return self.expr(caller, arg, at, None, depth)
        tables = [[t.value for t in self.expr(caller, m, at, None, depth + 1) if isinstance(t.value, Table)]
                  for m in arg.mappings]
        for held in reversed(tables):  # the last mapping that has the key gives it
            entries = [t.entries[name] for t in held if name in t.entries]
            if entries:
                return [v for entry in entries for v in _entry(name, entry)]
        return self._default(callee, name, depth) if any(tables) else []

    def _hydra_config(self, fn: FunctionInfo) -> Optional[Value]:
        """``@hydra.main(config_path=P, config_name=N)``: ``P/N.yaml`` (``P`` from the script's
        folder), composed with the groups its ``defaults`` list names (``- model: gat`` puts
        ``P/model/gat.yaml`` under ``model``), its own keys last, as Hydra does by default."""
        node = self._function_node(fn)
        deco = next((d for d in (node.decorator_list if node is not None else ())
                     if isinstance(d, ast.Call) and self._library_name(fn, d.func) == "hydra.main"), None)
        if deco is None:
            return None
        given = {k.arg: k.value.value for k in deco.keywords
                 if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
        folder = posixpath.normpath(posixpath.join(posixpath.dirname(fn.path), given.get("config_path", ".")))
        primary = self._config_at(folder, given.get("config_name", ""))
        if primary is None:
            return None
        own = _file_value(primary, primary.data, ())
        if own is None or not isinstance(own.value, Table):
            return own
        composed = Table({})
        for item in primary.data.get("defaults") or []:
            group, option = next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 \
                else ("", item)
            if not isinstance(option, str) or option == "_self_":
                continue
            part = self._config_at(posixpath.join(folder, str(group)), option)
            value = _file_value(part, part.data, ()) if part is not None else None
            if value is not None and isinstance(value.value, Table):
                composed = _merged(composed, Table({group: [value]}) if group else value.value)
        return Value(_merged(composed, own.value), own.source)

    def _config_at(self, folder: str, name: str) -> Optional[ConfigFile]:
        """The Hydra config ``folder/name.yaml``, read (and noted as read); None if it is not."""
        if not name or folder.startswith(".."):
            return None
        found = config_file(posixpath.join(folder, name.removesuffix(".yaml") + ".yaml"), "", Path.cwd())
        if found is not None:
            files_read(self.project)[found.path] = found.text
        return found

    def _default(self, fn: FunctionInfo, name: str, depth: int) -> list[Value]:
        node = self._function_node(fn)
        if node is None:
            return []
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        module = self._module_fn(fn) or fn
        for arg, default in pairs:
            if arg.arg == name:
                return [Value(v.value, Source(fn.path, default.lineno, f"the default of `{name}`"), v.default)
                        for v in self.expr(module, default, len(statements(module)), None, depth)]
        return []

    def _attribute(self, fn: FunctionInfo, node: ast.Attribute, index: int, env: Optional[Env],
                   depth: int) -> list[Value]:
        chain = _dotted(node)
        if chain and chain.startswith("self.") and chain.count(".") == 1 and fn.class_name:
            out: list[Value] = []
            for method, stmt in _self_definitions(self.project, fn, chain)[:MAX_CALLERS]:
                out += self._definition(method, stmt.index, stmt.head, chain, None, depth)
            return out
        facts = self.project.files.get(fn.path)
        root = chain.split(".", 1)[0] if chain else ""
        if chain and facts is not None and root in facts.imports and not definitions(fn, root, index) \
                and root not in fn.params:
            return [Value(Symbol(facts.imports[root] + chain[len(root):]), self._source(fn, node, "a library name"))]
        cls = self._class_named(fn, _dotted(node.value), index)
        if cls:  # `Config.config`: a class attribute
            return self._class_default(cls, node.attr, depth)
        out = []
        for base in self.expr(fn, node.value, index, env, depth):
            out += self._member(base, node.attr, depth)
        return out

    def _class_named(self, fn: FunctionInfo, chain: str, index: int) -> str:
        """The project class a name chain of ``fn`` names (imported or of its module), or ''."""
        root = chain.split(".", 1)[0]
        if not root or root in fn.params or definitions(fn, root, index):
            return ""
        facts = self.project.files.get(fn.path)
        imported = facts.imports.get(root) if facts is not None else None
        for name in ([imported + chain[len(root):]] if imported else []) + [f"{fn.module}.{chain}"]:
            name = name if name in self.project.classes else self.project.reexported(name) or ""
            if name in self.project.classes:
                return name
        return ""

    def _member(self, base: Value, attr: str, depth: int) -> list[Value]:
        value = base.value
        if isinstance(value, Symbol):
            return [Value(Symbol(f"{value}.{attr}"), base.source)]
        if isinstance(value, str):  # a string has no attributes: the value is a path
            return _paths([(parent(value), base.source)]) if attr == "parent" else []
        if isinstance(value, (Options, Instance)):
            # set in bulk from a configuration (`for k, v in cfg.items(): setattr(args, k, v)`):
            # the file's value replaces the default where the file has the key
            bulk = self._bulk_set(value, attr, depth)
            if bulk:
                return bulk
        if isinstance(value, Options):
            return self._option(value, attr)
        if isinstance(value, Table):  # an attribute-style mapping (OmegaConf, EasyDict): its key
            return list(value.entries.get(attr, []))
        if isinstance(value, Instance):
            keyword = next((k.value for k in value.call.keywords if k.arg == attr), None)
            if keyword is not None:
                return self.expr(value.fn, keyword, value.index, None, depth)
            unpacked = [v for k in value.call.keywords if k.arg is None  # `Config(**loaded)`
                        for table in self.expr(value.fn, k.value, value.index, None, depth)
                        if isinstance(table.value, Table) for v in table.value.entries.get(attr, [])]
            if unpacked:
                return unpacked
            if value.base is not None:
                return self._member(value.base, attr, depth)
            return self._class_default(value.cls, attr, depth)
        return []

    def _bulk_set(self, obj: Any, attr: str, depth: int) -> list[Value]:
        """``attr`` of ``obj`` (parsed options, a config object) as a loop of ``setattr(x, k, v)``
        over a mapping's items sets it, where ``x`` may hold an object of the same kind: the
        mapping's entry for ``attr``. A mapping this evaluator does not follow (flattened, or
        one section picked by a run-time key) is looked up in the configuration files its
        function loads, at any depth."""
        out: list[Value] = []
        for fn, target, mapping, line in self._setters():
            index = _index_at(fn, line)
            if target == SECTION:
                if not isinstance(obj, Instance):
                    continue  # a section object of a nested configuration, picked by its key
            elif not any(_same_kind(h.value, obj)  # by name: answers are kept by node id
                         for h in self._name(fn, target, index, None, depth + 1)):
                continue
            tables = [v.value for v in self.expr(fn, mapping, index, None, depth + 1)
                      if isinstance(v.value, Table)]
            found = [v for t in tables for v in _deep_entry(t, attr)]
            if not found:
                files = [v.value for call in self._loads_before(fn, line)
                         for v in self._file_values(fn, call.args[0], index, None, depth + 1,
                                                    _kind(self._library_name(fn, call.func)))
                         if isinstance(v.value, Table)]
                found = [v for t in files for v in _deep_entry(t, attr)]
            out += found
        return out

    def _setters(self) -> list[tuple[FunctionInfo, str, ast.expr, int]]:
        """``for k, v in m.items(): setattr(x, k, v)`` loops of the project: (function, ``x``,
        ``m``, the loop's line), indexed once per project generation."""
        generation, found = self._bulk
        if generation != self.project._generation:
            found = []
            for fn, event in self.project.events("call"):
                if event.func != "setattr" or len(event.args) != 3:
                    continue
                node = self._function_node(fn) if fn.name != MODULE_SCOPE else self._tree(fn.path)
                loops = [n for n in (ast.walk(node) if node is not None else ())
                         if isinstance(n, ast.For) and _items_loop(n, event.span.line)]
                for loop in loops:
                    if event.args[1:] == [ast.unparse(t) for t in loop.target.elts] \
                            and event.args[0].isidentifier():
                        found.append((fn, event.args[0], loop.iter.func.value, loop.lineno))
                        # `for section, values in m.items(): sub = getattr(cfg, section)`, then
                        # this loop over `values.items()` sets `sub`'s fields: m's sections
                        found += [(fn, SECTION, outer.iter.func.value, loop.lineno) for outer in loops
                                  if _sections_of(outer, loop, event.args[0])]
            self._bulk = (self.project._generation, found)
        return found

    def _loads_before(self, fn: FunctionInfo, line: int) -> list[ast.Call]:
        """The configuration loader calls (``json.load(f)``) of ``fn`` above ``line``."""
        node = self._function_node(fn) if fn.name != MODULE_SCOPE else self._tree(fn.path)
        return [n for n in (ast.walk(node) if node is not None else ())
                if isinstance(n, ast.Call) and n.args and n.lineno < line
                and self._library_name(fn, n.func) in FILE_LOADERS]

    def _option(self, options: Options, dest: str) -> list[Value]:
        """The default of the argparse option whose dest is ``dest`` (those the parsing file adds,
        else any file's)."""
        found = self._options_by_dest().get(dest, [])
        local = [item for item in found if item[0].path == options.path]
        out = []
        for fn, event in local or found:
            node = self._node_at(fn.path, event.span, (ast.Call,))
            if node is None:
                continue
            flag = next((a.value for a in node.args if isinstance(a, ast.Constant)), dest)
            source = Source(fn.path, event.span.line, f"the default of `{flag}`")
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            action = next((k.value.value for k in node.keywords if k.arg == "action"
                           and isinstance(k.value, ast.Constant)), None)
            if default is not None:
                stmt = statement_at(fn, event.span.line)
                out += [Value(v.value, source, named=v.value is None) for v in
                        self.expr(fn, default, stmt.index if stmt else 0, None, 0)]
            elif action in ("store_true", "store_false"):
                out.append(Value(action == "store_false", source))
            else:
                out.append(Value(None, source, named=True))
        return out

    def _options_by_dest(self) -> dict[str, list[tuple[FunctionInfo, Event]]]:
        generation, index = self._options
        if generation != self.project._generation:
            index = {}
            for fn, event in self.project.events("call"):
                if event.method == "add_argument":
                    index.setdefault(_dest(event), []).append((fn, event))
            self._options = (self.project._generation, index)
        return index

    def _class_default(self, cls: str, attr: str, depth: int) -> list[Value]:
        info = self.project.classes.get(cls)
        module = self.project.function(f"{cls.rsplit('.', 1)[0]}.{MODULE_SCOPE}")
        if info is None or info.span is None or module is None:
            return []
        tree = self._tree(module.path)
        name = cls.rsplit(".", 1)[-1]
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name
                     and n.lineno >= info.span.line), None) if tree else None
        for stmt in node.body if node is not None else []:
            target = stmt.target if isinstance(stmt, ast.AnnAssign) else \
                stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
            if isinstance(target, ast.Name) and target.id == attr and stmt.value is not None:
                value = stmt.value
                source = Source(module.path, stmt.lineno, f"the default of `{name}.{attr}`")
                if isinstance(value, ast.Call) and _dotted(value.func) in ("field", "dataclasses.field"):
                    factory = next((k.value for k in value.keywords if k.arg == "default_factory"), None)
                    nested = self._class_named(module, _dotted(factory), len(statements(module))) \
                        if factory is not None else ""
                    if nested:  # `model: ModelConfig = field(default_factory=ModelConfig)`
                        made = ast.Call(func=factory, args=[], keywords=[])
                        return [Value(Instance(nested, module, made, len(statements(module))), source)]
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                if value is None:
                    return []
                return [Value(v.value, source)
                        for v in self.expr(module, value, len(statements(module)), None, depth)]
        return []

    # -- calls ------------------------------------------------------------------------------------
    def _call(self, fn: FunctionInfo, node: ast.Call, index: int, env: Optional[Env], depth: int) -> list[Value]:
        func = _dotted(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if func == "dict":
            return [Value(self._dict_call(fn, node, index, env, depth), self._source(fn, node, "a dict"))]
        if func in ("copy.copy", "copy.deepcopy") and node.args or method == "copy" and not node.args:
            return self.expr(fn, node.args[0] if node.args else node.func.value, index, env, depth)
        if func in NUMBER_TYPES and len(node.args) == 1 and not node.keywords \
                and self.project.function(f"{fn.module}.{func}") is None:  # the builtin
            converted = [(v, _converted(NUMBER_TYPES[func], v.value))
                         for v in self.expr(fn, node.args[0], index, env, depth)]
            return [replace(v, value=number) for v, number in converted if number is not None]
        path_values = self._path_call(fn, node, index, env, depth)
        if path_values is not None:
            return path_values
        if method in ("parse_args", "parse_known_args"):
            return [Value(Options(fn.path), self._source(fn, node, "parsed options"))]
        if method == "get" and node.args:
            return self._lookup(fn, node, node.func.value, node.args[0], node.args[1:2], index, env, depth)
        if func == "getattr" and len(node.args) >= 2:
            return self._lookup(fn, node, node.args[0], node.args[1], node.args[2:3], index, env, depth)
        if self._library_name(fn, node.func) == "importlib.import_module" and node.args:
            # a module imported by a name computed from settings: what a getattr on it finds
            return [Value(Symbol(v.value), v.source) for v in self.expr(fn, node.args[0], index, env, depth)
                    if isinstance(v.value, str)]
        event = self._event_of(fn, node)
        if event is None:
            return []
        if event.func in FILE_LOADERS and node.args:
            return self._file_values(fn, node.args[0], index, env, depth, _kind(event.func))
        if event.func in PATH_LOADERS and node.args:
            return self._read(fn, node.args[0], index, env, depth, "yaml")
        if event.func in ATTRIBUTE_MAPPINGS or self._mapping_class(fn, event):
            if node.keywords and not node.args:  # `Namespace(lr=0.1, **loaded)`: a mapping of them
                return [Value(self._dict_call(fn, node, index, env, depth), self._source(fn, node, "a dict"))]
            return self.expr(fn, node.args[0], index, env, depth) if node.args else []
        if event.func in REPLACERS and node.args:
            return [Value(Instance(base.value.cls, fn, node, index, base), base.source)
                    for base in self.expr(fn, node.args[0], index, env, depth)
                    if isinstance(base.value, Instance)]
        if event.func in MERGERS and node.args:  # the later mappings' keys win
            merged: list[Value] = []
            for arg in node.args:
                tables = [v for v in self.expr(fn, arg, index, env, depth) if isinstance(v.value, Table)]
                merged = [Value(_merged(m.value, t.value), t.source) for m in merged for t in tables] \
                    if merged else tables
            return merged
        out: list[Value] = []
        named = event.func.removesuffix("()")
        self.project.function(f"{named}.__init__")  # loads the class's file when it was skipped
        named = named if named in self.project.classes else self.project.reexported(named) or ""
        if named in self.project.classes and f"{named}.__init__" not in self.project.functions:
            # a class without its own constructor (a dataclass): an object of its fields
            return [Value(Instance(named, fn, node, index), self._source(fn, node, "an object"))]
        for target in self.project.resolve_call(event, fn)[:4]:
            callee = self.project.function(target)
            cls = target if target in self.project.classes else \
                callee.class_name if callee is not None and callee.name == "__init__" else ""
            if cls:
                out.append(Value(Instance(cls, fn, node, index), self._source(fn, node, "an object")))
                continue
            if callee is None:
                continue
            bound: Env = {}
            for param in callee.params:
                arg = _argument(callee, event, node, param)
                if arg is not _STARRED:
                    bound[param] = (fn, arg, index)
            for stmt in statements(callee):
                if stmt.kind == "return":
                    ret = self._node_at(callee.path, stmt.head.span, (ast.Return,))
                    if ret is not None and ret.value is not None:
                        out += self.expr(callee, ret.value, stmt.index, bound, depth)
        return out

    # -- paths ------------------------------------------------------------------------------------
    def _path_op(self, fn: FunctionInfo, node: ast.BinOp, index: int, env: Optional[Env],
                 depth: int) -> list[Value]:
        """``base / "configs"`` and ``dirname(__file__) + "/x.yaml"`` on strings and paths."""
        lefts = [v for v in self.expr(fn, node.left, index, env, depth) if isinstance(v.value, str)]
        rights = [v for v in self.expr(fn, node.right, index, env, depth) if isinstance(v.value, str)] \
            if lefts else []
        op = join if isinstance(node.op, ast.Div) else concat
        return _paths([(op(left.value, right.value), left.source) for left in lefts for right in rights])

    def _path_call(self, fn: FunctionInfo, node: ast.Call, index: int, env: Optional[Env],
                   depth: int) -> Optional[list[Value]]:
        """``Path(p)``, ``str(p)``, ``os.path.join(a, b)``, ``p.resolve()``, ``p.joinpath(b)``:
        the paths they give; None for any other call."""
        func = self._library_name(fn, node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if func in SAME_PATH and len(node.args) == 1:
            return [v for v in self.expr(fn, node.args[0], index, env, depth) if isinstance(v.value, str)]
        if func == "os.path.dirname" and len(node.args) == 1:
            return _paths([(parent(v.value), v.source) for v in self.expr(fn, node.args[0], index, env, depth)
                           if isinstance(v.value, str)])
        if func == "os.path.join" and node.args or method == "joinpath":
            parts = node.args[1:] if func == "os.path.join" else node.args
            bases = self.expr(fn, node.args[0] if func == "os.path.join" else node.func.value, index, env, depth)
            texts = [[v.value for v in self.expr(fn, p, index, env, depth) if isinstance(v.value, str)][:1]
                     for p in parts]
            if not all(texts):
                return []
            return _paths([(join(b.value, *(t[0] for t in texts)), b.source) for b in bases
                           if isinstance(b.value, str)])
        if method in SAME_PATH_METHODS and not node.args:
            receivers = self.expr(fn, node.func.value, index, env, depth)
            return [v for v in receivers if isinstance(v.value, str)]
        return None

    def _library_name(self, fn: FunctionInfo, func: ast.expr) -> str:
        """A called name as imports resolve it (``Path`` -> ``pathlib.Path``)."""
        chain = _dotted(func)
        facts = self.project.files.get(fn.path)
        root = chain.split(".", 1)[0]
        if facts is not None and root in facts.imports:
            return facts.imports[root] + chain[len(root):]
        return chain

    def _file_values(self, fn: FunctionInfo, arg: ast.expr, index: int, env: Optional[Env],
                     depth: int, kind: str) -> list[Value]:
        """What a loader reads from ``arg``: ``open(path)`` (``.read()`` of it), or a name a
        ``with open(path) as f:`` before it binds; ``path`` a constant this evaluator finds."""
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "read":
            arg = arg.func.value
        if isinstance(arg, ast.Name):
            arg = self._opened_as(fn, arg)
        path = _opened_path(arg)
        return [] if path is None else self._read(fn, path, index, env, depth, kind)

    def _read(self, fn: FunctionInfo, path: ast.expr, index: int, env: Optional[Env],
              depth: int, kind: str) -> list[Value]:
        """The data of the configuration files ``path`` (an expression of ``fn``) may name; a
        path only the command line names may be any ``kind`` configuration file of the tree."""
        names = [v.value for v in self.expr(fn, path, index, env, depth) if isinstance(v.value, str)
                 or v.named]
        if names and not any(isinstance(n, str) for n in names):
            names = self._tree_configs(kind)
        out: list[Value] = []
        for name in names:
            found = self._config(name, fn.path) if isinstance(name, str) else None
            value = self._composed(found, frozenset()) if found is not None else None
            out += [value] if value is not None else []
        return out

    def _config(self, name: str, opener: str = "") -> Optional[ConfigFile]:
        """The configuration file ``name`` (see :func:`config_file`), read and parsed once."""
        if (name, opener) not in self.files:
            self.files[(name, opener)] = config_file(name, opener, Path.cwd())
        return self.files[(name, opener)]

    def _composed(self, found: ConfigFile, seen: frozenset[str]) -> Optional[Value]:
        """A configuration file's data over that of the files it names as its bases
        (``defaults: [../base.yaml]``, relative to it), each key with the line that wrote it."""
        files_read(self.project)[found.path] = found.text
        own = _file_value(found, found.data, ())
        if own is None or not isinstance(own.value, Table):
            return own
        base: Optional[Table] = None
        for parent in _bases(found):
            read = self._config(parent) if parent not in seen | {found.path} else None
            value = self._composed(read, seen | {found.path}) if read is not None else None
            if value is not None and isinstance(value.value, Table):
                base = value.value if base is None else _merged(base, value.value)
        if base is None:
            return own
        mine = Table({k: v for k, v in own.value.entries.items() if k not in INHERITS})
        return Value(_merged(base, mine), own.source)

    def _tree_configs(self, kind: str) -> list[str]:
        """The tree's ``kind`` configuration files under the folders of the project's files,
        but those another of them extends: a base is a set of defaults, not a run."""
        if kind not in self.configs:
            found = tree_configs(Path.cwd(), self.project.files, {kind})
            read = [f for f in (self._config(name) for name in found) if f is not None]
            bases = {b for f in read for b in _bases(f)}
            self.configs[kind] = [name for name in found if name not in bases]
        return self.configs[kind]

    def _opened_as(self, fn: FunctionInfo, name: ast.Name) -> Optional[ast.expr]:
        """The ``open(...)`` call of the nearest ``with ... as <name>:`` of ``fn`` above ``name``."""
        if fn.qualname not in self.with_names:  # walked once per function: asked per loader call
            body = self._function_node(fn) if fn.name != MODULE_SCOPE else self._tree(fn.path)
            self.with_names[fn.qualname] = [
                (item.optional_vars.id, node.lineno, item.context_expr)
                for node in (ast.walk(body) if body is not None else ())
                if isinstance(node, (ast.With, ast.AsyncWith))
                for item in node.items if isinstance(item.optional_vars, ast.Name)]
        found = [(expr, line) for bound, line, expr in self.with_names[fn.qualname]
                 if bound == name.id and line <= name.lineno]
        return max(found, key=lambda pair: pair[1])[0] if found else None

    def _event_of(self, fn: FunctionInfo, node: ast.Call) -> Optional[Event]:
        """The call event of ``fn`` that ``node`` is (when ``node`` comes from ``fn``'s file)."""
        self._tree(fn.path)
        lines = self.lines[fn.path]
        start = (node.lineno, _char(lines, node.lineno, node.col_offset))
        end = (node.end_lineno, _char(lines, node.end_lineno or 0, node.end_col_offset))
        return next((e for e in fn.events if e.kind == "call" and (e.span.line, e.span.column) == start
                     and (e.span.end_line, e.span.end_column) == end), None)

    def _dict_call(self, fn: FunctionInfo, node: ast.Call, index: int, env: Optional[Env], depth: int) -> Table:
        table = Table()
        for arg in node.args:
            for base in self.expr(fn, arg, index, env, depth):
                if isinstance(base.value, Table):
                    _merge(table, base.value)
        for keyword in node.keywords:
            if keyword.arg is None:  # `**base`
                for base in self.expr(fn, keyword.value, index, env, depth):
                    if isinstance(base.value, Table):
                        _merge(table, base.value)
            else:
                table.entries[keyword.arg] = _entry(keyword.arg, self.expr(fn, keyword.value, index, env, depth))
        return table

    def _joined(self, fn: FunctionInfo, node: ast.JoinedStr, index: int, env: Optional[Env],
                depth: int) -> list[Value]:
        """An f-string whose parts are constants: each text it may make (``f"{pkg}.{name}"``)."""
        texts: list[tuple[str, Optional[Source]]] = [("", None)]
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                pieces = [(part.value, None)]
            elif isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
                pieces = [(str(v.value), v.source) for v in self.expr(fn, part.value, index, env, depth)
                          if isinstance(v.value, (str, int))]
            else:
                return []
            texts = [(a + b, bs or src) for (a, src), (b, bs) in itertools.product(texts, pieces)][:MAX_VALUES]
        return [Value(text, src or self._source(fn, node, LITERAL)) for text, src in texts]

    def _lookup(self, fn: FunctionInfo, node: ast.Call, base: ast.expr, key: ast.expr,
                default: list[ast.expr], index: int, env: Optional[Env], depth: int) -> list[Value]:
        """``m.get(k, d)`` / ``getattr(m, k, d)``: the entry, else the default."""
        keys = [k.value for k in self.expr(fn, key, index, env, depth) if isinstance(k.value, str)]
        attribute = isinstance(node.func, ast.Name)
        out: list[Value] = []
        missing = False
        bases = self.expr(fn, base, index, env, depth)
        for held in bases:
            for name in keys:
                if isinstance(held.value, Table) and not attribute:
                    found = held.value.entries.get(name)
                    out += found if found is not None else []
                    missing |= found is None
                else:
                    found_values = self._member(held, name, depth)
                    out += found_values
                    missing |= not found_values
        tables = [b.value for b in bases if isinstance(b.value, Table)]
        if not keys and isinstance(key, ast.Name) and not attribute and tables and all(
                isinstance(v.value, (int, float)) for t in tables for vs in t.entries.values() for v in vs):
            # `weights.get(t, 1.0)` by a key no constant names (a loop's): any entry of a table of
            # numbers (whether some key lacks one, and gets the default, is not known)
            return [v for t in tables for vs in t.entries.values() for v in vs]
        if not bases:  # a mapping not followed: its default only when nothing sets the key
            text = ast.unparse(node)
            missing = config_default(self.project, text) is not UNKNOWN_VALUE
        if missing and default:
            near = _near_key(keys[0], [b.value for b in bases if isinstance(b.value, Table)]) if keys else None
            out += [Value(v.value, self._source(fn, node, f"the default of `{keys[0] if keys else ast.unparse(key)}`"), True,
                          near) for v in self.expr(fn, default[0], index, env, depth)]
        return out


def _items_of(generator: ast.comprehension) -> Optional[ast.expr]:
    """``m`` of ``for k, v in m.items()``."""
    it = generator.iter
    if isinstance(generator.target, ast.Tuple) and len(generator.target.elts) == 2 \
            and isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
            and it.func.attr == "items" and not it.args:
        return it.func.value
    return None


def _bases(found: ConfigFile) -> list[str]:
    """The files a configuration file names as its bases, as paths of the tree (relative to
    the file; a name without a suffix takes the file's own)."""
    data = found.data if isinstance(found.data, dict) else {}
    named = next((data[k] for k in INHERITS if k in data), [])
    folder = posixpath.dirname(found.path)
    suffix = posixpath.splitext(found.path)[1]
    out = []
    for item in [named] if isinstance(named, str) else named if isinstance(named, list) else []:
        if isinstance(item, str) and item and item != "_self_":
            path = posixpath.normpath(posixpath.join(folder, item))
            out.append(path if posixpath.splitext(path)[1] else path + suffix)
    return out


def _kind(loader: str) -> str:
    """The kind of configuration file a loader (``json.load``) parses."""
    return next((kind for kind in set(SUFFIXES.values()) if kind in loader), "")


def _opened_path(call: Optional[ast.expr]) -> Optional[ast.expr]:
    """The path a call opens or reads: ``open(p)``, ``p.open()``, ``p.read_text()``."""
    if not isinstance(call, ast.Call):
        return None
    if _dotted(call.func) in OPENERS and call.args:
        return call.args[0]
    mode = call.args[0] if call.args else None
    if isinstance(call.func, ast.Attribute) and (call.func.attr == "read_text" or call.func.attr == "open" and (
            mode is None or isinstance(mode, ast.Constant) and mode.value in ("r", "rt", "rb"))):
        return call.func.value
    return None


def _paths(found: list[tuple[Any, Source]]) -> list[Value]:
    """Paths computed from values, those that left the tree (None) dropped."""
    return [Value(path, source) for path, source in found if path is not None]


def _file_value(found: ConfigFile, data: Any, at: tuple) -> Optional[Value]:
    """A configuration file's data at key path ``at``: a :class:`Table` of its keys, or the
    scalar or list of scalars (a tuple), with the line that writes it; None for anything else."""
    where = Source(found.path, found.lines.get(at, 1),
                   f"`{'.'.join(map(str, at))}` in {found.path}" if at else found.path)
    if isinstance(data, dict):
        entries = {k: [v] for k, v in ((k, _file_value(found, d, (*at, k))) for k, d in data.items()
                                       if _hashable(k)) if v is not None}
        return Value(Table(entries), where)
    if isinstance(data, list) and all(_hashable(d) for d in data):
        return Value(tuple(data), where)
    return Value(data, where) if data is None or isinstance(data, (str, int, float, bool)) else None


_STARRED = ast.Starred()  # an argument unpacked from `*args`: not followed


@dataclass(frozen=True)
class _Unpacked:
    """A parameter a call may pass by unpacking mappings (``cls(**section, **extra)``): the
    last one's entry for it that has one, else the parameter's default."""

    mappings: tuple[ast.expr, ...]


def _argument(callee: FunctionInfo, event: Event, call: ast.Call, name: str) -> Any:
    """The argument node ``call`` passes for ``callee``'s parameter ``name``; None when it leaves
    it to its default; :class:`_Unpacked` when ``**mapping`` may pass it; :data:`_STARRED` when
    ``*args`` may."""
    keyword = next((k for k in call.keywords if k.arg == name), None)
    if keyword is not None:
        return keyword.value
    if name not in callee.params:
        return None
    position = callee.params.index(name) - _bound(callee, event)
    if any(isinstance(a, ast.Starred) for a in call.args[:max(position + 1, 0)]):
        return _STARRED
    if 0 <= position < len(call.args):
        return call.args[position]
    unpacked = tuple(k.value for k in call.keywords if k.arg is None)
    return _Unpacked(unpacked) if unpacked else None


def _dest(event: Event) -> str:
    """The attribute an ``add_argument`` call stores to: ``dest=``, else its long option."""
    dest = event.kwargs.get("dest", "")
    if dest[:1] in "'\"" and dest:
        return dest.strip("'\"")
    flags = [a.strip("'\"") for a in event.args if a[:1] in "'\""]
    name = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
    return name.lstrip("-").replace("-", "_")



def _covering(statements: Iterable[ast.stmt], line: int) -> Optional[ast.stmt]:
    """The statement of ``statements`` whose lines (decorators included) hold ``line``."""
    for stmt in statements:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        if first <= line <= (stmt.end_lineno or stmt.lineno):
            return stmt
    return None


def _inner_statements(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """The statements directly in ``stmt``'s bodies, its handlers' and match cases' included."""
    for child in ast.iter_child_nodes(stmt):
        if isinstance(child, ast.stmt):
            yield child
        elif isinstance(child, (ast.excepthandler, ast.match_case)):
            yield from (c for c in ast.iter_child_nodes(child) if isinstance(c, ast.stmt))


def _char(lines: list[str], line: int, offset: Optional[int]) -> int:
    """A column as events count it (characters, from 1) from ast's (UTF-8 bytes, from 0)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if text.isascii():
        return (offset or 0) + 1
    return len(text.encode()[:offset or 0].decode(errors="replace")) + 1


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _entry(key: Any, values: list[Value]) -> list[Value]:
    """Values stored under a configuration key: a literal written there is that key's setting."""
    return [Value(v.value, Source(v.source.path, v.source.line, f"the configuration's `{key}`"), v.default)
            if v.source.what == LITERAL else v for v in values]


def _items_loop(loop: ast.For, line: int) -> bool:
    """``for k, v in m.items():`` holding ``line`` in its body."""
    it = loop.iter
    return isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 \
        and isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
        and it.func.attr == "items" and not it.args \
        and loop.body[0].lineno <= line <= (loop.body[-1].end_lineno or loop.body[-1].lineno)


def _sections_of(outer: ast.For, inner: ast.For, target: str) -> bool:
    """``outer`` walks a mapping of sections (``for name, values in m.items():``) whose body binds
    ``target`` to the section object of that name (``target = getattr(cfg, name)``), and
    ``inner`` walks that section's ``values``."""
    key, values = outer.target.elts
    walked = inner.iter.func.value  # type: ignore[attr-defined]
    if outer is inner or not (isinstance(walked, ast.Name) and isinstance(values, ast.Name)
                              and walked.id == values.id and isinstance(key, ast.Name)):
        return False
    return any(isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == [target]
               and isinstance(n.value, ast.Call) and ast.unparse(n.value.func) == "getattr"
               and len(n.value.args) >= 2 and ast.unparse(n.value.args[1]) == key.id
               for stmt in outer.body for n in ast.walk(stmt))


def _same_kind(held: Any, obj: Any) -> bool:
    """Both parsed options, or both objects of one class."""
    if isinstance(obj, Options):
        return isinstance(held, Options)
    return isinstance(held, Instance) and isinstance(obj, Instance) and held.cls == obj.cls


def _deep_entry(table: Table, key: str) -> list[Value]:
    """The values of ``key`` in ``table``, else in its nested tables at the first depth that
    has it (every section that has it)."""
    level = [table]
    for _ in range(4):
        found = [v for t in level for v in t.entries.get(key, [])]
        if found:
            return found
        level = [v.value for t in level for vs in t.entries.values() for v in vs
                 if isinstance(v.value, Table)]
        if not level:
            break
    return []


def _nested_keys(target: ast.expr, name: str) -> Optional[list[Any]]:
    """The constant keys of a store two or more levels into ``name`` (``name["a"]["b"]``)."""
    keys: list[Any] = []
    while isinstance(target, ast.Subscript):
        if not isinstance(target.slice, ast.Constant) or not _hashable(target.slice.value):
            return None
        keys.insert(0, target.slice.value)
        target = target.value
    return keys if len(keys) > 1 and _dotted(target) == name else None


def _with_nested(table: Table, keys: list[Any], value: list["Value"]) -> Table:
    """``table`` with the entry at the path ``keys`` set to ``value`` (the tables on the way
    copied, those not followed left as they are)."""
    if len(keys) == 1:
        return _with(table, {keys[0]: value})
    inner = [Value(_with_nested(v.value, keys[1:], value), v.source)
             for v in table.entries.get(keys[0], []) if isinstance(v.value, Table)]
    return _with(table, {keys[0]: inner}) if inner else table


def _merge(into: Table, other: Table) -> None:
    for key, values in other.entries.items():
        into.entries[key] = list(values)


def _with(table: Table, entries: dict[Any, list[Value]]) -> Table:
    out = Table(dict(table.entries))
    out.entries.update(entries)
    return out


def _merged(base: Table, over: Table) -> Table:
    """``over``'s keys over ``base``'s, nested tables merged key by key (``OmegaConf.merge``)."""
    out = Table(dict(base.entries))
    for key, values in over.entries.items():
        old = out.entries.get(key, [])
        if len(old) == 1 and len(values) == 1 and isinstance(old[0].value, Table) \
                and isinstance(values[0].value, Table):
            values = [Value(_merged(old[0].value, values[0].value), values[0].source)]
        out.entries[key] = values
    return out


def low_values(values: list[Value]) -> Iterator[Value]:
    """Values that are a low-precision floating dtype or its usual configuration spelling."""
    for v in values:
        if isinstance(v.value, Symbol) and v.value.rsplit(".", 1)[-1] in ("bfloat16", "float16", "half"):
            yield v


def _converted(kind: type, value: Any) -> Optional[Union[int, float]]:
    """``kind(value)`` as Python computes it, for a number or a numeric string (a setting written
    as text); None for anything else, or where Python raises (``int("0.5")``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return kind(value)
    except (ValueError, OverflowError):
        return None


def _near_key(key: str, tables: list[Table]) -> Optional[tuple[str, list[Value]]]:
    """The key of ``tables`` closest in spelling to ``key`` (a letter or two apart), with its
    values; None when none is that close."""
    # keys apart only in their digits are siblings (`loss_w1`, `loss_w2`), not a misspelling
    names = [k for t in tables for k in t.entries if isinstance(k, str) and k != key
             and re.sub(r"\d", "", k) != re.sub(r"\d", "", key)]
    close = difflib.get_close_matches(key, names, n=1, cutoff=NEAR_KEY_RATIO)
    if not close:
        return None
    return close[0], [v for t in tables for v in t.entries.get(close[0], ())]
