"""Taint-style data flow over the project's function summaries, shared by the rules.

The static pass keeps, per function, an ordered list of events (:mod:`auditor.static.facts`).
This module groups them into *statements* and follows values at statement granularity: the
targets of an assignment derive from every name it reads. Flows cross functions and files:
arguments into the callee's parameters, returns into the caller's targets, ``self.<attr>`` between
the methods of a class. A value is a local name of a function; ``self.h`` names are per class.

API (``project`` is a :class:`~auditor.static.project.Project`, ``fn`` a ``FunctionInfo``):

``statements(fn) -> list[Statement]``
    The statements of a function, each with its head event (assign / augassign / return / with,
    or the outermost call of an expression statement) and the call events inside it.
``flows_to(project, fn, names, start=0, stop=None) -> Flow``
    Where ``names`` (as of statement ``start``) flow: ``flow.values`` ((qualname, name) pairs),
    ``flow.steps`` (every statement the value passed through, in visiting order) and
    ``flow.sinks`` (the :class:`Sink` s reached: "is this value backpropagated").
``flows_from(project, fn, event, stop=None) -> Flow``
    The flow of the value one call expression produces (``pred.detach()``, ``F.mse_loss(...)``):
    into its statement's targets, into project functions it is an argument of, out through
    ``return`` to every caller. ``flows_from_statement`` does the same for a whole statement.
``stop(fn, statement, hit) -> bool``
    A rule's barrier: return True where the statement neutralises the value (a division by a
    count for GM401, an upcast to float32 for GM301); the flow does not pass that statement.
``sinks(project) -> list[Sink]``
    Every place a loss is backpropagated: ``x.backward()``, ``scaler.scale(x).backward()``,
    ``torch.autograd.backward/grad(x)``, ``accelerator.backward(x)``, ``manual_backward(x)``,
    and the value a Lightning ``training_step`` returns.
``derives_from_module(project, fn, names, index) -> Optional[Origin]``
    Backwards: the module call a value derives from (a call of an ``nn.Module`` instance, of a
    ``self.<submodule>``, a model method whose return derives from one, an ``nn.Parameter``).
``is_module_output(project, fn, event) -> bool``
    Whether a call returns a value carrying parameters' gradient.
``instance_classes(project, fn, name, index) -> set[str]``
    The classes (project qualnames or ``torch.nn.X``) the object held by ``name`` was built from,
    following assignments (every one that may reach, across branches), constructor arguments
    into ``self.<attr>``, parameters to callers, and factories: a function's returns, a class
    looked up and called (``MODELS[key](args)``, a classmethod returning ``cls(...)``), an
    attribute read off the result. Classes a registry lookup may give are narrowed to those that
    define every method the code calls on the object (``self.model.gcn_forward(g)``: only a
    class with ``gcn_forward`` can be it). A set of more than ``MAX_INSTANCE_CLASSES`` is left
    unknown.
``class_objects(project, fn, name, index) -> set[str]``
    The project classes ``name`` holds as classes: named, imported, looked up in a registry
    dict (its literal, its stores, a registering decorator's classes), returned by a function.
``call_targets(project, fn, event) -> list[str]``
    ``Project.resolve_call`` plus instance calls resolved through :func:`instance_classes`
    (``self.model(g)`` where ``self.model`` was a constructor argument runs ``GraphMAE.forward``).
``callers_of(project, qualname) -> list[(FunctionInfo, Event)]``
    Every call site of a function, loading skipped files that mention it (callers can live in
    files a rule's prefilter skipped).
``mentions(text, name) -> bool``, ``is_module_class(project, qualname) -> bool``,
``loss_calls(project, fn) -> list[Event]``: small shared predicates.

Everything is an over-approximation at statement level, with a few precise exceptions that keep
benign code quiet: values converted to Python numbers or numpy (``.item()``, ``.tolist()``,
``.numpy()``, ``float(...)``, ``len(...)``) and tensor metadata (``.shape``, ``.device``) do not
carry the flow. Results are cached on the project object, so rules can call freely.
"""

from __future__ import annotations

import builtins
import functools
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from auditor.static.conditions import excludes
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo, Span
from auditor.static.texts import outside_brackets, string_literal
from auditor.static.project import Project

# -- vocabulary ----------------------------------------------------------------------------------

SINK_WORDS = ("backward", "training_step", "autograd.grad")
BACKWARD_FUNCS = {"torch.autograd.backward", "torch.autograd.grad"}
WRAPPED_BACKWARD = ("backward", "manual_backward")  # accelerator.backward(loss), self.manual_backward
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"}
# results that are Python numbers, numpy arrays, strings or metadata: no gradient flows through
SCALAR_METHODS = {"item", "tolist", "numpy", "size", "dim", "numel", "nelement", "data_ptr",
                  "__len__", "stride", "is_contiguous", "element_size"}
SCALAR_FUNCS = {"float", "int", "len", "bool", "str", "round", "repr", "format", "print",
                "isinstance", "hasattr", "getattr", "type", "id", "hash", "range", "enumerate"}
METADATA_ATTRS = ("shape", "device", "dtype", "ndim", "requires_grad", "is_cuda", "grad_fn",
                  "size", "dim", "numel", "nelement", "item", "tolist", "names", "layout")
NOT_TENSOR_METHODS = {"parameters", "named_parameters", "state_dict", "buffers", "named_buffers",
                      "modules", "named_modules", "children", "train", "eval", "to", "cuda",
                      "cpu", "zero_grad", "apply", "register_buffer", "load_state_dict",
                      "requires_grad_", "half", "float", "double", "bfloat16", "type"}
# calls that hand back the module they were given (same parameters)
SHARING_METHODS = {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval",
                   "requires_grad_", "share_memory", "apply", "type", "to_empty", "zero_grad"}
SHARING_WRAPPERS = ("DistributedDataParallel", "DataParallel", "torch.compile", "torch.jit.script",
                    "torch.jit.trace", "prepare", "convert_sync_batchnorm")
# packages whose classes are never modules with parameters: the standard library, numerics, I/O
NOT_MODULE_PACKAGES = frozenset(sys.stdlib_module_names) | {
    "numpy", "scipy", "sklearn", "pandas", "tqdm", "yaml", "matplotlib", "networkx", "wandb",
    "tensorboardX", "omegaconf", "hydra", "rich", "PIL"}
# a library class named for the data it serves (`DglGraphPropPredDataset`, `GraphDataLoader`,
# `NeighborSampler`, an `Evaluator`): no parameters, whatever its package
DATA_CLASS_SUFFIXES = ("Dataset", "DataLoader", "Loader", "Sampler", "Evaluator")
MODEL_NAMES = {"model", "net", "network", "module", "student", "encoder", "decoder", "backbone",
               "gnn", "graphmae", "mae", "autoencoder"}
LOSS_FUNC_RE = re.compile(
    r"^torch\.nn\.functional\.(\w*loss\w*|cross_entropy|binary_cross_entropy\w*|kl_div|"
    r"nll_loss|cosine_embedding_loss|triplet_margin\w*)$|^torch\.nn\.\w*Loss$"
)
MAX_STEPS = 4000  # statements visited per flow: a bound for pathological projects
MAX_DEPTH = 8


# -- statements ----------------------------------------------------------------------------------


_ASSIGNING = ("assign", "augassign")  # the statements whose head binds its targets


@dataclass
class Statement:
    """One source statement of a function: its head event and the call events inside it."""

    index: int
    head: Event
    calls: list[Event] = field(default_factory=list)

    @property
    def kind(self) -> str:  # assign | augassign | return | with | call
        return self.head.kind

    @property
    def targets(self) -> list[str]:
        return list(self.head.targets) if self.kind in _ASSIGNING else []

    @property
    def uses(self) -> list[str]:
        names = list(self.head.uses)
        for call in self.calls:
            names += [u for u in call.uses if u not in names]
        return names

    @property
    def line(self) -> int:
        return self.head.span.line

    @property
    def text(self) -> str:
        return self.head.text

    def callee_names(self) -> set[str]:
        """Names read only as the callee of a call (``F.mse_loss``, ``self.encoder``)."""
        return {callee_text(call) for call in self.calls}


def callee_text(call: Event) -> str:
    """The callee as written locally (``self.encoder``, ``model``), which is what ``uses`` holds;
    names resolved through imports stay qualified."""
    if call.receiver and call.method:
        return f"{call.receiver}.{call.method}"
    return call.func.removesuffix("()")


def contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


def statements(fn: FunctionInfo) -> list[Statement]:
    return _statements_indexed(fn)[0]


def _statements_indexed(fn: FunctionInfo) -> tuple[list[Statement], dict[int, Statement]]:
    """The statements, and each event's statement by the event's id (statement_of is asked once
    per call by several rules: a scan each time made a long function's analysis quadratic)."""
    cached = _STATEMENTS.get(id(fn))
    if cached is not None and cached[0] is fn:
        return cached[1], cached[2]
    out: list[Statement] = []
    for event in fn.events:
        cur = out[-1] if out else None
        if event.kind == "call" and cur is not None:
            inside = contains(cur.head.span, event.span)
            if cur.kind == "with":  # only the `with` items, not its body
                inside = event.span.line == cur.head.span.line
            if inside:
                cur.calls.append(event)
                continue
        stmt = Statement(len(out), event)
        if event.kind == "call":
            stmt.calls.append(event)
        out.append(stmt)
    by_event = {id(c): stmt for stmt in out for c in stmt.calls}
    by_event.update((id(stmt.head), stmt) for stmt in out)
    _STATEMENTS[id(fn)] = (fn, out, by_event)
    return out, by_event


_STATEMENTS: dict[int, tuple[FunctionInfo, list[Statement], dict[int, Statement]]] = {}


def statement_of(fn: FunctionInfo, event: Event) -> Optional[Statement]:
    return _statements_indexed(fn)[1].get(id(event))


def statement_at(fn: FunctionInfo, line: int) -> Optional[Statement]:
    """The innermost statement whose span holds ``line``."""
    best: Optional[Statement] = None
    for stmt in statements(fn):
        span = stmt.head.span
        if span.line <= line <= span.end_line and stmt.kind != "with":
            best = stmt
    return best


_RETURNS_DETACHED = re.compile(r"return\s+\(?\s*(\w+)\s*\)?\s*\.\s*detach\(\s*\)\s*")


def stop_gradient_parameter(fn: FunctionInfo) -> Optional[str]:
    """The parameter ``fn`` returns detached and does nothing else with (``def sg(t): return
    t.detach()``): a call of it cuts its argument the way ``.detach()`` does."""
    returns = [e for e in fn.events if e.kind == "return"]
    if len(returns) != 1 or len([e for e in fn.events if e.kind != "call"]) != 1:
        return None
    m = _RETURNS_DETACHED.fullmatch(returns[0].text.strip())
    params = fn.params[1:] if fn.class_name and fn.params[:1] in (["self"], ["cls"]) else fn.params
    return m.group(1) if m and params[:1] == [m.group(1)] else None


# -- names in text -------------------------------------------------------------------------------


def mentions(text: str, name: str) -> bool:
    """``name`` occurs in ``text`` as a whole name (``x`` in ``f(x)``, not in ``xs`` or ``a.x``)."""
    return _whole_name_at(text, name, False)


def _carries(text: str, name: str) -> bool:
    """``name`` is read as a value somewhere in ``text``, not only for metadata (``x.shape``)."""
    if "…" in text or not mentions(text, name):
        return True  # shortened, or the name is not in this text (a `for` target): assume so
    return _whole_name_at(text, name, True)


_METADATA_AFTER = re.compile(r"\s*\.\s*(?:" + "|".join(METADATA_ATTRS) + r")\b")


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _whole_name_at(text: str, name: str, as_value: bool) -> bool:
    """``name`` in ``text``, not inside a longer name or after a dot (``as_value``: nor followed
    by a metadata attribute). Searched, not matched by a pattern per name: a project has
    thousands of names, and compiling a pattern for each cost more than the searches."""
    start = 0
    while (i := text.find(name, start)) >= 0:
        start = i + 1
        end = i + len(name)
        if i and (_word(text[i - 1]) or text[i - 1] == "."):
            continue
        if end < len(text) and _word(text[end]):
            continue
        if as_value and _METADATA_AFTER.match(text, end):
            continue
        return True
    return False


def _indexes_only(text: str, name: str) -> bool:
    """Every mention of ``name`` in ``text`` is inside a subscript (``mask`` of ``h[mask]``):
    an index selects what flows, it carries no gradient of its own."""
    depth, start, found = 0, 0, False
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif i >= start and text.startswith(name, i) and (not i or not (_word(text[i - 1]) or text[i - 1] == ".")) \
                and not (i + len(name) < len(text) and _word(text[i + len(name)])):
            if depth <= 0:
                return False
            found, start = True, i + len(name)
    return found


def _arg_carries(text: str, name: str) -> bool:
    """An argument's text carries ``name``; shortened texts (``f(...)``) may hide it."""
    if mentions(text, name):
        return _carries(text, name)
    return "(...)" in text or "…" in text


def _hit(stmt: Statement, live: set[str]) -> set[str]:
    hit = set()
    for use in stmt.uses:
        for name in live:
            if use == name or use.startswith(name + "."):
                hit.add(name)
    return {h for h in hit if _carries(stmt.text, h)} if stmt.text else hit


def _value_split(text: str) -> tuple[str, str]:
    """``(targets, value)`` of an assignment's text (``("", text)`` when it assigns nothing)."""
    m = re.search(r"(?<![=!<>])[-+*/%@&|^]?=(?!=)", text)
    return (text[: m.start()], text[m.end():].strip()) if m else ("", text)


_DETACHED_VALUE = re.compile(r"[\w.\[\]'\"]+\.detach\(\)")


def _only_detached(stmt: Statement) -> bool:
    """The assignment's value is nothing but detached tensors (``a, b = a.detach(), b.detach()``):
    what it binds carries no parameter's gradient."""
    value = _value_split(stmt.text)[1].strip()
    if value.endswith(".detach()") and _one_primary(value[: -len(".detach()")]):
        return True  # `self.teacher(g, x).detach()`
    return bool(_DETACHED_VALUE.search(value)) and not _DETACHED_VALUE.sub("", value).strip(" ,()")


def _one_primary(text: str) -> bool:
    """``text`` is one name, attribute, call or subscript chain (no operator or comma outside
    brackets)."""
    return bool(text) and all(_word(ch) or ch == "." for ch in outside_brackets(text))


def _value_text(stmt: Statement) -> str:
    if stmt.kind == "return":
        return stmt.text.removeprefix("return").strip()
    if stmt.kind in ("assign", "augassign"):
        return _value_split(stmt.text)[1]
    return stmt.text


def _balanced_call(value: str) -> bool:
    """``value`` is one call whose parentheses close at its very end (``float(a) + b`` is not)."""
    depth = 0
    start = value.find("(")
    if start < 0 or not value.endswith(")"):
        return False
    for i, ch in enumerate(value[start:], start):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i != len(value) - 1:
            return False
    return True


def is_scalar_conversion(stmt: Statement) -> bool:
    """The statement's value is a Python number / numpy array / string made from tensors."""
    value = _value_text(stmt)
    if "…" in value or not value:
        return False
    m = re.match(r"^([\w.]+)\(", value)
    if m and m.group(1) in SCALAR_FUNCS and _balanced_call(value):
        return True
    m = re.search(r"\.(\w+)\(\)$", value)
    return bool(m and m.group(1) in SCALAR_METHODS and _one_operand(value[:m.start()]))


def _one_operand(text: str) -> bool:
    """``text`` has no operator outside brackets: ``y.numel()`` is a number, ``loss / y.numel()``
    is not (a leading unary minus applies to the number)."""
    depth = 0
    for ch in text.lstrip("-"):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and ch in " +-*/%@<>=&|^,:~":
            return False
    return True


# -- sinks ---------------------------------------------------------------------------------------


@dataclass
class Sink:
    """A place where a value is backpropagated."""

    fn: FunctionInfo
    event: Event
    kind: str  # backward | autograd | wrapped | training_step
    scaled: bool  # through a GradScaler / an AMP-aware wrapper (accelerator.backward)

    @property
    def where(self) -> str:
        return f"{self.fn.path}:{self.event.span.line}"

    def describe(self) -> str:
        text = self.event.text if len(self.event.text) < 60 else self.event.text[:57] + "..."
        return f"`{text}` at {self.where}"


def sink_of(fn: FunctionInfo, call: Event) -> Optional[Sink]:
    func = call.func.removesuffix("()")
    if call.method == "backward" and not call.args:
        scaled = ".scale(" in call.receiver or "scale(" in call.receiver
        return Sink(fn, call, "backward", scaled)
    if func in BACKWARD_FUNCS:
        return Sink(fn, call, "autograd", False)
    if call.method in WRAPPED_BACKWARD and call.args:
        return Sink(fn, call, "wrapped", True)
    return None


def sinks(project: Project) -> list[Sink]:
    _load_sinks(project)
    out = []
    for fn in list(project.functions.values()):
        for stmt in statements(fn):
            out += _sinks_in(fn, stmt, stmt.calls)
    return out


def _load_sinks(project: Project) -> None:
    for word in SINK_WORDS:
        project.load_mentioning(word)


def _sinks_in(fn: FunctionInfo, stmt: Statement, hit_calls: Iterable[Event]) -> list[Sink]:
    out = []
    for call in hit_calls:
        sink = sink_of(fn, call)
        if sink is not None:
            out.append(sink)
    if stmt.kind == "return" and fn.name == "training_step":
        out.append(Sink(fn, stmt.head, "training_step", True))
    return out


# -- calls ---------------------------------------------------------------------------------------


def _cache(project: Project) -> dict:
    return project.memo("dataflow")


_HELD = re.compile(r"([\w.]+)\[[^\[\]]+\]")


def held_container(func: str) -> list[str]:
    """The container a called entry is read from (``m`` of ``m["encoder"]``, ``self.layers``
    of ``self.layers[i]``): a module a container module holds is part of that module."""
    held = _HELD.fullmatch(func)
    return [held.group(1)] if held else []


def _object_call(call: Event) -> str:
    """For a call of an object (``model(g)``, ``self.encoder(g)``, ``lin(x)``): that object's
    local text; else ""."""
    local = callee_text(call)
    if "(" in local or "[" in local:
        return ""
    if not call.method or call.receiver == "self":
        return local
    return ""


def call_targets(project: Project, fn: FunctionInfo, call: Event) -> list[str]:
    cache = _cache(project).setdefault("targets", {})
    key = (fn.qualname, call.span.line, call.span.column, call.func)
    if key in cache:
        return cache[key]
    cache[key] = []  # recursion guard
    found = list(project.resolve_call(call, fn))
    if not any(not t.endswith(".__init__") for t in found):
        idx = _index_of(fn, call)
        obj = _object_call(call)
        if obj:
            classes = instance_classes(project, fn, obj, idx)
            if not classes and obj.rsplit(".", 1)[-1].lower() in MODEL_NAMES:
                # `model(g, x)` on a model passed in from elsewhere: the project's model, when
                # there is no doubt which (a library defines dozens of root modules)
                roots = root_models(project)
                classes = roots if len(roots) <= 2 else set()
            for cls in classes:  # method_candidates loads the class's module on demand
                found += _methods(project, cls, "forward")
        if call.receiver and call.method and call.method not in NOT_TENSOR_METHODS:
            for cls in instance_classes(project, fn, call.receiver, idx):
                found += _methods(project, cls, call.method)
        held = _INDEXED.fullmatch(callee_text(call))
        if held:  # `self.layers[i](g, h)`: a module the container holds
            for cls in element_classes(project, fn, held.group(1)):
                found += _methods(project, cls, "forward")
    cache[key] = list(dict.fromkeys(found))
    return cache[key]


def _methods(project: Project, cls: str, name: str) -> list[str]:
    """The functions ``cls.name`` may run (its own or a base's), by their own qualnames."""
    return [fn.qualname for m in project.method_candidates(cls, name) for fn in [project.function(m)] if fn]


_INDEXED = re.compile(r"(self\.[\w.]+)\[[^\[\]()]*\]")


def element_classes(project: Project, fn: FunctionInfo, container: str) -> set[str]:
    """Classes of the modules the instance's container ``self.x`` holds: those appended to it
    (``self.x.append(C(...))``, ``insert``, ``extend``) or listed where it is assigned
    (``self.x = nn.ModuleList([C(...), D(...)])``), in the methods of ``fn``'s class."""
    out: set[str] = set()
    for method in _methods_of(project, {fn.class_name}) if fn.class_name else ():
        for stmt in statements(method):
            if container in stmt.targets or any(
                    c.receiver == container and c.method in ("append", "insert", "extend")
                    for c in stmt.calls):
                for c in stmt.calls:
                    out |= constructed_class(project, c)
    return out


def root_models(project: Project) -> set[str]:
    """Project module classes that no other class builds as a submodule: the candidate models."""
    cache = _cache(project)
    if cache.get("roots_size") == len(project.functions):
        return cache["roots"]
    modules = {q for q in project.classes if is_module_class(project, q)}
    inner: set[str] = set()
    for fn in list(project.functions.values()):
        if fn.class_name:
            for stmt in statements(fn):
                if any(t.startswith("self.") for t in stmt.targets):
                    for call in stmt.calls:
                        inner |= constructed_class(project, call)
    cache["roots"] = modules - inner
    cache["roots_size"] = len(project.functions)
    return cache["roots"]


def _index_of(fn: FunctionInfo, event: Event) -> int:
    stmt = statement_of(fn, event)
    return stmt.index if stmt is not None else len(statements(fn))


def callers_of(project: Project, qualname: str) -> list[tuple[FunctionInfo, Event]]:
    """Call sites of ``qualname``; skipped files mentioning its name are analysed first."""
    fn = project.function(qualname)
    if fn is None:
        return []
    cache = _cache(project)
    if fn.name == "forward" and fn.class_name:
        project.load_mentioning(fn.class_name.rsplit(".", 1)[-1])
        _load_sinks(project)  # the training loop calls `model(x)`, never `forward` by name
    elif fn.name == "__init__" and fn.class_name:
        project.load_mentioning(fn.class_name.rsplit(".", 1)[-1])
    else:
        project.load_mentioning(fn.name)
        for registry in project.registries_of(fn):  # `LOSSES[cfg.loss](...)` calls it too
            project.load_mentioning(registry.rsplit(".", 1)[-1])
        for name in project.partial_names(fn):  # `self.criterion = partial(fn, ...)`
            project.load_mentioning(name)
    # The index grows with the project (files are loaded on demand): each call event is resolved
    # once; an event nothing resolves yet is tried again, directly and through instance data
    # flow, when more functions are known. Calls into imported libraries are never retried.
    index = cache.setdefault("callers", {})
    if cache.get("callers_size") != len(project.functions) and not cache.get("instance_running"):
        cache["callers_size"] = len(project.functions)
        indexed = cache.setdefault("indexed", set())
        retry = cache.get("unresolved", [])
        fresh = [(c, e) for c in list(project.functions.values()) if c.qualname not in indexed
                 for e in c.events if e.kind == "call"]
        indexed.update(project.functions)
        unresolved: list[tuple[FunctionInfo, Event]] = []
        project_roots = {m.split(".")[0] for m in project.modules}
        libraries: dict[str, set[str]] = {}  # path -> the packages outside the project it imports
        cache["instance_running"] = True
        try:
            for caller, event in [*retry, *fresh]:
                targets = project.resolve_call(event, caller)
                if not targets:
                    library = libraries.get(caller.path)
                    if library is None:
                        facts = project.files.get(caller.path)
                        library = libraries[caller.path] = (
                            {q.split(".")[0] for q in facts.imports.values()} - project_roots
                            if facts else set())
                    if event.func.split(".")[0] in library:
                        continue
                    unresolved.append((caller, event))
                    # instance calls whose class is known only through data flow
                    targets = call_targets(project, caller, event)
                for target in targets:
                    entries = index.setdefault(target, [])
                    if (caller, event) not in entries:
                        entries.append((caller, event))
        finally:
            cache["instance_running"] = False
        cache["unresolved"] = unresolved
    return list(index.get(qualname, []))


def _bound(callee: FunctionInfo, call: Event) -> int:
    """How many leading parameters the call does not pass explicitly (``self``, ``cls``)."""
    if not callee.params or callee.params[0] not in ("self", "cls"):
        return 0
    # `Class.method(obj, x)` passes self explicitly; `obj.method(x)`, `Class(x)`, `obj(x)` do
    # not, nor a constant's method (`LOSSES.build(cfg)`: an all-caps name holds an instance)
    owner = call.receiver.rsplit(".", 1)[-1]
    explicit = (callee.params[0] == "self" and callee.name != "__init__"
                and call.method == callee.name and owner[:1].isupper() and not owner.isupper())
    return 0 if explicit else 1


def _param_for(callee: FunctionInfo, call: Event, arg_index: Optional[int], keyword: str) -> str:
    if keyword:
        return keyword if keyword in callee.params else ""
    assert arg_index is not None
    pos = arg_index + _bound(callee, call)
    return callee.params[pos] if pos < len(callee.params) else ""


def _args_matching(call: Event, pred: Callable[[str], bool]) -> list[tuple[Optional[int], str]]:
    out: list[tuple[Optional[int], str]] = []
    for i, text in enumerate(call.args):
        if not text.startswith("*") and pred(text):
            out.append((i, ""))
    for key, text in call.kwargs.items():
        if pred(text):
            out.append((None, key))
    return out


# -- forward flow --------------------------------------------------------------------------------

StopFn = Callable[[FunctionInfo, Statement, set[str]], bool]
# whether a value returned by ``event`` of a function may reach the call ``call`` of a caller
# (a return under a test that this call's arguments make false does not): (function, event,
# caller, call) -> bool
ReturnsFn = Callable[[FunctionInfo, Event, FunctionInfo, Event], bool]


@dataclass
class Step:
    fn: FunctionInfo
    stmt: Statement
    hit: set[str]  # the names of the flow the statement reads
    inner: Optional[Event] = None  # for the first statement: the expression the flow starts at


@dataclass
class Flow:
    values: set[tuple[str, str]] = field(default_factory=set)
    steps: list[Step] = field(default_factory=list)
    sinks: list[Sink] = field(default_factory=list)

    @property
    def backpropagated(self) -> bool:
        return bool(self.sinks)


def _rebound(stmt: Statement) -> set[str]:
    """The targets a statement rebinds: not those it writes into (``out[mask] = 0.0``)."""
    lhs = _value_split(stmt.text)[0]
    return {t for t in stmt.targets if not re.search(re.escape(t) + r"\s*\[", lhs)}


Context = tuple[tuple[FunctionInfo, Event], ...]  # call sites to return to, innermost last
MAX_CONTEXT = 4


class _Walker:
    """A worklist over (function, names, first statement, context). Returns are
    context-sensitive: a value that entered a function through one call's arguments returns to
    that call only; a value born inside a function returns to every caller."""

    def __init__(self, project: Project, stop: Optional[StopFn],
                 returns_to: Optional[ReturnsFn] = None) -> None:
        self.project = project
        self.stop = stop
        self.returns_to = returns_to
        self.origin: Optional[tuple[FunctionInfo, Event]] = None  # the event flows_from follows
        self.flow = Flow()
        self.todo: list[tuple[FunctionInfo, frozenset[str], int, Optional[Event], Context]] = []
        self.seen: set[tuple] = set()
        self.returned: set[tuple[str, int]] = set()  # (function, return event) left
        self.budget = MAX_STEPS

    def push(self, fn: FunctionInfo, names: Iterable[str], start: int,
             inner: Optional[Event] = None, context: Context = ()) -> None:
        names = frozenset(n for n in names if n)
        if not names and inner is None:
            return
        context = context[-MAX_CONTEXT:]
        key = (fn.qualname, names, start, id(inner) if inner is not None else 0,
               tuple(id(e) for _, e in context))
        if key not in self.seen:
            self.seen.add(key)
            self.todo.append((fn, names, start, inner, context))

    def run(self) -> Flow:
        while self.todo and self.budget > 0:
            fn, names, start, inner, context = self.todo.pop(0)
            self._function(fn, set(names), start, inner, context)
        self.flow.sinks = list({(id(s.event)): s for s in self.flow.sinks}.values())
        return self.flow

    def _order(self, fn: FunctionInfo, start: int) -> list[Statement]:
        stmts = statements(fn)
        if start >= len(stmts):
            return []
        order = stmts[start:]
        loops = set(stmts[start].head.loop_ids)
        if loops:  # the next iteration runs the loop's earlier statements with the new value
            order += [s for s in stmts[:start] if loops & set(s.head.loop_ids)]
        return order

    def _resolved(self, fn: FunctionInfo, call: Event) -> bool:
        """A call into project code other than a constructor: its value is what it returns."""
        return any(not t.endswith(".__init__") for t in call_targets(self.project, fn, call))

    def _direct(self, fn: FunctionInfo, stmt: Statement, hit: set[str],
                forced: Optional[Event]) -> bool:
        """Whether the statement's targets take the value directly, not only through the
        arguments of project functions (whose returns are followed precisely)."""
        if forced is not None:
            return not any(c is not forced and contains(c.span, forced.span) and self._resolved(fn, c)
                           for c in stmt.calls)
        text = stmt.text
        if "…" in text:
            return True
        for call in stmt.calls:
            if self._resolved(fn, call):
                for arg in [*call.args, *call.kwargs.values()]:
                    if "…" not in arg:
                        text = text.replace(arg, "", 1)
        return any(_carries(text, n) and mentions(text, n) for n in hit) or not any(
            mentions(stmt.text, n) for n in hit)

    def _function(self, fn: FunctionInfo, live: set[str], start: int,
                  inner: Optional[Event], context: Context) -> None:
        for name in live:
            self.flow.values.add((fn.qualname, name))
        self._share(fn, live)
        order = self._order(fn, start)
        # a name rebound in a branch the start is not in (`if a: c = X() elif b: c = Y()`)
        # keeps its value on the other paths; the other side of the start's own `if` does not
        # run in the same pass
        always = set(order[0].head.conditions) if order else set()
        same_pass = len(statements(fn)) - start
        for pos, stmt in enumerate(order):
            if pos < same_pass and excludes(stmt.head, order[0].head):
                continue
            self.budget -= 1
            forced = inner if pos == 0 and inner is not None else None
            if forced is not None:
                hit = {"<expr>"}
                hit_calls = [c for c in stmt.calls if c is not forced and contains(c.span, forced.span)]
                if forced.kind == "call" and sink_of(fn, forced) is not None:
                    hit_calls.append(forced)
            else:
                hit = _hit(stmt, live) if live else set()
                hit_calls = [c for c in stmt.calls if any(
                    u == n or u.startswith(n + ".") for u in c.uses for n in hit)]
            if not hit:
                if stmt.kind == "assign" and pos > 0 and set(stmt.head.conditions) <= always:
                    live -= _rebound(stmt)  # reassigned from something else
                continue
            if self.stop is not None and self.stop(fn, stmt, hit):
                if stmt.kind in ("assign", "augassign"):
                    live -= _rebound(stmt)
                continue
            if stmt.kind in ("assign", "augassign", "return") and is_scalar_conversion(stmt):
                if stmt.kind == "assign":
                    live -= _rebound(stmt)
                continue
            self.flow.steps.append(Step(fn, stmt, hit, forced))
            self.flow.sinks += _sinks_in(fn, stmt, hit_calls)
            direct = self._direct(fn, stmt, hit, forced)
            new = set(stmt.targets) if direct else set()
            for call in hit_calls:
                if call.method in MUTATORS and call.receiver and not is_scalar_conversion(stmt):
                    new.add(call.receiver)
                self._into_callees(fn, call, hit, forced, context)
            for name in new - live:
                self.flow.values.add((fn.qualname, name))
            self._share(fn, new - live)
            live |= new
            if stmt.kind == "return" and direct:
                self._out_of(fn, context, stmt.head)

    def _share(self, fn: FunctionInfo, names: set[str]) -> None:
        """``self.<attr>`` values reach every method of the class."""
        shared = [n for n in names if n.startswith("self.")]
        if shared and fn.class_name:
            for other in list(self.project.functions.values()):
                if other.class_name == fn.class_name and other is not fn:
                    self.push(other, shared, 0)

    def _into_callees(self, fn: FunctionInfo, call: Event, hit: set[str],
                      forced: Optional[Event], context: Context) -> None:
        if forced is not None:
            sig = (forced.method or forced.func.rsplit(".", 1)[-1]) + "("
            matched = _args_matching(call, lambda t: sig in t)
        else:
            matched = _args_matching(call, lambda t: any(_arg_carries(t, n) for n in hit))
        if not matched:
            return
        for target in call_targets(self.project, fn, call):
            callee = self.project.function(target)
            if callee is None:
                continue
            params = [_param_for(callee, call, i, k) for i, k in matched]
            self.push(callee, [p for p in params if p], 0, context=context + ((fn, call),))

    def _out_of(self, fn: FunctionInfo, context: Context, returned: Event) -> None:
        if context:
            caller, call = context[-1]
            stmt = statement_of(caller, call)
            if stmt is not None:
                self.push(caller, [], stmt.index, inner=call, context=context[:-1])
            return
        if (fn.qualname, id(returned)) in self.returned:
            return
        self.returned.add((fn.qualname, id(returned)))
        born = [returned]  # the events whose tests decide whether the value is returned
        if self.origin is not None and self.origin[0] is fn:
            born.append(self.origin[1])
        for caller, call in callers_of(self.project, fn.qualname):
            if self.returns_to is not None and not all(
                    self.returns_to(fn, e, caller, call) for e in born):
                continue
            stmt = statement_of(caller, call)
            if stmt is not None:
                self.push(caller, [], stmt.index, inner=call)


def flows_to(project: Project, fn: FunctionInfo, names: Iterable[str], start: int = 0,
             stop: Optional[StopFn] = None) -> Flow:
    """Where ``names`` flow from statement ``start`` of ``fn`` on (``start`` itself included)."""
    walker = _Walker(project, stop)
    walker.push(fn, names, start)
    return walker.run()


def flows_from(project: Project, fn: FunctionInfo, event: Event,
               stop: Optional[StopFn] = None, returns_to: Optional[ReturnsFn] = None) -> Flow:
    """Where the value of one call expression flows (its statement's targets and beyond);
    ``returns_to`` tells which callers a return of it reaches (every one without it)."""
    stmt = statement_of(fn, event)
    walker = _Walker(project, stop, returns_to)
    walker.origin = (fn, event)
    if stmt is not None:
        walker.push(fn, [], stmt.index, inner=event)
    return walker.run()


def flows_from_statement(project: Project, fn: FunctionInfo, stmt: Statement,
                         stop: Optional[StopFn] = None) -> Flow:
    """Where the value a whole statement produces flows (targets, or the return to callers)."""
    return flows_from(project, fn, stmt.head, stop) if stmt.kind != "with" else Flow()


# -- backward derivation -------------------------------------------------------------------------


@dataclass
class Origin:
    """A module call (or parameter read) a value derives from."""

    fn: FunctionInfo
    event: Event
    what: str  # short text: `self.encoder(...)`

    @property
    def where(self) -> str:
        return f"{self.fn.path}:{self.event.span.line}"


def definitions(fn: FunctionInfo, name: str, index: int) -> list[Statement]:
    """The statements before ``index`` whose assignment of ``name`` may reach it: the latest
    one, and before it those a rebinding in a branch leaves on the other paths (a factory's
    ``if a: m = GCN() elif b: m = GAT()``, then ``return m``: both reach). A rebinding kills
    the earlier ones only where it runs on every pass through ``index`` (its enclosing tests
    hold there), as the forward flow has it; one on the other side of an ``if`` the use is in
    never reaches it. A rebinding in a loop that does not hold the use (``for p in parents:
    merged = merge(merged, load(p))``) leaves the one before the loop reaching it too."""
    stmts = statements(fn)
    use = stmts[index].head if index < len(stmts) else None
    here = set(use.conditions) if use is not None else set()
    found: list[Statement] = []
    for stmt in reversed(stmts[:index]):
        head = stmt.head  # its targets read in place: every statement before the use is asked
        if head.kind not in _ASSIGNING or not any(t == name or name.startswith(t + ".")
                                                  for t in head.targets):
            continue
        if use is not None and excludes(stmt.head, use):
            continue
        found.append(stmt)
        # a rebinding in a loop the use is outside of may run no time: the earlier ones reach too
        if stmt.kind == "assign" and set(stmt.head.conditions) <= here and (
                use is None or set(stmt.head.loop_ids) <= set(use.loop_ids)):
            break
    return found


def _self_definitions(project: Project, fn: FunctionInfo, name: str) -> list[tuple[FunctionInfo, Statement]]:
    """Where the methods of ``fn``'s class and its bases assign ``name`` (``self.x``); for a
    mixin that never assigns it, where the classes composed with it do (``self`` is an instance
    of a subclass, whose other bases set it up)."""
    classes = {fn.class_name}
    for cls in list(classes):
        info = project.classes.get(cls)
        for base in getattr(info, "bases", []) or []:
            classes.add(base)
    out = _assignments_in(project, classes, name)
    if not out and fn.class_name:
        composed = {c for sub in project.subclasses(fn.class_name)[:MAX_SUBCLASSES]
                    for c in project.lineage(sub)} - classes
        out = _assignments_in(project, composed, name)
    return out


MAX_SUBCLASSES = 8  # a base of a whole library's classes: its own attributes are not theirs


def _assignments_in(project: Project, classes: set[str], name: str) -> list[tuple[FunctionInfo, Statement]]:
    return [(other, stmt) for other in _methods_of(project, classes) for stmt in statements(other)
            if stmt.head.kind in _ASSIGNING and name in stmt.head.targets]


def _methods_of(project: Project, classes: set[str]) -> list[FunctionInfo]:
    """The functions of these classes, in the project's order (a scan of every function per
    question dominated GM101's time)."""
    by_class = _functions_by(project, "class_name")
    found = [item for cls in classes for item in by_class.get(cls, ())]
    return [other for _, other in sorted(found, key=lambda item: item[0])]


def _functions_by(project: Project, attr: str) -> dict[Optional[str], list[tuple[int, FunctionInfo]]]:
    """The project's functions grouped by ``attr`` (``class_name``, ``path``), each with its
    position in the project's order; extended as loads add functions (Project.functions_since)."""
    cache = _cache(project)
    groups, count = cache.get(("by", attr)) or ({}, 0)
    for pos, other in enumerate(project.functions_since(count), count):
        groups.setdefault(getattr(other, attr), []).append((pos, other))
    cache[("by", attr)] = (groups, len(project.functions))
    return groups


def is_module_class(project: Project, qualname: str, _seen: Optional[set[str]] = None) -> bool:
    """A project class deriving from ``nn.Module`` (or defining ``forward``), or a class from a
    library (``torch.nn.Linear``, ``dgl.nn.GATConv``) that is not a loss."""
    if qualname == "<copy>":
        return True
    if qualname not in project.classes:
        last = qualname.rsplit(".", 1)[-1]
        if qualname.split(".")[0] in NOT_MODULE_PACKAGES or hasattr(builtins, qualname) \
                or last.endswith(("Tensor", *DATA_CLASS_SUFFIXES)):
            # `argparse.ArgumentParser`, `torch.LongTensor(ids)`, a factory's `return
            # ValueError(...)`: no parameters
            return False
        return last[:1].isupper() and not _is_loss_class(last) and not qualname.startswith(
            ("torch.optim", "torch.utils", "torch.Generator", "torch.device", "numpy", "dgl.data",
             "torch.cuda.amp", "torch.amp", "torch.autocast")
        )
    seen = _seen if _seen is not None else set()
    if qualname in seen:
        return False
    seen.add(qualname)
    info = project.classes[qualname]
    if is_autograd_function(project, qualname):
        return False
    if any(m.endswith(".forward") for m in info.methods):
        return True
    return any(is_module_class(project, b, seen) for b in project.bases_of(qualname))


def is_autograd_function(project: Project, qualname: str) -> bool:
    """A ``torch.autograd.Function`` subclass: its forward/backward define gradients by hand."""
    info = project.classes.get(qualname)
    return info is not None and any(
        b.endswith("autograd.Function") or b.endswith("autograd.function.Function")
        or is_autograd_function(project, b) for b in project.bases_of(qualname) if b != qualname
    )


def _is_loss_class(qualname: str) -> bool:
    return qualname.endswith(("Loss", "loss", "Criterion"))


def instance_classes(project: Project, fn: FunctionInfo, name: str, index: int,
                     depth: int = 0) -> set[str]:
    cache = _cache(project).setdefault("classes", {})
    key = (fn.qualname, name, index)
    if key in cache:
        return cache[key]
    cache[key] = set()
    out: set[str] = set()
    if depth < MAX_DEPTH and name:
        defs = [(fn, s) for s in definitions(fn, name, index)]
        if not defs and name.startswith("self.") and fn.class_name:
            defs = _self_definitions(project, fn, name)
        for where, stmt in defs:
            root = next((t for t in stmt.head.targets if name.startswith(t + ".")), "") \
                if name not in stmt.head.targets else ""
            if root:  # `state = TrainState(model)`, then `state.model`: what the object holds
                classes = instance_classes(project, where, root, stmt.index + 1, depth + 1)
                for attr in name[len(root) + 1:].split("."):
                    classes = set().union(*(_attribute_classes(project, c, attr, depth) for c in classes))
                out |= classes
                continue
            classes = set()
            for call in stmt.calls:
                classes |= constructed_class(project, call)
            if not classes and stmt.kind == "assign":
                for use in _aliased(stmt):
                    if "." not in use or use.startswith("self."):
                        classes |= instance_classes(project, where, use, stmt.index, depth + 1)
            if not classes and stmt.kind == "assign" and stmt.calls:
                classes = _made_instances(project, where, stmt, depth + 1)
            out |= classes
        if not defs and name in fn.params:
            for caller, call in _static_callers(project, fn):
                pos = fn.params.index(name) - _bound(fn, call)
                text = call.kwargs.get(name) or (call.args[pos] if 0 <= pos < len(call.args) else "")
                if re.fullmatch(r"[\w.]+", text or ""):
                    out |= instance_classes(project, caller, text, _index_of(caller, call), depth + 1)
                elif re.fullmatch(r"[\w.]+\(.*\)", text or "", re.S):
                    out |= _built_in_argument(project, caller, call, text)
    cache[key] = out
    return out


def _factory_classes(project: Project, fn: FunctionInfo, call: Event, depth: int) -> set[str]:
    """The classes a project function returns instances of (``model = build_model(args)``,
    whose ``return model`` was ``model = PreModel(...)``)."""
    out: set[str] = set()
    for target in project.resolve_call(call, fn):
        callee = project.function(target)
        if callee is None or callee.name == "__init__" or depth >= MAX_DEPTH:
            continue
        for stmt in statements(callee):
            if stmt.kind != "return":
                continue
            value = _value_text(stmt)
            if stmt.calls:
                made = constructed_class(project, stmt.calls[0])
                local = callee_text(stmt.calls[0])
                if not made and re.fullmatch(r"\w+", local):  # `return cls(args)`
                    made = class_objects(project, callee, local, stmt.index, depth)
                out |= made
            elif re.fullmatch(r"\w+", value):
                out |= instance_classes(project, callee, value, stmt.index, depth)
    return _bounded(out, MAX_INSTANCE_CLASSES)


# Bounds on a dispatch: a registry may hold every model of a library (the classes a name may
# hold as classes), but an instance that may be any of more than MAX_INSTANCE_CLASSES is left
# unknown: each possible class's forward would bind every argument of every call site (a
# trainer's `self.model(g)` to the parameters of every registered model), which says nothing
MAX_CLASSES = 256
MAX_INSTANCE_CLASSES = 16


def _bounded(classes: set[str], most: int = MAX_CLASSES) -> set[str]:
    return classes if len(classes) <= most else set()


def _made_instances(project: Project, fn: FunctionInfo, stmt: Statement, depth: int) -> set[str]:
    """The classes of the instance an assignment's call builds when the call names no class:
    a factory function's returns (``build_model(args)``), a class held by a name called
    (``cls = MODELS[key]`` then ``cls(args)``), a classmethod that returns ``cls(...)`` called
    on looked-up classes (``MODELS[key].from_args(args)``, ``get_class(key).from_args(args)``).
    Attributes read off the result (``build(args).model``) are that instance's ``self.model``."""
    call = _made_by(stmt, stmt.calls[0])
    local = callee_text(call)
    if re.fullmatch(r"\w+", local) and not project.resolve_call(call, fn):
        classes = class_objects(project, fn, local, stmt.index, depth)
    elif call.method and "(" in call.receiver:
        classes = classmethod_instances(project, fn, call, depth)
    elif call.method and re.fullmatch(r"\w+", call.receiver) and not project.resolve_call(call, fn):
        owners = class_objects(project, fn, call.receiver, stmt.index, depth)
        classes = {c for c in owners if _builds_own_class(project, c, call.method)}
    else:
        classes = _factory_classes(project, fn, call, depth)
    read = re.search(r"\)((?:\.\w+)+)$", _value_text(stmt))
    for attr in read.group(1)[1:].split(".") if read and classes else ():
        classes = set().union(*(_attribute_classes(project, c, attr, depth) for c in classes))
    if len(classes) > 1 and len(stmt.targets) == 1:
        classes = _by_methods_called(project, fn, stmt.targets[0], classes)
    return _bounded(classes, MAX_INSTANCE_CLASSES)


def _by_methods_called(project: Project, fn: FunctionInfo, target: str, classes: set[str]) -> set[str]:
    """The ``classes`` that define every method called on ``target`` (a local of ``fn``, or
    ``self.<attr>`` in the methods of its class) that one of them defines: an object looked up
    in a registry and then sent ``gcn_forward`` is of a class that has ``gcn_forward``."""
    scope = _methods_of(project, {fn.class_name}) if target.startswith("self.") and fn.class_name \
        else [fn]
    called = {e.method for other in scope for e in other.events
              if e.kind == "call" and e.receiver == target and e.method}

    @functools.cache  # each pair is asked twice below
    def defines(cls: str, method: str) -> bool:
        return any(project.function(c) is not None for c in project.method_candidates(cls, method))

    own = {m for m in called if any(defines(c, m) for c in classes)}
    return {c for c in classes if all(defines(c, m) for m in own)}


def classmethod_instances(project: Project, fn: FunctionInfo, call: Event, depth: int = 0) -> set[str]:
    """The classes ``call`` makes instances of when it is a classmethod returning ``cls(...)``
    called on the classes another call returns (``get_class(key).from_config(cfg)``: a
    registry lookup, then the class's own constructor)."""
    stmt = statement_of(fn, call)
    inner = _receiver_call(stmt, call) if stmt is not None and call.method else None
    owners = _returned_class_objects(project, fn, inner, depth) if inner else set()
    return {c for c in owners if _builds_own_class(project, c, call.method)}


def _builds_own_class(project: Project, cls: str, method: str) -> bool:
    """``cls.method(...)`` is a classmethod that returns an instance of the class it is called
    on (``return cls(args)``)."""
    for target in _methods(project, cls, method):
        callee = project.function(target)
        if callee is None or "classmethod" not in callee.decorators or not callee.params:
            continue
        if any(s.kind == "return" and s.calls and callee_text(s.calls[0]) == callee.params[0]
               for s in statements(callee)):
            return True
    return False


def _attribute_classes(project: Project, cls: str, attr: str, depth: int) -> set[str]:
    """The classes of ``self.<attr>`` of an instance of ``cls``: what its methods assign, or
    what a ``@property`` of that name returns."""
    methods = _methods_of(project, set(project.lineage(cls)))
    getter = next((m for m in methods if m.name == attr and "property" in m.decorators), None)
    if getter is None:
        own = next((m for m in methods if m.class_name == cls), methods[0]) if methods else None
        return instance_classes(project, own, f"self.{attr}", 0, depth + 1) if own else set()
    out: set[str] = set()
    for stmt in statements(getter):
        value = _value_text(stmt) if stmt.kind == "return" else ""
        if re.fullmatch(r"[\w.]+", value):
            out |= instance_classes(project, getter, value, stmt.index, depth + 1)
    return out


def _receiver_call(stmt: Statement, call: Event) -> Optional[Event]:
    """The call ``call`` is a method of the result of (``build(x)`` in ``build(x).to(dev)``)."""
    inner = [c for c in stmt.calls if c is not call and contains(call.span, c.span)
             and (c.span.line, c.span.column) == (call.span.line, call.span.column)]
    return max(inner, key=lambda c: (c.span.end_line, c.span.end_column)) if inner else None


def class_objects(project: Project, fn: FunctionInfo, name: str, index: int, depth: int = 0) -> set[str]:
    """The project classes ``name`` may hold as a class, not an instance, at statement
    ``index``: one it names (an import, a class of the module), one looked up in a registry
    (``MODELS[key]``), returned by a function that does either, passed by every caller, or the
    ``cls`` of a classmethod (its own class)."""
    cache = _cache(project).setdefault("class_objects", {})
    key = (fn.qualname, name, index)
    if key in cache:
        return cache[key]
    cache[key] = set()
    out: set[str] = set()
    defs = definitions(fn, name, index) if depth < MAX_DEPTH else []
    for stmt in defs:
        if stmt.kind == "assign":
            out |= _value_objects(project, fn, stmt, depth + 1)
    if not defs and depth < MAX_DEPTH:
        named = _class_named(project, fn, name)
        if named:
            out = {named}
        elif fn.params[:1] == [name] and "classmethod" in fn.decorators and fn.class_name:
            out = {fn.class_name}
        elif name in fn.params:
            for caller, call in _static_callers(project, fn):
                pos = fn.params.index(name) - _bound(fn, call)
                text = call.kwargs.get(name) or (call.args[pos] if 0 <= pos < len(call.args) else "")
                if re.fullmatch(r"\w+", text):
                    out |= class_objects(project, caller, text, _index_of(caller, call), depth + 1)
    cache[key] = _bounded(out)
    return cache[key]


def _value_objects(project: Project, fn: FunctionInfo, stmt: Statement, depth: int) -> set[str]:
    """The classes the value an assignment or ``return`` computes may be (as classes)."""
    value = _value_text(stmt)
    looked_up = re.fullmatch(r"(\w+)\s*\[.*\]", value, re.S)
    if looked_up:  # `MODELS[key]`
        return _registry_classes(project, fn, looked_up.group(1), depth)
    if re.fullmatch(r"\w+", value):
        return class_objects(project, fn, value, stmt.index, depth)
    call = stmt.calls[0] if stmt.calls else None
    if call is not None and call.method == "get" and re.fullmatch(r"\w+", call.receiver):
        return _registry_classes(project, fn, call.receiver, depth)  # `MODELS.get(key)`
    return _returned_class_objects(project, fn, call, depth) if call is not None else set()


def _returned_class_objects(project: Project, fn: FunctionInfo, call: Event, depth: int) -> set[str]:
    """The classes (as classes) a project function returns: ``return MODELS[name]``."""
    out: set[str] = set()
    for target in project.resolve_call(call, fn) if depth < MAX_DEPTH else ():
        callee = project.function(target)
        if callee is not None and callee.name != "__init__":
            for stmt in statements(callee):
                if stmt.kind == "return":
                    out |= _value_objects(project, callee, stmt, depth + 1)
    return _bounded(out)


def _class_named(project: Project, fn: FunctionInfo, name: str) -> Optional[str]:
    """The project class a bare name of ``fn``'s module refers to (imported or defined there)."""
    facts = project.files.get(fn.path)
    qual = (facts.imports.get(name) if facts else None) or f"{fn.module}.{name}"
    if qual not in project.classes:
        qual = project.reexported(qual) or ""
    return qual if qual in project.classes else None


def _registry_classes(project: Project, fn: FunctionInfo, name: str, depth: int) -> set[str]:
    """The classes a module-level dict ``name`` holds: the values of its literal
    (``MODELS = {"gcn": GCN}``) and of every store into it in its module (``MODELS[key] = cls``),
    where a decorator's parameter stands for every class decorated with it."""
    facts = project.files.get(fn.path)
    qual = (facts.imports.get(name) if facts else None) or f"{fn.module}.{name}"
    module, _, var = qual.rpartition(".")
    out: set[str] = set()
    for _, other in list(_functions_by(project, "module").get(module, ())):
        for stmt in statements(other):
            if stmt.kind != "assign" or var not in stmt.targets:
                continue
            value = _value_text(stmt)
            if re.match(rf"{re.escape(var)}\s*\[", stmt.text) and re.fullmatch(r"\w+", value):
                out |= (_decorated_with(project, other) if value in other.params
                        else class_objects(project, other, value, stmt.index, depth + 1))
            elif value.startswith("{"):
                out |= {c for u in stmt.uses for c in [_class_named(project, other, u)] if c}
    return _bounded(out)


def _decorated_with(project: Project, fn: FunctionInfo) -> set[str]:
    """The classes decorated with ``fn`` (``@fn``), or with a call of the function that returns
    it (``@register("gcn")`` where ``register`` returns ``fn``): what ``fn``'s parameter holds."""
    outer = project.enclosing(fn)
    if outer is not None:
        project.load_mentioning(outer.name)  # decorated classes in files no rule read yet
    project.load_mentioning(fn.name)
    return {q for q in project.decorated_by(fn) if q in project.classes}


def _made_by(stmt: Statement, call: Event) -> Event:
    """The call whose result ``call`` hands back: through methods that return the module they
    are called on (``load_model(cfg).to(device)`` is what ``load_model(cfg)`` returned)."""
    while call.method in SHARING_METHODS:
        inner = _receiver_call(stmt, call)
        if inner is None:
            break
        call = inner
    return call


def _built_in_argument(project: Project, caller: FunctionInfo, call: Event, text: str) -> set[str]:
    """``run(GCN(), g)``: the class an argument constructs on the spot."""
    local = text.split("(", 1)[0]
    stmt = statement_of(caller, call)
    return set().union(*(constructed_class(project, inner) for inner in (stmt.calls if stmt else [])
                         if inner is not call and contains(call.span, inner.span)
                         and (inner.func == local or inner.func.endswith("." + local))))


def _aliased(stmt: Statement) -> set[str]:
    """The objects an assignment binds its target to: ``m = model``, ``m = model.to(dev)``,
    ``m = DistributedDataParallel(model)``. ``out = model(x)`` or ``y = f(a, b)`` hold what a call
    returned, not one of its inputs."""
    value = stmt.head.text.split("=", 1)[-1].strip()
    if re.fullmatch(r"[\w.]+", value):
        return {value}
    out: set[str] = set()
    for call in stmt.calls:
        if call.method in SHARING_METHODS and re.fullmatch(r"[\w.]+", call.receiver):
            out.add(call.receiver)
        elif call.func.removesuffix("()").endswith(SHARING_WRAPPERS) and call.args \
                and re.fullmatch(r"[\w.]+", call.args[0]):
            out.add(call.args[0])
    return out


def _static_callers(project: Project, fn: FunctionInfo) -> list[tuple[FunctionInfo, Event]]:
    """Call sites from the call graph alone (no instance resolution: that would recurse)."""
    name = fn.class_name.rsplit(".", 1)[-1] if fn.name == "__init__" and fn.class_name else fn.name
    project.load_mentioning(name)
    out = []
    for caller in project.callers(fn.qualname):
        info = project.function(caller)
        if info is not None:
            out += [(info, e) for e in project.call_sites(caller, fn.qualname)]
    return out


def constructed_class(project: Project, call: Event) -> set[str]:
    """The class a call builds: ``GraphMAE(...)``, ``GraphMAE.from_config(...)``, ``nn.Linear``,
    an imported ``GATConv(...)``; ``copy.deepcopy(m)`` gives ``<copy>``."""
    func = call.func.removesuffix("()")
    if "(" in func:
        return set()
    if func in project.classes:
        return {func}
    if func.rsplit(".", 1)[-1][:1].isupper():
        # `from pkg import Model` where `pkg/__init__.py` re-exports it: the class's own name
        # (its bases and methods are known under that one)
        return {project.reexported(func) or func}
    head = func.rsplit(".", 1)[0] if "." in func else ""
    if head in project.classes and call.receiver[:1].isupper():
        return {head}
    if func == "copy.deepcopy" and call.args:
        return {"<copy>"}
    return set()


def is_module_output(project: Project, fn: FunctionInfo, call: Event, depth: int = 0) -> bool:
    """Whether ``call`` returns a value carrying parameters' gradient."""
    cache = _cache(project).setdefault("module_output", {})
    key = (fn.qualname, call.span.line, call.span.column, call.func)
    if key in cache:
        return cache[key]
    cache[key] = False
    cache[key] = _module_output(project, fn, call, depth)
    return cache[key]


def _module_output(project: Project, fn: FunctionInfo, call: Event, depth: int) -> bool:
    func = call.func.removesuffix("()")
    if call.method in NOT_TENSOR_METHODS or LOSS_FUNC_RE.match(func):
        return False
    idx = _index_of(fn, call)
    targets = [t for t in call_targets(project, fn, call) if not t.endswith(".__init__")]
    for target in targets:
        callee = project.function(target)
        if callee is None:
            continue
        if callee.name == "forward" and callee.class_name and is_module_class(project, callee.class_name):
            return not _is_loss_class(callee.class_name)
        if depth < MAX_DEPTH:  # a model method or a helper: decided by what it returns
            for stmt in statements(callee):
                if stmt.kind == "return" and derives_from_module(
                    project, callee, stmt.uses, stmt.index + 1, depth + 1, stmt
                ):
                    return True
    if targets:
        return False
    for container in held_container(func):  # `m["encoder"](g, x)`: an entry of a container module
        if any(is_module_class(project, c) for c in instance_classes(project, fn, container, idx)):
            return True
    obj = _object_call(call)
    if obj:  # `self.encoder(g, x)`, `model(g, x)`, `lin(x)`
        classes = instance_classes(project, fn, obj, idx)
        if any(_is_loss_class(c) for c in classes):
            return False
        if any(is_module_class(project, c) for c in classes):
            return True
        if not classes and obj.rsplit(".", 1)[-1].lower() in MODEL_NAMES:
            return True
        if obj.startswith("self.") and fn.class_name and _self_definitions(project, fn, obj):
            return is_module_class(project, fn.class_name)  # an attribute of a module: a submodule
        return False
    if call.receiver and call.method and "(" not in call.receiver:
        # `model.encoder(g, x)`, `self.model.decoder(h)`: a submodule of a module instance
        classes = instance_classes(project, fn, call.receiver, idx)
        if any(is_module_class(project, c) for c in classes):
            return True
        if not classes and call.receiver.rsplit(".", 1)[-1].lower() in MODEL_NAMES:
            return not call.method.startswith(("sample", "get_", "num_", "parameters"))
    return False


PARAMETER_CALLS = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")


def registered_name(event: Event) -> str:
    """The name ``m.register_parameter("mask_token", ...)`` gives its parameter, else ""."""
    if event.kind != "call" or event.method != "register_parameter" or not event.receiver \
            or len(event.args) != 2:
        return ""
    return string_literal(event.args[0])


def registered_parameters(project: Project) -> dict[str, list[tuple[FunctionInfo, Event]]]:
    """Attribute name -> where a module is given a parameter by that name outside its own
    class: ``m.register_parameter("mask_token", nn.Parameter(...))``, ``m.mask_token =
    nn.Parameter(...)`` (a factory building a container module, a notebook's cell)."""
    cache = _cache(project)
    if cache.get("registered_size") == len(project.functions):
        return cache["registered"]
    out: dict[str, list[tuple[FunctionInfo, Event]]] = {}
    for fn in list(project.functions.values()):
        for e in fn.events:
            attr = registered_name(e)
            if not attr and e.kind == "call" and e.func in PARAMETER_CALLS and len(e.targets) == 1:
                target = e.targets[0]
                attr = target.rsplit(".", 1)[1] if target.count(".") == 1 and \
                    not target.startswith(("self.", "cls.")) else ""
            if attr:
                out.setdefault(attr, []).append((fn, e))
    cache["registered"], cache["registered_size"] = out, len(project.functions)
    return out


def is_parameter(project: Project, fn: FunctionInfo, name: str) -> bool:
    """``name`` reads a module's parameter: ``self.mask_token`` set to an ``nn.Parameter`` in
    the class, or ``m.mask_token`` registered on a module by a factory (see
    :func:`registered_parameters`)."""
    if name.count(".") == 1 and not name.startswith(("self.", "cls.")) \
            and name.split(".", 1)[1] in registered_parameters(project):
        return True
    if not (name.startswith("self.") and name.count(".") == 1 and fn.class_name):
        return False
    for _, stmt in _self_definitions(project, fn, name):
        if any(c.func.removesuffix("()") in PARAMETER_CALLS for c in stmt.calls):
            return True
    return False


_COMPREHENSION = re.compile(r"\bfor\s+([\w\s,()]+?)\s+in\s+([\w.]+?)(?:\.(?:items|values)\(\))?[\s\]})]")


def comprehension_source(text: str, name: str) -> str:
    """The name a comprehension of ``text`` walks when it binds ``name`` (``enc`` of ``for t, h
    in enc.items()``, of ``for h in enc.values()``, of ``for h in enc``); "" when none does."""
    for targets, iterated in _COMPREHENSION.findall(text):
        if name in re.findall(r"\w+", targets):
            return iterated
    return ""


def derives_from_module(project: Project, fn: FunctionInfo, names: Iterable[str], index: int,
                        depth: int = 0, stmt: Optional[Statement] = None) -> Optional[Origin]:
    """The module call (or parameter) that one of ``names``, as of statement ``index``, derives
    from; ``stmt``: also look at the calls of that statement itself."""
    if stmt is not None:
        for call in stmt.calls:
            if is_module_output(project, fn, call, depth):
                return Origin(fn, call, callee_text(call) + "(...)")
    cache = _cache(project).setdefault("derives", {})
    for name in names:
        key = (fn.qualname, name, index)
        if key in cache:
            if cache[key] is not None:
                return cache[key]
            continue
        cache[key] = None
        found = _derive_one(project, fn, name, index, depth)
        cache[key] = found
        if found is not None:
            return found
    return None


def _derive_one(project: Project, fn: FunctionInfo, name: str, index: int,
                depth: int) -> Optional[Origin]:
    if depth > MAX_DEPTH:
        return None
    if is_parameter(project, fn, name):
        if name.startswith("self."):
            stmt = _self_definitions(project, fn, name)[0][1]
            return Origin(fn, stmt.head, name)
        registered = registered_parameters(project)[name.split(".", 1)[1]]
        where, event = next((r for r in registered if r[0].path == fn.path), registered[0])
        return Origin(where, event, name)
    defs = [(fn, s) for s in definitions(fn, name, index)]
    if not defs and name.startswith("self.") and name.count(".") == 1 and fn.class_name:
        defs = _self_definitions(project, fn, name)
    iterated = comprehension_source(statements(fn)[index].text, name) \
        if not defs and 0 <= index < len(statements(fn)) else ""
    if iterated and iterated != name:
        # `{t: dec(h.detach()) for t, h in enc.items()}`: an element of what it walks
        return derives_from_module(project, fn, [iterated], index, depth + 1)
    for where, stmt in defs:
        if stmt.kind == "augassign" or stmt.kind == "assign":
            if is_scalar_conversion(stmt) or (stmt.kind == "assign" and _only_detached(stmt)):
                continue
            callees = stmt.callee_names()
            found = derives_from_module(project, where, [], stmt.index, depth + 1, stmt)
            if found is not None:
                return found
            uses = [u for u in stmt.head.uses if u not in callees and u != name
                    and not any(u.startswith(c + ".") for c in callees) and _carries(stmt.text, u)]
            found = derives_from_module(project, where, uses, stmt.index, depth + 1)
            if found is not None:
                return found
            value = stmt.text if stmt.kind == "augassign" else _value_split(stmt.text)[1]
            if where is fn and mentions(value, name) and _carries(value, name):
                # rebound from itself (`x = F.normalize(x)`, `loss += reg`): what it was before,
                # down to the parameter and the callers' arguments
                found = derives_from_module(project, fn, [name], stmt.index, depth + 1)
                if found is not None:
                    return found
    if not defs and name in fn.params and name not in ("self", "cls"):
        for caller, call in callers_of(project, fn.qualname)[:20]:
            pos = fn.params.index(name) - _bound(fn, call)
            text = call.kwargs.get(name) or (call.args[pos] if 0 <= pos < len(call.args) else "")
            if not text:
                continue
            cstmt = statement_of(caller, call)
            if cstmt is None:
                continue
            inner = [c for c in cstmt.calls if c is not call and contains(call.span, c.span)
                     and callee_text(c) in text]
            for c in inner:
                if is_module_output(project, caller, c, depth + 1):
                    return Origin(caller, c, callee_text(c) + "(...)")
            arg_names = [u for u in cstmt.uses if mentions(text, u) and _carries(text, u)
                         and not _indexes_only(text, u)]
            arg_names += [u for c in inner for u in c.uses if u != callee_text(c)]  # `f(...)`
            found = derives_from_module(project, caller, arg_names, cstmt.index, depth + 1)
            if found is not None:
                return found
    return None


# -- shared predicates ---------------------------------------------------------------------------


def is_loss_call(project: Project, fn: FunctionInfo, call: Event) -> bool:
    """A call that computes a loss: a torch loss function or module, or a function named so."""
    func = call.func.removesuffix("()")
    if LOSS_FUNC_RE.match(func):
        return True
    last = (call.method or func.rsplit(".", 1)[-1]).lower()
    if "loss" in last or "criterion" in last or last in ("sce", "mse"):
        return True
    local = callee_text(call)
    if "(" not in local and not call.method or local.startswith("self."):
        classes = instance_classes(project, fn, local, _index_of(fn, call))
        if any(LOSS_FUNC_RE.match(c) or _is_loss_class(c) for c in classes):
            return True
    return "(" not in local and not call.method and _bound_to_loss(project, fn, local, _index_of(fn, call))


def _bound_to_loss(project: Project, fn: FunctionInfo, name: str, index: int) -> bool:
    """``name`` holds a lambda or a partial over a torch loss (``mse_fn = lambda a, b:
    F.mse_loss(a, b)``, ``crit = partial(F.l1_loss, reduction="sum")``), bound in ``fn`` or at
    its module's level."""
    scopes = [(fn, index)]
    module = project.functions.get(f"{fn.module}.{MODULE_SCOPE}")
    if module is not None and module is not fn:
        scopes.append((module, len(statements(module))))
    for scope, before in scopes:
        for stmt in definitions(scope, name, before):
            value = _value_split(stmt.text)[1].strip() if stmt.kind == "assign" else ""
            if value.startswith(("lambda", "functools.partial(", "partial(")) and any(
                    LOSS_FUNC_RE.match(c.func.removesuffix("()")) for c in stmt.calls):
                return True
        if definitions(scope, name, before):
            return False
    return False


def loss_calls(project: Project, fn: FunctionInfo, depth: int = 0) -> list[tuple[FunctionInfo, Event]]:
    """Loss computations a function runs, itself or through the project functions it calls."""
    out: list[tuple[FunctionInfo, Event]] = []
    seen: set[str] = set()
    todo = [(fn, 0)]
    while todo:
        cur, d = todo.pop()
        if cur.qualname in seen or d > MAX_DEPTH:
            continue
        seen.add(cur.qualname)
        for event in cur.events:
            if event.kind != "call":
                continue
            if is_loss_call(project, cur, event):
                out.append((cur, event))
            for target in call_targets(project, cur, event):
                callee = project.function(target)
                if callee is not None:
                    todo.append((callee, d + 1))
    return out


def function_of(project: Project, path: str, line: int) -> Optional[FunctionInfo]:
    """The innermost function of ``path`` whose definition holds ``line`` (else the module)."""
    best: Optional[FunctionInfo] = None
    module: Optional[FunctionInfo] = None
    for _, fn in _functions_by(project, "path").get(path, ()):
        if fn.span is None:
            module = fn
        elif fn.span.line <= line <= fn.span.end_line and (
            best is None or best.span is None or fn.span.line >= best.span.line
        ):
            best = fn
    return best or module
