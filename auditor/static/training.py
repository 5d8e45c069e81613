"""Where a project trains, followed across functions and files.

Built on the event summaries of :mod:`auditor.static.facts` and the call graph of
:mod:`auditor.static.project`; used by GM102-GM106 (and open to GM201 and others).

API (``fn`` is a :class:`FunctionInfo`, ``i`` the index of an event in ``fn.events``):

``Training.of(project)``  the (memoised) analysis of one project, with:

* ``backward_sites()``        [(fn, i)] every ``x.backward()`` / ``torch.autograd.backward(x)``.
* ``loss_slice(fn, i)``       [(fn, i)] the events that compute what backward site ``(fn, i)``
                              backpropagates: the assignments and calls it reads, followed into
                              the return values of the project functions they call (the model's
                              forward, loss helpers), in any file.
* ``training_loops()``        [TrainingLoop] loops whose body, callees included, runs a backward
                              and an optimizer step; ``actions`` is that body flattened in
                              source order (backward / step / reset, each at its own event).
* ``origins(fn, expr, i)``    [Origin] the statements that created the object ``expr`` names at
                              event ``i``: through assignments, ``self.attr`` stores, parameters
                              (to every caller's argument), returns of project functions, and
                              calls that return their input (``.to()``, ``DDP(...)``,
                              ``torch.compile``); ``copy.deepcopy`` and constructors create.
* ``optimizers()``            [OptimizerBuild] every optimizer construction and the module
                              expressions whose ``.parameters()`` it was given;
                              ``param_origins(build)`` where those modules were created.
* ``steps_module_of(fn, call, back, i)``  the optimizers stepped with the gradient of the
                              backward at ``(back, i)`` may hold the parameters of the module
                              the call event ``call`` of ``fn`` runs.
* ``saved_alike(fn, m, i)``    the project's ``torch.save(x.state_dict())`` calls elsewhere of
                              a module of ``m``'s class (or a copy of one) built with fewer
                              arguments than ``m`` (a pretraining stage without the new head).
* ``keeps_no_grad(step)``      a step action's optimizer updates sparse embeddings from what
                              their forward recorded, not from ``.grad`` (DGL, WholeGraph).
* ``trains_module(fn, i, m)`` the backward at ``i`` may train module ``m``: False only when
                              every optimizer stepped after it (``stepped_after``) is known to
                              hold other parameters (``holds``: a fresh linear probe's).
* ``mode_free(fn, m, i)``     eval/train mode changes nothing ``m`` computes: what builds it
                              makes no Dropout, BatchNorm or ``self.training`` reader.
* ``contains_class(outer, inner)``  a module class builds another among its attributes.
* ``module_call(fn, i)``      the call runs a ``torch.nn.Module`` (project class, ``torch.nn`` /
                              ``dgl.nn`` layer, or a model-like name when nothing resolves).
* ``resolve(fn, event)``      Project.resolve_call plus methods of objects whose origin is known.
* ``grad_off(fn, i)``         the ``torch.no_grad()`` / ``inference_mode()`` /
                              ``set_grad_enabled(False)`` call event that disables gradients at
                              event ``i`` (innermost wins, ``enable_grad`` re-enables), or None.
* ``grad_off_decorator(fn)``  the index in ``fn.decorators`` of a grad-disabling decorator.
* ``extra_forwards()``         [(TrainingLoop, fn, i)] module calls run each training iteration
                              in train mode whose value no backward reads: with gradients off,
                              or after the step's backward (in the loop's body or the step
                              functions it calls).

Plain predicates: ``is_backward(event)``, ``is_grad_reset(event)``, ``is_optimizer_class(name)``,
``looks_optimizer(text)``, ``detached_text(text, name)``.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Optional

from auditor.static.dataflow import (MAX_INSTANCE_CLASSES, SHARING_METHODS, SHARING_WRAPPERS,
                                     callee_text, classmethod_instances, held_container, instance_classes)
from auditor.static.facts import MODULE_SCOPE, ClassInfo, Event, FunctionInfo, Span
from auditor.static.paths import (BACKWARD_METHODS, NO_GRAD_CONTEXTS, NOT_FORWARD, Identity, bindings,
                                  rebase)
from auditor.static.project import CALL_ARGUMENT, MAX_COMPOSED, Project
from auditor.static.texts import container_items, dict_entries, top_level_items

Site = tuple[FunctionInfo, int]

GRAD_ON = ("torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad")
GRAD_SET = ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
            "torch.autograd.grad_mode.set_grad_enabled")
OPTIMIZER_CLASSES = {
    "Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
    "LBFGS", "SparseAdam", "ASGD", "Rprop", "Lamb", "LAMB", "Lion", "Adafactor", "FusedAdam",
}
# optimizers of sparse embeddings (DGL's NodeEmbedding, WholeGraph's embeddings) that update
# from the gradients the embedding records in its forward, not from `.grad`: their steps leave
# nothing behind to reset. Classes and the library factories that make them.
SPARSE_OPTIMIZERS = ("dgl.optim.", "dgl.distributed.optim.",
                     "pylibwholegraph.torch.create_wholememory_optimizer",
                     "pylibwholegraph.torch.WholeMemoryOptimizer")
COPIERS = {"copy.deepcopy", "copy.copy", "deepcopy"}
# attribute names of modules that are meant to stay untrained (teachers, EMA targets...)
UNTRAINED_NAME = re.compile(
    r"teacher|ema|momentum|target|frozen|fixed|ref(erence)?(_|$)|pretrain|old|prev|tokenizer|clip",
    re.I)
MODEL_NAME = re.compile(r"model|net|encoder|decoder|gnn|gat|gcn|backbone|student|mae|head", re.I)
MAX_DEPTH = 6
MAX_HOOK_DEPTH = 3  # helpers below a hook the loop calls, followed for their forwards
# torch.nn modules whose forward does not read `self.training` (no Dropout, no BatchNorm)
MODE_FREE_LAYERS = {
    "Linear", "Bilinear", "Identity", "Embedding", "EmbeddingBag", "ReLU", "ReLU6", "LeakyReLU",
    "PReLU", "ELU", "CELU", "GELU", "SELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Hardtanh",
    "Softmax", "LogSoftmax", "Softplus", "Softsign", "Sequential", "ModuleList", "ModuleDict",
    "LayerNorm", "GroupNorm", "Flatten", "Unflatten", "Parameter", "ParameterList", "ParameterDict",
    "Conv1d", "Conv2d", "Conv3d",
}
NON_DIFFERENTIABLE = {"argmax", "argmin", "argsort", "long", "int", "bool", "item", "detach",
                      "sign", "round", "floor", "ceil", "nonzero", "tolist", "numpy", "numel",
                      "size", "eq", "ne", "gt", "lt", "ge", "le", "randperm", "multinomial"}


# function names too common to find a step function's callers by (a module's own body, entry
# points, a module's forward): searching for them would load most of a large tree
_COMMON_NAMES = frozenset({MODULE_SCOPE, "main", "run", "forward", "__call__", "__init__", "step"})


def is_backward(event: Event) -> bool:
    if event.kind != "call":
        return False
    if event.func in ("torch.autograd.backward",):
        return True
    return event.method in BACKWARD_METHODS and bool(event.receiver) and event.receiver != "super()"


def backward_operands(event: Event) -> list[str]:
    """The names a backward call reads for its loss: ``loss`` of ``loss.backward()``, of
    ``torch.autograd.backward(loss)`` and of ``self.manual_backward(loss)`` (not ``self``)."""
    skip = {event.func, event.receiver} if event.method == "manual_backward" else {event.func}
    return [u for u in event.uses if u not in skip and not u.endswith(".backward")]


def is_grad_reset(event: Event) -> bool:
    """``zero_grad`` (optimizer or module, any ``set_to_none``) or ``p.grad = None`` / ``.zero_()``."""
    if event.kind == "call":
        if event.method == "zero_grad":
            return True
        return event.receiver.endswith(".grad") and event.method in ("zero_", "detach_", "fill_")
    return event.kind == "assign" and any(t.endswith(".grad") for t in event.targets)




def is_optimizer_class(func: str) -> bool:
    name = func.removesuffix("()")
    last = name.rsplit(".", 1)[-1]
    if "lr_scheduler" in name or "scheduler" in last.lower():
        return False
    return last in OPTIMIZER_CLASSES or (name.startswith("torch.optim.") and last[:1].isupper())


_OPT_WORD = re.compile(r"(^|_)(opt|optim|optimi[sz]er|optimi[sz]ers)(_|\d|$)|optimi[sz]er", re.I)


def looks_optimizer(text: str) -> bool:
    last = re.sub(r"\[.*?\]", "", text).rsplit(".", 1)[-1]
    return bool(_OPT_WORD.search(last)) and "sched" not in last.lower()


# one `.method(args)` link of a call chain (arguments with one level of nested parentheses)
_CHAIN_LINK = re.compile(r"\.(\w+)(\((?:[^()]|\([^()]*\))*\))?")
_INTEGER_CAST = re.compile(r"^\((dtype\s*=\s*)?(torch\.|th\.)?(long|int\d*|bool|uint8)\)$")


def detached_text(text: str, name: str) -> bool:
    """Every mention of ``name`` in ``text`` is turned into a number or detached: a call chain
    on it that goes through ``.item()`` / ``.detach()`` / ``.argmax()`` / ``.size()`` / an integer
    cast (``.to(torch.long)``), or ``float(name)``."""
    mentions = [m.end() for m in re.finditer(rf"(?<![\w.'\"]){re.escape(name)}\b(?!['\"])", text)]
    if not mentions:
        return False
    for end in mentions:
        start = text[: end - len(name)]
        if not (re.search(r"(float|int)\(\s*$", start) or _chain_cuts(text[end:])):
            return False
    return True


def _chain_cuts(rest: str) -> bool:
    rest = re.sub(r"^(\[[^\]]*\])*", "", rest)
    if rest.startswith(".data") and not rest.startswith(".data["):
        return True
    while True:
        link = _CHAIN_LINK.match(rest)
        if link is None:
            return False
        method, args = link.group(1), link.group(2)
        if method in NON_DIFFERENTIABLE or (method in ("to", "type") and args
                                            and _INTEGER_CAST.match(args)):
            return True
        rest = re.sub(r"^(\[[^\]]*\])*", "", rest[link.end():])


def outer_call(fn: FunctionInfo, j: int) -> Optional[Event]:
    """The outermost call of statement event ``j`` (``pred = logits.argmax(-1)``: argmax)."""
    return next((fn.events[k] for k in calls_within(fn, j, first=j)), None)


def calls_within(fn: FunctionInfo, j: int, first: Optional[int] = None) -> Iterator[int]:
    """Indices of the call events inside event ``j``'s span, from ``first`` (the event after
    ``j`` unless given) on, in order. The collector records a file's events in source order, so
    the scan stops at the first event that starts past the span instead of running to the end
    of the function for every statement asked about; a framework's synthetic loop, made of
    events from several methods, is scanned whole."""
    events = fn.events
    span = events[j].span
    end = (span.end_line, span.end_column)
    for k in range(j + 1 if first is None else first, len(events)):
        e = events[k]
        if not fn.framework and (e.span.line, e.span.column) > end:
            return
        if e.kind == "call" and e.span.within(span):
            yield k


def statement_start(fn: FunctionInfo, k: int) -> int:
    """The first event of the statement that holds event ``k``: names an expression reads are
    looked up before it (``model = copy.deepcopy(model)`` reads the *previous* ``model``)."""
    span = fn.events[k].span
    start = k
    for j in range(k - 1, -1, -1):
        if not span.within(fn.events[j].span):
            break
        start = j
    return start


def _statement_head(fn: FunctionInfo, k: int) -> Event:
    """The event that opens the statement holding event ``k``."""
    return fn.events[statement_start(fn, k)]


def _unique(sites: list[Site]) -> list[Site]:
    seen: set[tuple[str, int]] = set()
    out: list[Site] = []
    for fn, i in sites:
        if (fn.qualname, i) not in seen:
            seen.add((fn.qualname, i))
            out.append((fn, i))
    return out


# `f(...)["optimizer"]`, `f(...)[0][0]`: literal subscripts of a call's result
_RETURN_ENTRY = re.compile(r"""^([\w.]+\(.*\))((?:\[\s*(?:\d+|'\w+'|"\w+")\s*\])+)$""", re.S)


def _maximal(names: list[str]) -> list[str]:
    """Drop names that are roots of longer chains in the same list (``a`` when ``a.b`` is read)."""
    return [n for n in names if not any(o != n and o.startswith(n + ".") for o in names)]


@dataclass(frozen=True)
class Origin:
    """Where an object was made. ``kind``: new (a constructor or factory), copy (deepcopy),
    self (the instance whose method runs), unknown (could not be followed)."""

    kind: str
    cls: str = ""
    fn: str = ""
    index: int = -1
    span: Optional[Span] = field(default=None, compare=False)
    # the call sites of project functions (factories) that returned it, outermost first: two
    # `model = build_model(args)` calls make two instances, though one constructor built both
    via: tuple[tuple[str, int], ...] = ()
    via_spans: tuple[Span, ...] = field(default=(), compare=False)

    @property
    def known(self) -> bool:
        return self.kind in ("new", "copy")

    @property
    def site(self) -> tuple[str, int]:
        """The statement of the caller's own code that made it: the outermost factory call,
        else the constructor."""
        return self.via[0] if self.via else (self.fn, self.index)

    @property
    def site_span(self) -> Optional[Span]:
        return self.via_spans[0] if self.via_spans else self.span

    def same_as(self, other: "Origin") -> bool:
        """The same construction, one of them seen through more factory calls than the other
        (``build_model`` inside ``make_state``, and ``make_state(cfg)`` in the script)."""
        def outer(a: tuple, b: tuple) -> bool:
            return len(a) <= len(b) and b[len(b) - len(a):] == a

        return self.known and (self.kind, self.cls, self.fn, self.index) == \
            (other.kind, other.cls, other.fn, other.index) \
            and (outer(self.via, other.via) or outer(other.via, self.via))

    def through(self, fn: str, index: int, span: Span) -> "Origin":
        """The same object, as returned by the call at ``index`` of ``fn``."""
        if not self.known:
            return self
        return Origin(self.kind, self.cls, self.fn, self.index, self.span,
                      ((fn, index), *self.via), (span, *self.via_spans))


@dataclass
class Action:
    kind: str  # backward | step | reset
    fn: FunctionInfo
    index: int
    receiver: str = ""  # the optimizer a step/reset acts on, as written there

    @property
    def event(self) -> Event:
        return self.fn.events[self.index]


@dataclass
class TrainingLoop:
    fn: FunctionInfo
    loop_id: int
    actions: list[Action] = field(default_factory=list)

    def of(self, kind: str) -> list[Action]:
        return [a for a in self.actions if a.kind == kind]


@dataclass
class OptimizerBuild:
    fn: FunctionInfo
    index: int
    modules: list[str]  # expressions whose parameters it was given (``model``, ``model.encoder``)
    filtered: bool  # params chosen by requires_grad (an explicit trainable subset)
    made: list[int] = field(default_factory=list)  # `Model(...).parameters()`: the call events
    # where each of ``modules`` is read (the optimizer call, or `params = model.parameters()`)
    read_at: list[int] = field(default_factory=list)
    # parameters of ``fn`` given as the optimizer's params: what its callers pass decides
    handed: list[str] = field(default_factory=list)
    # (function, module, event index) of modules whose parameters lists it was given were
    # filled with (``Training.collected``)
    collected: list[tuple[FunctionInfo, str, int]] = field(default_factory=list)

    @property
    def event(self) -> Event:
        return self.fn.events[self.index]

    def modules_at(self) -> list[tuple[str, int]]:
        return [(m, self.read_at[n] if n < len(self.read_at) else self.index)
                for n, m in enumerate(self.modules)]


_PARAMETERS_OF = re.compile(r"([\w.]+)\.(?:named_)?parameters\(\)")


def loop_header(fn: FunctionInfo, k: int, name: str) -> Optional[Event]:
    """The ``for`` statement before event ``k`` of ``fn`` that binds ``name``, if any."""
    return next((fn.events[j] for j in range(k - 1, -1, -1) if fn.events[j].kind == "assign"
                 and name in fn.events[j].targets and fn.events[j].text.startswith("for ")), None)

_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_FOR_IN = re.compile(r"for\s+\w+\s+in\s+(\w+)\s*:")

_CACHE: "weakref.WeakKeyDictionary[Project, Training]" = weakref.WeakKeyDictionary()
_ASKING: list = []  # an origins question being answered (identity-compared)


class Training:
    def __init__(self, project: Project) -> None:
        self.project = project
        self._origins: dict[tuple, list[Origin]] = {}
        # set when an answer was cut short (the depth bound, or a question still being answered
        # further up): such an answer is partial and is not kept, or a shallower question asked
        # later would get it from the cache instead of its full answer
        self._cut = False
        self._slices: dict[tuple, list[Site]] = {}  # loss_slice answers (they are asked often)
        self._resolved: dict[tuple, list[str]] = {}
        self._contains: dict[tuple[str, str], bool] = {}
        self._event_indices: dict[str, tuple[list, dict[int, int]]] = {}
        # (function, call site, project state) -> the arguments bound to its parameters
        self._bindings: dict[tuple, list[tuple[FunctionInfo, int, str, str]]] = {}
        self._submodules: dict[tuple[str, str], set[str]] = {}
        self._loops: Optional[list[TrainingLoop]] = None
        self._optimizers: Optional[list[OptimizerBuild]] = None
        self._passed_back_memo: dict[tuple, frozenset[Origin]] = {}  # per call site and callee
        self._trains: dict[tuple, bool] = {}  # trains_module answers (asked at every backward walked)
        self._mode_free: dict[tuple, bool] = {}  # asked at the backward of every trained path

    @classmethod
    def of(cls, project: Project) -> "Training":
        if project not in _CACHE:
            _CACHE[project] = cls(project)
        return _CACHE[project]

    # -- grad mode ---------------------------------------------------------------------------
    @staticmethod
    def grad_off(fn: FunctionInfo, i: int) -> Optional[int]:
        event = fn.events[i]
        off: Optional[int] = None
        for item in event.context:
            name = item.removesuffix("()")
            if name not in NO_GRAD_CONTEXTS and name not in GRAD_ON and name not in GRAD_SET:
                continue
            call = next((j for j in range(i, -1, -1) if fn.events[j].kind == "call"
                         and fn.events[j].func == name
                         and set(fn.events[j].context) <= set(event.context)), None)
            if name in GRAD_ON:
                off = None
                continue
            args = fn.events[call].args if call is not None else []
            flag = args[0] if args else (fn.events[call].kwargs.get("mode", "") if call is not None else "")
            if name in GRAD_SET:
                off = call if flag == "False" else None  # a variable: train/eval switch, silent
            else:
                off = None if flag == "False" else call  # inference_mode(False) re-enables
        return off

    @staticmethod
    def grad_off_decorator(fn: FunctionInfo) -> Optional[int]:
        for k, deco in enumerate(fn.decorators):
            if deco.removesuffix("()") in NO_GRAD_CONTEXTS:
                return k
        return None

    @staticmethod
    def decorator_span(fn: FunctionInfo, k: int) -> Span:
        """Position of decorator ``k``: its call event when it is called, else the line above."""
        name = fn.decorators[k].removesuffix("()")
        assert fn.span is not None
        for e in fn.events:
            if e.kind == "call" and e.func == name and e.span.line < fn.span.line:
                return e.span
        line = fn.span.line - (len(fn.decorators) - k)
        return Span(line, fn.span.column + 1, line, fn.span.column + 1 + len(name))

    # -- calls -------------------------------------------------------------------------------
    def resolve(self, fn: FunctionInfo, event: Event) -> list[str]:
        key = (fn.qualname, id(event))
        if key in self._resolved:
            return self._resolved[key]
        self._resolved[key] = []  # recursion guard
        found = list(self.project.resolve_call(event, fn))
        if not found and event.kind == "call" and "(" not in event.func:
            i = fn.position(event)
            chain = event.func
            method = "forward"
            if event.method and event.receiver and not self._is_module_attr(fn, chain, i):
                chain, method = event.receiver, event.method
            for origin in self.origins(fn, chain, i):
                if origin.cls in self.project.classes:
                    # a dispatcher runs as its copy for the key or name this call passes
                    found += [self.project.copy_for(c, event)
                              for c in self.project.method_candidates(origin.cls, method)
                              if self.project.function(c) is not None]
        self._resolved[key] = list(dict.fromkeys(found))
        return self._resolved[key]

    def _is_module_attr(self, fn: FunctionInfo, chain: str, i: int) -> bool:
        """``chain`` (``self.encoder``) names a module held as an attribute, not a method of its
        receiver's class (``model.update_target_network``)."""
        receiver, _, attr = chain.rpartition(".")
        if receiver and any(
                o.cls in self.project.classes and any(
                    self.project.function(c) is not None
                    for c in self.project.method_candidates(o.cls, attr))
                for o in self.origins(fn, receiver, i)):
            return False
        return any(o.known for o in self.origins(fn, chain, i))

    def is_module_class(self, cls: str, seen: Optional[set[str]] = None) -> bool:
        seen = seen or set()
        if cls in seen:
            return False
        seen.add(cls)
        last = cls.rsplit(".", 1)[-1]
        if cls.startswith(("torch.nn.", "dgl.nn.", "torch_geometric.nn.")):
            return not last.endswith("Loss") and last[:1].isupper() and "functional" not in cls
        if cls not in self.project.classes:  # `from pkg import BaseModel`, re-exported by pkg
            cls = self.project.reexported(cls) or ""
        if cls not in self.project.classes:
            return False
        return any(b.endswith("Module") or self.is_module_class(b, seen)
                   for b in self.project.bases_of(cls))

    def mode_free(self, fn: FunctionInfo, expr: str, i: int) -> bool:
        """Putting ``expr`` in eval or train mode changes nothing: every statement that builds
        it (a local's last assignment; for an attribute, every ``self.<name> = ...`` of the
        project's classes) makes only modules without mode-dependent layers. When the classes
        the object may be are known (:func:`instance_classes`: a registry's model narrowed by
        the methods called on it), they answer: each builds no mode-dependent layer."""
        key = (fn.qualname, expr, i)
        if key not in self._mode_free:
            self._mode_free[key] = self._mode_free_uncached(fn, expr, i)
        return self._mode_free[key]

    def _mode_free_uncached(self, fn: FunctionInfo, expr: str, i: int) -> bool:
        classes = instance_classes(self.project, fn, expr, i)
        if classes and all(c in self.project.classes for c in classes):
            return all(self._class_mode_free(c, set()) for c in sorted(classes))
        if "." not in expr:
            found = self._assignment(fn, expr, i)
            builds = [found] if found else []
        else:
            attr = "self." + expr.rsplit(".", 1)[-1]
            self.project.load_mentioning(attr)  # the classes that build it, however skipped
            builds = [(f, j) for f in list(self.project.functions.values()) if f.class_name
                      for j, e in enumerate(f.events) if e.kind == "assign" and e.targets == [attr]]
        return bool(builds) and all(self._builds_mode_free(f, j, set()) for f, j in builds)

    def _builds_mode_free(self, fn: FunctionInfo, j: int, seen: set[str]) -> bool:
        calls = self._expression_events(fn, j)
        return bool(calls) and all(self._call_mode_free(fn, fn.events[k], seen) for k in calls)

    def _call_mode_free(self, fn: FunctionInfo, call: Event, seen: set[str]) -> bool:
        func = call.func.split("()")[0]
        last = func.rsplit(".", 1)[-1]
        if "dropout" in func.lower() or "batch_norm" in func.lower():
            return False
        if func.startswith("torch.nn.") and last[:1].isupper():
            return last in MODE_FREE_LAYERS
        if func.startswith("torch.") and not last[:1].isupper():
            return True  # `torch.zeros`, `F.relu`: a function, no module (dropout caught above)
        if func not in self.project.classes:
            self.project.function(func + ".__init__")  # its module, when the prefilter skipped it
            func = self.project.reexported(func) or func
        if func in self.project.classes:
            return self._class_mode_free(func, seen)
        if self.resolve(fn, call) or call.receiver:
            return False  # a project factory, `m.to(device)`: what it returns is not followed here
        return not last[:1].isupper()  # `range`, `len`; an unknown class may have modes

    def _builds_attribute(self, method: FunctionInfo, k: int) -> bool:
        """Call event ``k`` of ``method`` is the whole value of a ``self.<attr> = ...`` that the
        class calls as a module (``self.<attr>(...)``), and a project function: a submodule made
        by a factory (``self.encoder = build("encoder", name)``) whose class is not named here.
        A factory's tensors or tables (``self.masks = self.make_masks()``) are never called."""
        e = method.events[k]
        if len(e.targets) != 1 or not e.targets[0].startswith("self.") or not method.class_name \
                or outer_call(method, statement_start(method, k)) is not e or not self.resolve(method, e):
            return False
        info = self.project.classes.get(method.class_name)
        methods = [self.project.function(q) for q in (info.methods if info is not None else ())]
        return any(x.kind == "call" and x.func == e.targets[0]
                   for f in methods if f is not None for x in f.events)

    def _class_mode_free(self, cls: str, seen: set[str]) -> bool:
        if cls in seen:
            return True
        seen.add(cls)
        info = self.project.classes[cls]
        if not all(b.endswith("Module") or (b in self.project.classes and self._class_mode_free(b, seen))
                   for b in self.project.bases_of(cls)):
            return False
        for qual in info.methods:
            method = self.project.function(qual)
            if method is None:
                return False
            for k, e in enumerate(method.events):
                if "self.training" in e.text or (e.kind == "call" and not self._call_mode_free(
                        method, e, seen) and (e.func.split("()")[0] in self.project.classes
                                              or "dropout" in e.func.lower()
                                              or e.func.startswith("torch.nn.")
                                              or self._builds_attribute(method, k))):
                    return False
        return True

    def holds_no_parameters(self, cls: str) -> bool:
        """A project module class with no ``__init__`` of its own or of a project base, built
        right on ``nn.Module``: it has nothing an optimizer could hold (a scoring head that only
        computes in ``forward``)."""
        info = self.project.classes.get(cls)
        # a class with no method at all is elided (`...`) or unknown, not shown to be empty
        if info is None or not info.methods or any(m.rsplit(".", 1)[-1] == "__init__" for m in info.methods):
            return False
        return bool(info.bases) and all(
            b in ("torch.nn.Module", "torch.nn.modules.module.Module")
            or (b in self.project.classes and self.holds_no_parameters(b)) for b in self.project.bases_of(cls))

    def contains_class(self, outer: str, inner: str, depth: int = 0) -> bool:
        """``outer`` is ``inner`` or builds an ``inner`` among its attributes (nested modules)."""
        if outer == inner:
            return True
        if depth > 3 or outer not in self.project.classes:
            return False
        return any(made in self.project.classes and self.contains_class(made, inner, depth + 1)
                   for made in self.submodule_classes(outer))

    def submodule_classes(self, outer: str) -> set[str]:
        """Classes of the objects ``outer``'s methods store on the instance: ``self.x = C(...)``,
        ``self.x = factory(...)`` (what the factory returns), ``self.layers.append(C(...))``."""
        key = (outer, "")
        if key in self._submodules:
            return self._submodules[key]
        self._submodules[key] = set()  # recursion guard
        out: set[str] = set()
        for qual in list(self.project.functions):
            fn = self.project.functions[qual]
            if fn.class_name != outer:
                continue
            for k, e in enumerate(fn.events):
                if e.kind != "call":
                    continue
                head = _statement_head(fn, k)
                stored = any(t.startswith("self.") for t in head.targets) or (
                    head.kind == "call" and head.receiver.startswith("self.")
                    and head.method in ("append", "extend", "insert", "add_module"))
                if stored:
                    out |= {o.cls for o in self._call_origin(fn, k, 0) if o.cls}
        self._submodules[key] = out
        return out

    def module_call(self, fn: FunctionInfo, i: int) -> bool:
        """The call at ``i`` runs a module's parameters (its forward, or a method of it, or an
        entry of a container module: ``m["encoder"](g, x)``)."""
        event = fn.events[i]
        if event.kind != "call" or "(" in event.func:
            return False
        chain = event.func
        candidates = [chain, *held_container(chain)]
        if event.receiver and event.method:
            candidates.append(event.receiver)
        for cand in candidates:
            if cand == "self" and fn.class_name and self.is_module_class(fn.class_name):
                return True
            if any(self.is_module_class(o.cls) for o in self.origins(fn, cand, i) if o.cls):
                return True
        for callee in self.resolve(fn, event):
            cf = self.project.function(callee)
            if cf is not None and cf.class_name and self.is_module_class(cf.class_name):
                return True
        # nothing resolves (a model handed in from outside the project): go by the name
        return not self.resolve(fn, event) and bool(MODEL_NAME.search(chain.rsplit(".", 1)[-1])) \
            and not chain.startswith(("torch.", "F.", "np.", "dgl."))

    def runs_forward(self, fn: FunctionInfo, i: int) -> bool:
        """The module call at ``i`` computes something with the module's layers: the module
        called itself, or a method of it whose body calls a module (``model.embed(g, x)``), not
        a parameter walk (``model.parameters()``) or a weight update (an EMA target's)."""
        e = fn.events[i]
        if e.method in NOT_FORWARD:
            return False
        if not e.method or e.method in ("forward", "__call__"):
            return True
        if any(q.rsplit(".", 1)[-1] in ("forward", "__call__") for q in self.resolve(fn, e)):
            return True  # `self.model(g)`: the attribute is the module called
        methods = {f"{o.cls}.{e.method}" for o in self.origins(fn, e.receiver, i) if o.known}
        methods |= {q for q in self.resolve(fn, e) if q.rsplit(".", 1)[-1] == e.method}
        return any(any(self.module_call(callee, k) for k, x in enumerate(callee.events)
                       if x.kind == "call" and x.method not in NOT_FORWARD)
                   for q in sorted(methods) if (callee := self.project.function(q)) is not None)

    # -- where values come from --------------------------------------------------------------
    def origins(self, fn: FunctionInfo, expr: str, i: int, depth: int = 0) -> list[Origin]:
        key = (fn.qualname, expr, i)
        known = self._origins.get(key)
        if known is not None:
            if known is _ASKING:
                self._cut = True
                return [Origin("unknown")]
            return known
        self._origins[key] = _ASKING  # recursion guard
        outer_cut, self._cut = self._cut, False
        answer = list(dict.fromkeys(self._origins_uncached(fn, expr, i, depth))) or [Origin("unknown")]
        if self._cut:
            del self._origins[key]
        else:
            self._origins[key] = answer
        self._cut = self._cut or outer_cut
        return answer

    def _origins_uncached(self, fn: FunctionInfo, expr: str, i: int, depth: int) -> list[Origin]:
        if depth > MAX_DEPTH:
            self._cut = True
            return [Origin("unknown")]
        if not re.fullmatch(r"[\w.]+", expr or ""):
            return [Origin("unknown")]
        if expr == "self" and fn.class_name:
            return [Origin("self", fn.class_name, fn.qualname)]
        found = self._assignment(fn, expr, i)
        if found is not None:
            return self._statement_origin(*found, expr=expr, depth=depth)
        if expr.startswith("self.") and fn.class_name:
            out: list[Origin] = []
            # the methods of the class and its bases, and of the classes composed with it in a
            # subclass (a mixin beside the trainer's base: `self.model` one sets, the other reads)
            own = self.project.lineage(fn.class_name) or [fn.class_name]
            composed = [c for sub in self.project.subclasses(fn.class_name)[:MAX_COMPOSED]
                        for c in self.project.lineage(sub) if c not in own]
            for qual in (q for c in dict.fromkeys(own + composed) for q in self.project.members(c)):
                if qual == fn.qualname:
                    continue
                method = self.project.functions[qual]
                hit = self._assignment(method, expr, len(method.events))
                if hit is not None:
                    out += self._statement_origin(*hit, expr=expr, depth=depth + 1)
            if out:
                return out
            out = self._property_origins(fn.class_name, expr[5:], depth)
            if out:
                return out
        root = expr.split(".")[0]
        if root in fn.params and root not in ("self", "cls"):
            return self._from_callers(fn, expr, depth)
        outer = self.project.enclosing(fn)
        if outer is not None and root != "self" and self._assignment(fn, root, i) is None:
            # a closure's free variable: what the function defining it binds the name to
            return self.origins(outer, expr, len(outer.events), depth + 1)
        if "." in expr and root != "self":
            base, attr = expr.rsplit(".", 1)
            return self._held(fn, base, attr, i, depth) or self.origins(fn, base, i, depth + 1)
        return [Origin("unknown")]

    def _property_origins(self, cls: str, attr: str, depth: int) -> list[Origin]:
        """``self.encoder`` read through ``@property def encoder(self): return self._model.encoder``:
        where the values the property returns come from."""
        out: list[Origin] = []
        for owner in self.project.lineage(cls) if "." not in attr else ():
            getter = self.project.functions.get(f"{owner}.{attr}")
            if getter is None or "property" not in getter.decorators:
                continue
            for j, e in enumerate(getter.events):
                value = e.text.removeprefix("return").strip() if e.kind == "return" else ""
                # `return self._model.encoder`: a part of the object the attribute holds
                while re.fullmatch(r"[\w.]+", value):  # (a getter is no step of its own)
                    found = [o for o in self.origins(getter, value, j, depth) if o.known]
                    if found or value.count(".") < 2:
                        out += found
                        break
                    value = value.rsplit(".", 1)[0]
            break
        return out

    def _held(self, fn: FunctionInfo, base: str, attr: str, i: int, depth: int) -> list[Origin]:
        """``state.model``: what the objects ``base`` holds were built holding as ``attr``: the
        argument their construction passed for that field (a NamedTuple's or a dataclass's,
        in order) or for the ``__init__`` parameter bound to ``self.attr``. Empty when no
        construction of ``base`` says."""
        out: list[Origin] = []
        for o in self.origins(fn, base, i, depth + 1):
            info = self.project.classes.get(o.cls) if o.kind == "new" else None
            maker = self.project.functions.get(o.fn) if info is not None else None
            if info is None or maker is None or not 0 <= o.index < len(maker.events):
                continue
            held = self._property_origins(o.cls, attr, depth)  # `state.model`, a property
            if held:
                out += held
                continue
            param, position = self._field_param(info, attr)
            arg = maker.events[o.index].argument(param, position) if param else ""
            if re.fullmatch(r"[\w.]+", arg):
                out += [h for h in self.origins(maker, arg, statement_start(maker, o.index), depth + 1)
                        if h.known]
        return out

    def _field_param(self, info: ClassInfo, attr: str) -> tuple[str, int]:
        """The constructor parameter (name, position after ``self``) that sets ``attr``, or
        ("", -1)."""
        if attr in info.fields and f"{info.qualname}.__init__" not in self.project.functions:
            return attr, info.fields.index(attr)
        init = self.project.functions.get(f"{info.qualname}.__init__")
        for e in init.events if init is not None else ():
            bound = e.bound_to(f"self.{attr}") if e.kind == "assign" else []
            if len(bound) == 1 and bound[0] in init.params[1:]:
                return bound[0], init.params.index(bound[0]) - 1
        return "", -1

    @staticmethod
    def _assignment(fn: FunctionInfo, expr: str, i: int) -> Optional[Site]:
        for j in range(min(i, len(fn.events)) - 1, -1, -1):
            e = fn.events[j]
            if e.kind in ("assign", "augassign") and expr in e.targets:
                return fn, j
        return None

    def _statement_origin(self, fn: FunctionInfo, j: int, expr: str, depth: int) -> list[Origin]:
        stmt = fn.events[j]
        if stmt.kind == "assign" and len(stmt.targets) > 1 and expr in stmt.targets \
                and not stmt.text.startswith(("for ", "async for ")):
            return self._unpacked_origin(fn, j, stmt.targets.index(expr), depth)
        if stmt.kind == "augassign" or len(stmt.targets) != 1:
            return [Origin("unknown")]  # loop targets, augmented assignments: not followed
        calls = list(calls_within(fn, j))
        keys = _RETURN_ENTRY.match(stmt.text.split("=", 1)[-1].strip())
        if calls and keys and fn.events[calls[0]].span.within(stmt.span):
            return self._returned_entry(fn, calls[0], re.findall(r"\[([^\[\]]+)\]", keys.group(2)), depth)
        if calls:
            return self._call_origin(fn, calls[0], depth)
        values = _maximal([u for u in stmt.uses if u not in ("None", "True", "False")])
        if len(values) == 1 and re.fullmatch(r"[\w.]+", stmt.text.split("=", 1)[-1].strip()):
            # `self.model = model`: another name for one value, no branch: not a step deeper
            return self.origins(fn, values[0], j, depth)
        return [Origin("unknown")]

    def _returned_entry(self, fn: FunctionInfo, k: int, keys: list[str], depth: int) -> list[Origin]:
        """``build()["optimizer"]``, ``build()[0][0]``: the entry of what the callee returns as
        a dict or list display (``return {"optimizer": opt, ...}``, ``return [opt], [sched]``)."""
        call = fn.events[k]
        out: list[Origin] = []
        for qual in self.resolve(fn, call) if depth <= MAX_DEPTH else ():
            callee = self.project.function(qual)
            for r, e in enumerate(callee.events if callee is not None else ()):
                if e.kind != "return":
                    continue
                text = e.text.removeprefix("return").strip()
                for key in (k.strip() for k in keys):
                    if key[:1] in "'\"":
                        text = dict_entries(text).get(key.strip("'\""), "")
                        continue
                    parts = top_level_items(text)  # a bare tuple (`return [opt], [sched]`), else a display
                    listed = [p.strip() for p in parts] if len(parts) > 1 else container_items(text)
                    text = listed[int(key)] if int(key) < len(listed) else ""
                found: list[Origin] = []
                if re.fullmatch(r"[\w.]+", text):
                    found = self.origins(callee, text, r, depth + 1)
                elif re.fullmatch(r"[\w.]+\(.*\)", text, re.S):  # the entry is a call: its event
                    name = text.split("(", 1)[0].rsplit(".", 1)[-1]
                    made = next((m for m in range(r + 1, len(callee.events)) if callee.events[m].kind == "call"
                                 and callee.events[m].span.within(e.span)
                                 and callee.events[m].func.removesuffix("()").rsplit(".", 1)[-1] == name), None)
                    found = self._call_origin(callee, made, depth + 1) if made is not None else []
                out += self._returned_through(found, fn, k, call.span, depth, callee)
        return out or [Origin("unknown")]

    def _returned_through(self, found: list[Origin], fn: FunctionInfo, k: int, span: Span,
                          depth: int, callee: Optional[FunctionInfo] = None) -> list[Origin]:
        """The objects a call (event ``k`` of ``fn``) returns, as made through that call; one the
        caller handed in comes back as itself (``model, opt = runner.prepare(model, opt)``),
        not made by the callee: the objects of the arguments bound to parameters the callee
        returns by name."""
        handed = self._passed_back(fn, k, callee, depth) if callee is not None and any(o.known for o in found) \
            else frozenset()
        return [o if o in handed else o.through(fn.qualname, k, span) for o in found]

    def _passed_back(self, fn: FunctionInfo, k: int, callee: FunctionInfo, depth: int) -> frozenset[Origin]:
        """The objects of the arguments that call ``k`` of ``fn`` binds to parameters ``callee``
        returns by name (kept per call site and callee)."""
        key = (fn.qualname, k, callee.qualname, self.project._generation)
        known = self._passed_back_memo.get(key)
        if known is not None:
            return known
        call = fn.events[k]
        returned = {w for e in callee.events if e.kind == "return" for w in re.findall(r"\w+", e.text)}
        bound = 1 if callee.params[:1] == ["self"] else 0
        handed: set[Origin] = set()
        for position, param in enumerate(callee.params):
            argument = call.argument(param, position - bound) if param in returned and param != "self" else ""
            if re.fullmatch(r"[\w.]+", argument):
                handed.update(o for o in self.origins(fn, argument, statement_start(fn, k), depth + 1) if o.known)
        self._passed_back_memo[key] = frozen = frozenset(handed)
        return frozen

    def _unpacked_origin(self, fn: FunctionInfo, j: int, position: int, depth: int) -> list[Origin]:
        """``optimizer, scheduler = build_optimizer(model)``: the object at ``position`` of what
        the callee returns (``return optimizer, scheduler``), or of a tuple of names assigned."""
        stmt = fn.events[j]
        value = stmt.text.split("=", 1)[-1].strip()
        items = top_level_items(value)
        if len(items) > position and len(items) > 1:
            name = items[position].strip()
            return self.origins(fn, name, j, depth + 1) if re.fullmatch(r"[\w.]+", name) \
                else [Origin("unknown")]
        calls = list(calls_within(fn, j))
        if not calls or depth > MAX_DEPTH:
            return [Origin("unknown")]
        call = fn.events[calls[0]]
        out: list[Origin] = []
        for qual in self.resolve(fn, call):
            callee = self.project.function(qual)
            if callee is None:
                continue
            for r, e in enumerate(callee.events):
                if e.kind != "return":
                    continue
                parts = top_level_items(e.text.removeprefix("return").strip())
                name = parts[position].strip() if len(parts) > position else ""
                found = self.origins(callee, name, r, depth + 1) \
                    if re.fullmatch(r"[\w.]+", name) else [Origin("unknown")]
                out += self._returned_through(found, fn, calls[0], call.span, depth, callee)
        return out or [Origin("unknown")]

    def _call_origin(self, fn: FunctionInfo, k: int, depth: int) -> list[Origin]:
        call = fn.events[k]
        func = call.func
        nxt = k + 1 if k + 1 < len(fn.events) and fn.events[k + 1].kind == "call" \
            and fn.events[k + 1].span.within(call.span) else None
        before = statement_start(fn, k)
        named = self.project.named_instance(fn, call.targets[0]) \
            if len(call.targets) == 1 and k > 0 and fn.events[k - 1].targets == call.targets else []
        if named:  # built from what a configured `_target_` names (`instantiate(cfg.optim)`)
            return [Origin("new", c, fn.qualname, k, call.span) for c in named]
        if call.method in SHARING_METHODS and call.receiver:
            if re.fullmatch(r"[\w.]+", call.receiver):
                return self.origins(fn, call.receiver, before, depth + 1)
            return self._call_origin(fn, nxt, depth + 1) if nxt is not None else [Origin("unknown")]
        if func.endswith(SHARING_WRAPPERS) or func.rsplit(".", 1)[-1] in SHARING_WRAPPERS:
            arg = call.args[0] if call.args else ""
            if re.fullmatch(r"[\w.]+", arg):
                return self.origins(fn, arg, before, depth + 1)
            return self._call_origin(fn, nxt, depth + 1) if nxt is not None else [Origin("unknown")]
        if func in COPIERS:
            arg = call.args[0] if call.args else ""
            src = self.origins(fn, arg, before, depth + 1) if re.fullmatch(r"[\w.]+", arg) else []
            return [Origin("copy", next((o.cls for o in src if o.cls), ""), fn.qualname, k, call.span)]
        base = func.split("()")[0]
        if base not in self.project.classes and "." in base:  # `from pkg import Net`, re-exported
            base = self.project.reexported(base) or base
        if base in self.project.classes or (base.rsplit(".", 1)[-1][:1].isupper()
                                            and "." in base and base.split(".")[0] in ("torch", "dgl")):
            return [Origin("new", base, fn.qualname, k, call.span)]
        if base.startswith(SPARSE_OPTIMIZERS):
            return [Origin("new", base, fn.qualname, k, call.span)]  # a library's factory
        owner = base.rsplit(".", 1)[0]
        if owner in self.project.classes and "()" not in func.removesuffix("()"):
            return [Origin("new", owner, fn.qualname, k, call.span)]  # Class.from_config(...)
        resolved = self.resolve(fn, call)
        callees = [c for c in resolved if not c.endswith("__init__")]
        if not callees and "(" in call.receiver:  # `get_model_class(key).from_config(cfg)`
            # a lookup that may give any of many registered classes names none of them (the
            # bound instance_classes keeps)
            built = classmethod_instances(self.project, fn, call)
            if 0 < len(built) <= MAX_INSTANCE_CLASSES:
                return [Origin("new", c, fn.qualname, k, call.span) for c in sorted(built)]
        # `cls(**kwargs)` of a class a registry's lookup gives (its `build`): each class it may be
        built = sorted({c.removesuffix(".__init__") for c in resolved
                        if c.endswith(".__init__") and c.removesuffix(".__init__") in self.project.classes})
        made = [Origin("new", c, fn.qualname, k, call.span) for c in built] \
            if len(built) <= MAX_INSTANCE_CLASSES else []
        if made and not callees:
            return made
        if callees:
            out: list[Origin] = []
            # `lookup(kind, name)(...)`: the entries of a registry that holds several kinds
            # (losses, models, optimizers); those whose result is not followed are of another
            fanned = (func.endswith("()") or bool(made)) and len(callees) + len(made) > 1
            for qual in callees:
                callee = self.project.function(qual)
                if callee is not None:
                    found = self._returned_through(self.returned(callee, depth + 1), fn, k, call.span, depth, callee)
                    if call.receiver and callee.class_name:  # a registry object's `build`
                        held = set(self.project.registered_through(
                            self.project.qualified(fn, call.receiver), callee.class_name,
                            [o.cls for o in found if o.cls]))
                        found = [o for o in found if not o.cls or o.cls in held]
                    out += found if not fanned or any(o.known for o in found) else []
            # of a table holding factories and classes, the factories' objects when they are
            # followed (`build("optimizer", ...)`), else the classes (`cls(**kwargs)`)
            return out or made or [Origin("unknown")]
        return [Origin("unknown")]

    def returned(self, fn: FunctionInfo, depth: int) -> list[Origin]:
        if depth > MAX_DEPTH:  # `return f(...)` chains through callees (and back: recursion)
            self._cut = True
            return [Origin("unknown")]
        out: list[Origin] = []
        for j, e in enumerate(fn.events):
            if e.kind != "return":
                continue
            calls = list(calls_within(fn, j))
            named = e.one_object()  # `return model.module if is_ddp(model) else model` too
            if calls and not named:
                out += self._call_origin(fn, calls[0], depth)
            elif named or len(_maximal(e.uses)) == 1:
                name = named or _maximal(e.uses)[0]
                # a factory's `mod = GAT(...)` / `elif ...: mod = MLP(...)` branches each reach
                # `return mod`: every assignment of the name is a possible object
                sites = [k + 1 for k in range(j) if fn.events[k].kind == "assign"
                         and name in fn.events[k].targets] or [j]
                for k in sites:
                    out += self.origins(fn, name, k, depth + 1)
            else:
                out.append(Origin("unknown"))
        return out

    def _from_callers(self, fn: FunctionInfo, expr: str, depth: int,
                      site: Optional[tuple[str, int]] = None) -> list[Origin]:
        """A parameter's objects: the arguments bound to it at every call site, or at ``site``
        alone (one level of call-site context: the call that produced the value asked about)."""
        out: list[Origin] = []
        for caller, k, param, arg in self._bound(fn, site):
            outer = rebase(expr, param, arg)
            made = CALL_ARGUMENT.fullmatch(arg) if outer == arg else None
            if made is not None:  # `Trainer(model, make_optimizer(model.parameters()))`
                inner = self._argument_call(caller, k, made.group(1))
                out += self._call_origin(caller, inner, depth + 1) if inner is not None else []
            elif outer is not None:
                out += self.origins(caller, outer, statement_start(caller, k), depth + 1)
        return out or [Origin("unknown")]

    @staticmethod
    def _argument_call(fn: FunctionInfo, k: int, name: str) -> Optional[int]:
        """The call of ``name`` written as an argument of the call at event ``k`` of ``fn``."""
        for j in range(k + 1, len(fn.events)):
            e = fn.events[j]
            if not e.span.within(fn.events[k].span):
                break
            if e.kind == "call" and e.func.removesuffix("()").rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]:
                return j
        return None

    def _bound(self, fn: FunctionInfo,
               site: Optional[tuple[str, int]] = None) -> list[tuple[FunctionInfo, int, str, str]]:
        """(caller, event index, parameter, argument) of every argument bound to a parameter of
        ``fn`` at its call sites (at ``site`` alone when given), those a wrapper hands on from
        its own ``*args`` / ``**kwargs`` at the wrapper's call sites. Kept per project state:
        every origins question about a parameter asks it."""
        self.project.load_mentioning(fn.name if fn.name != "__init__" else fn.class_name.rsplit(".", 1)[-1])
        key = (fn.qualname, site, self.project._generation, len(self.project.functions))
        known = self._bindings.get(key)
        if known is not None:
            return known
        out: list[tuple[FunctionInfo, int, str, str]] = []
        for qual in self.project.callers(fn.qualname):
            if site is not None and qual != site[0]:
                continue
            caller = self.project.function(qual)
            if caller is None:
                continue
            at = self._event_index(caller)
            for k in sorted({at[id(e)] for e in self.project.call_sites(qual, fn.qualname)
                             if id(e) in at}):
                if site is not None and k != site[1]:
                    continue
                e = caller.events[k]
                out += [(caller, k, param, arg) for param, arg in bindings(e, fn)]
                for there, call, param, arg in self.project.forwarded(caller, e, fn):
                    j = self._event_index(there).get(id(call))
                    if j is not None:
                        out.append((there, j, param, arg))
        self._bindings[key] = out
        return out

    def _handed(self, fn: FunctionInfo, param: str, site: Optional[tuple[str, int]],
                depth: int = 0) -> list[Origin]:
        """Where the modules were made whose parameters the callers of ``fn`` pass for its
        ``param`` (``make_optimizer(model.parameters(), cfg)``), at ``site`` alone when given,
        through helpers that pass them on as a parameter of their own."""
        out: list[Origin] = []
        for caller, k, name, arg in self._bound(fn, site):
            if name != param:
                continue
            start = statement_start(caller, k)
            made = self._assignment(caller, arg, start) if re.fullmatch(r"\w+", arg) else None
            if made is None and arg in caller.params and depth < MAX_DEPTH:
                out += self._handed(caller, arg, None, depth + 1)
                continue
            # the argument, or the statement that made it (`params = list(model.parameters())`)
            text, at = (caller.events[made[1]].text, made[1]) if made is not None else (arg, start)
            modules = [(caller, m, at) for m in _PARAMETERS_OF.findall(text)] \
                or self.collected(caller, arg, start, depth + 1)
            for where, module, j in modules:
                out += self.origins(where, module, j, depth + 1)
        return out

    def collected(self, fn: FunctionInfo, name: str, i: int,
                  depth: int = 0) -> list[tuple[FunctionInfo, str, int]]:
        """(function, module, event index) of the modules whose parameters the list ``name``
        holds at event ``i`` of ``fn`` when no ``.parameters()`` is written where it is made:
        weight-decay groups filled in a loop over a module's parameters (``for n, p in
        model.named_parameters(): (decay if p.ndim > 1 else plain).append(p)``), and those a
        helper returns (``groups = param_groups([model], wd)``); a module the loop takes from a
        list parameter is each module the callers list."""
        if depth > MAX_DEPTH:
            return []
        made = self._assignment(fn, name, i) if re.fullmatch(r"\w+", name) else None
        out: list[tuple[FunctionInfo, str, int]] = []
        if made is not None:
            out += [(fn, m, made[1]) for m in _PARAMETERS_OF.findall(fn.events[made[1]].text)]
            for k in calls_within(fn, made[1]):
                out += self.returned_collected(fn, k, depth)
            # groups of lists made before (`{"params": decay}` where `decay = [p for n, p in
            # model.named_parameters() if ...]`)
            for held in fn.events[made[1]].uses:
                if held != name and re.fullmatch(r"\w+", held):
                    out += self.collected(fn, held, made[1], depth + 1)
        word = re.compile(rf"\b{re.escape(name)}\b")
        for k, e in enumerate(fn.events[:i]):
            if e.kind != "call" or e.method not in ("append", "extend") or not word.search(e.receiver):
                continue
            header = loop_header(fn, k, e.args[0]) if e.args else None
            for module in _PARAMETERS_OF.findall(header.text.split("\n", 1)[0]) if header else ():
                out += self._listed(fn, module, k, depth)
        return out

    def returned_collected(self, fn: FunctionInfo, k: int,
                           depth: int = 0) -> list[tuple[FunctionInfo, str, int]]:
        """:meth:`collected` of the lists a project helper called at event ``k`` returns
        (``return [{"params": decay, ...}, {"params": plain, ...}]``)."""
        out: list[tuple[FunctionInfo, str, int]] = []
        for target in self.resolve(fn, fn.events[k]):
            helper = self.project.function(target)
            for j, e in enumerate(helper.events if helper is not None else ()):
                if e.kind == "return":
                    out += [found for held in _WORD.findall(e.text.removeprefix("return"))
                            if held in e.uses for found in self.collected(helper, held, j, depth + 1)]
        return out

    def _listed(self, fn: FunctionInfo, module: str, i: int,
                depth: int) -> list[tuple[FunctionInfo, str, int]]:
        """``module`` at event ``i`` of ``fn``; when it is the target of a loop over a list
        parameter (``for module in modules``), the modules the callers list for it."""
        header = loop_header(fn, i, module)
        walked = _FOR_IN.match(header.text.split("\n", 1)[0]) if header is not None else None
        if walked is None or walked.group(1) not in fn.params:
            return [(fn, module, i)]
        out: list[tuple[FunctionInfo, str, int]] = []
        for caller, k, param, arg in self._bound(fn):
            if param == walked.group(1) and arg.startswith("[") and depth < MAX_DEPTH:
                out += [(caller, m.strip(), k) for m in top_level_items(arg[1:-1])
                        if re.fullmatch(r"[\w.]+", m.strip())]
        return out

    def _event_index(self, fn: FunctionInfo) -> dict[int, int]:
        """id(event) -> its index in ``fn.events``: a parameter's callers are asked about often,
        and scanning a long caller's events for its call sites each time dominated."""
        known = self._event_indices.get(fn.qualname)
        if known is None or known[0] is not fn.events:
            known = self._event_indices[fn.qualname] = (
                fn.events, {id(e): k for k, e in enumerate(fn.events)})
        return known[1]

    def origins_in(self, fn: FunctionInfo, expr: str, i: int,
                   site: Optional[tuple[str, int]]) -> list[Origin]:
        """:meth:`origins` of a value of ``fn`` when ``fn`` runs from the call at ``site``
        (its parameters bound to that call's arguments only)."""
        root = expr.split(".")[0]
        if site is None or root not in fn.params or root in ("self", "cls") \
                or self._assignment(fn, expr, i) is not None:
            return self.origins(fn, expr, i)
        return list(dict.fromkeys(self._from_callers(fn, expr, 0, site)))

    # -- optimizers ----------------------------------------------------------------------------
    def optimizers(self) -> list[OptimizerBuild]:
        if self._optimizers is None:
            self._optimizers = []
            for fn in list(self.project.functions.values()):
                for i, e in enumerate(fn.events):
                    if e.kind == "call" and (is_optimizer_class(e.func) or self._named_optimizer(fn, i)):
                        mods, made, read_at = [], [], []
                        texts = [e.text]
                        # the call itself, and the statements that built a `params` list it got
                        sources = [(i, k) for k in self._expression_events(fn, i)]
                        handed = []
                        for arg in [*e.args[:1], e.kwargs.get("params", "")]:
                            hit = self._assignment(fn, arg, statement_start(fn, i)) \
                                if re.fullmatch(r"\w+", arg) else None
                            if hit is None and arg in fn.params and arg not in ("self", "cls"):
                                handed.append(arg)
                            if hit is not None:
                                texts.append(fn.events[hit[1]].text)
                                sources += [(hit[1], k) for k in self._expression_events(fn, hit[1])]
                        for at, k in sources:
                            inner = fn.events[k]
                            if inner.method not in ("parameters", "named_parameters"):
                                continue
                            if re.fullmatch(r"[\w.]+", inner.receiver):
                                mods.append(inner.receiver)
                                read_at.append(at)
                            elif k + 1 < len(fn.events):
                                made.append(k + 1)  # `Model(...).parameters()`: the receiver's call
                        filtered = any("requires_grad" in t for t in texts)
                        collected = []
                        if not mods and not made:  # `AdamW(groups)`, `AdamW(param_groups([model], wd))`
                            collected = [found for arg in [*e.args[:1], e.kwargs.get("params", "")]
                                         for name in _WORD.findall(arg)
                                         if self._assignment(fn, name, i) is not None
                                         for found in self.collected(fn, name, statement_start(fn, i))]
                            collected += [found for _, k in sources if k != i
                                          for found in self.returned_collected(fn, k)]
                        self._optimizers.append(
                            OptimizerBuild(fn, i, mods, filtered, made, read_at, handed, collected))
        return self._optimizers

    def _named_optimizer(self, fn: FunctionInfo, i: int) -> bool:
        """Event ``i`` of ``fn`` is the call whose result is an optimizer a configured
        ``_target_`` names (``optimizer = instantiate(cfg.optim, params=...)``)."""
        e = fn.events[i]
        return len(e.targets) == 1 and i > 0 and fn.events[i - 1].kind == "assign" \
            and fn.events[i - 1].targets == e.targets \
            and any(is_optimizer_class(c) for c in self.project.named_instance(fn, e.targets[0]))

    def param_origins(self, build: OptimizerBuild,
                      site: Optional[tuple[str, int]] = None) -> list[Origin]:
        """Where the modules an optimizer was given were created (``site``: the call of the
        helper that built it, when the optimizer came out of one)."""
        out = [o for m, i in build.modules_at() for o in self.origins_in(build.fn, m, i, site)]
        out += [o for where, m, i in build.collected for o in self.origins(where, m, i)]
        out += self.handed_origins(build, site)
        return out + [o for k in build.made for o in self._call_origin(build.fn, k, 0)]

    def handed_origins(self, build: OptimizerBuild,
                       site: Optional[tuple[str, int]] = None) -> list[Origin]:
        """Where the modules were made whose ``.parameters()`` the callers of the optimizer's
        helper hand it (``build.handed``)."""
        return [o for p in build.handed for o in self._handed(build.fn, p, site)]

    def steps_reached(self, fn: FunctionInfo, i: int, is_step: Callable[[int], bool]) -> list[int]:
        """The events ``k`` of ``fn`` (those ``is_step`` picks) after the backward at event ``i``
        (in its innermost loop, else in the rest of ``fn``) that the gradient it leaves can
        reach: not a step of an optimizer whose ``zero_grad()`` runs between them on every
        pass to the step (a GAN's generator step after the discriminator's backward, its
        gradients cleared first: ``opt_g.zero_grad()``, ``g_loss.backward()``, ``opt_g.step()``)."""
        back = fn.events[i]
        loop = back.loop_ids[-1] if back.loop_ids else None
        out = []
        for k in range(i + 1, len(fn.events)):
            e = fn.events[k]
            if (loop is None or loop in e.loop_ids) and is_step(k) and not self._cleared(fn, i, k):
                out.append(k)
        return out

    @staticmethod
    def _cleared(fn: FunctionInfo, i: int, k: int) -> bool:
        """A reset of the optimizer stepped at ``k`` runs between events ``i`` and ``k`` each
        time ``k`` runs: outside any loop or ``if`` that does not also hold ``k``."""
        step = fn.events[k]
        for j in range(i + 1, k):
            e = fn.events[j]
            if e.kind == "call" and e.method == "zero_grad" and e.receiver == step.receiver \
                    and step.loop_ids[:len(e.loop_ids)] == e.loop_ids \
                    and set(e.conditions) <= set(step.conditions):
                return True
        return False

    def saved_alike(self, fn: FunctionInfo, expr: str, i: int) -> list[Site]:
        """``torch.save(m.state_dict(), ...)`` calls of the project, in other functions than
        ``fn``, where ``m`` is an instance (or a copy of one) of the class ``expr`` at event ``i``
        is built as: a state the project itself writes for a module like it (a pretraining stage
        saving what the fine-tuning stage loads)."""
        mine = [o for o in self.origins(fn, expr, i) if o.known and o.cls]
        if not mine:
            return []
        self.project.load_mentioning("torch.save(")
        out: list[Site] = []
        for other in list(self.project.functions.values()):
            if other is fn:
                continue
            for k, e in enumerate(other.events):
                saved = re.fullmatch(r"([\w.]+)\.state_dict\(\)", (e.args or [""])[0].strip()) \
                    if e.kind == "call" and e.func == "torch.save" else None
                theirs = [o for o in self.origins(other, saved.group(1), k) if o.known] if saved else []
                if any(a.cls == b.cls and self._adds_to(a, b) for a in mine for b in theirs):
                    out.append((other, k))
        return out

    def _adds_to(self, mine: Origin, saved: Origin) -> bool:
        """Is ``mine`` built with arguments the build of ``saved`` lacks (a fine-tuning head:
        ``get_model(d, num_class=4)`` against the pretraining stage's ``get_model(d)``)? The same
        recipe twice is a warm start of the same model, not a handoff between stages."""
        def arguments(o: Origin) -> Optional[tuple[int, set[str]]]:
            qual, index = o.site
            built = self.project.functions.get(qual)
            if built is None or not 0 <= index < len(built.events):
                return None
            e = built.events[index]
            return (len(e.args), set(e.kwargs)) if e.kind == "call" else None
        a, b = arguments(mine), arguments(saved)
        return a is None or b is None or a[0] > b[0] or not a[1] <= b[1]

    def keeps_no_grad(self, step: Action) -> bool:
        """The optimizer of a ``step`` action is a sparse embedding optimizer on every path
        (:data:`SPARSE_OPTIMIZERS`): it reads no ``.grad``."""
        found = self.origins(step.fn, step.receiver, step.index)
        return all(o.kind == "new" and o.cls.startswith(SPARSE_OPTIMIZERS) for o in found)

    def stepped_after(self, fn: FunctionInfo, i: int) -> Optional[list[OptimizerBuild]]:
        """The optimizers stepped after the backward at event ``i`` of ``fn`` with its gradient
        (:meth:`steps_reached`); None when a stepped optimizer cannot be traced to its
        construction."""
        by_site = {(b.fn.qualname, b.index): b for b in self.optimizers()}
        out: list[OptimizerBuild] = []
        steps = self.steps_reached(fn, i, lambda k: fn.events[k].kind == "call"
                                   and fn.events[k].method == "step" and bool(fn.events[k].receiver))
        for j in steps:
            e = fn.events[j]
            for o in self.origins(fn, e.receiver, j):
                if o.kind == "new" and not is_optimizer_class(o.cls):
                    continue  # `scheduler.step()`
                build = by_site.get((o.fn, o.index)) if o.kind == "new" else None
                if build is None:
                    return None
                out.append(build)
        return out or None

    def holds(self, build: OptimizerBuild, fn: FunctionInfo, tracked: Optional[str]) -> Optional[bool]:
        """Does ``build`` optimise the module ``tracked`` names in ``fn`` (or a part of it, or a
        module containing it)? None: cannot tell. ``tracked`` None: the module is not visible
        in ``fn``, so only modules ``fn`` constructs itself are known to be others."""
        if tracked is None:
            if build.fn is not fn or not build.modules:
                return None
            fresh = all(o.kind == "new" and o.fn == fn.qualname
                        for m, at in build.modules_at() for o in self.origins(fn, m, at))
            return False if fresh else None
        same_scope = build.fn is fn or (
            tracked.startswith("self.") and fn.class_name and build.fn.class_name == fn.class_name)
        if not same_scope:
            return None
        reads = set(build.event.uses)
        for e in build.fn.events:  # one level back: `params = list(model.parameters()) + ...`
            if e.kind == "assign" and set(e.targets) & reads:
                reads |= set(e.uses)
        root = tracked if tracked.startswith("self.") else tracked.split(".")[0]
        # `Adam(self.parameters())`: every parameter of the instance, its submodules' included
        whole = {r.rsplit(".", 1)[0] for r in reads
                 if r.rsplit(".", 1)[-1] in ("parameters", "named_parameters")}
        return any(r == root or r.startswith(root + ".") or (root.startswith(r + ".") and r != "self")
                   or (r in whole and root.startswith(r + ".")) for r in reads)

    def trains_module(self, fn: FunctionInfo, i: int, tracked: Optional[str]) -> bool:
        """The backward at event ``i`` of ``fn`` may train ``tracked``: False only when every
        optimizer stepped after it is known to hold other parameters (a linear probe trained
        on the embeddings: `opt = Adam(log.parameters())`)."""
        key = (fn.qualname, i, tracked, self.project._generation)
        if key not in self._trains:
            builds = self.stepped_after(fn, i)
            self._trains[key] = builds is None or any(
                self.holds(b, fn, tracked) is not False for b in builds)
        return self._trains[key]

    def stepped_modules(self, fn: FunctionInfo, i: int,
                        partial: bool = False) -> Optional[list[Origin]]:
        """Where the modules were made whose parameters the optimizers stepped after the
        backward at event ``i`` of ``fn`` hold (in its loop, else after it in ``fn``): what that
        backward trains. None when a step or its optimizer cannot be followed (``partial``: or
        the modules they were given, else those are unknown origins)."""
        steps = self.steps_reached(fn, i, lambda k: self._classify(fn, k) == "step")
        if not steps:
            return None
        builds = {(b.fn.qualname, b.index): b for b in self.optimizers()}
        out: list[Origin] = []
        for k in steps:
            for o in self.origins(fn, fn.events[k].receiver, k):
                build = builds.get((o.fn, o.index)) if o.kind == "new" else None
                if build is None:
                    return None
                given = self.param_origins(build, o.via[-1] if o.via else None)
                if not given or not (partial or all(g.known for g in given)):
                    return None
                out += given
        return out

    def steps_module_of(self, fn: FunctionInfo, call: Event, back: FunctionInfo, i: int) -> bool:
        """The optimizers stepped with the gradient of the backward at event ``i`` of ``back``
        may hold the parameters of the module ``call`` (an event of ``fn``) runs. False only
        when all of them are followed to modules of other classes: a linear probe's optimizer
        over ``probe.parameters()``, a GAN discriminator's over the discriminator only."""
        held = self.stepped_modules(back, i)
        callee = callee_text(call)
        if held is None:
            # the optimizers' modules are not followed to classes: what each was given, as
            # written, against the module's own expression where both name the same objects
            # (`Adam(self.model.discriminator.parameters())`, `self.model.generator.sample(z)`)
            same = fn is back or (callee.startswith("self.") and fn.class_name == back.class_name)
            return self.trains_module(back, i, callee if same else None)
        index = fn.position(call)
        made = {o.cls for o in self.origins(fn, callee, index) if o.known}
        if callee.startswith("self.") and fn.class_name:
            made.add(fn.class_name)  # a submodule of the instance whose method runs
        elif "." in callee:
            made |= {o.cls for o in self.origins(fn, callee.rsplit(".", 1)[0], index) if o.known}
        if not made:
            return True
        return any(self.contains_class(h.cls, m) or self.contains_class(m, h.cls)
                   for h in held for m in made)

    def never_trained(self, fn: FunctionInfo, expr: str, i: int) -> bool:
        """Every object ``expr`` may be at event ``i`` of ``fn`` is known, and no optimizer
        holds its parameters (a frozen encoder reloaded for a linear probe, an EMA copy)."""
        mine = self.origins(fn, expr, i)
        if not mine or not all(o.known for o in mine):
            return False
        trained = self.trained_origins()
        for o in mine:
            if any(o.same_as(h) for h in trained):
                return False
            # made inside a trained class's methods (`self.encoder = Linear(...)`): a part of it
            owner = self.project.functions.get(o.fn)
            cls = o.cls if o.kind == "self" else owner.class_name if owner is not None else ""
            if cls and any(h.cls and (h.cls == cls or self.contains_class(h.cls, cls)) for h in trained):
                return False
        return True

    def may_be_trained(self, fn: FunctionInfo, expr: str, i: int) -> bool:
        """The module ``expr`` names at event ``i`` of ``fn`` may be one whose parameters an
        optimizer steps: one of its origins is a module some optimizer was given (seen from
        further out: the same construction reached through more factory calls). False when
        no origin can be followed, or all are other objects (an EMA teacher's copy)."""
        mine = [o for o in self.origins(fn, expr, i) if o.known]
        return any(o.same_as(h) for o in mine for h in self.trained_origins())

    def trained_origins(self) -> list[Origin]:
        """Where the modules some optimizer was given were made (the known ones)."""
        return [h for b in self.optimizers() for h in self.param_origins(b) if h.known]

    def identity(self, made: list[Origin]) -> Identity:
        """The objects ``made`` as :class:`PathSearch` follows them past where no name reaches
        them: an expression names one when one of its origins is one of them."""
        return Identity(lambda fn, expr, i: any(o.same_as(m) for o in self.origins(fn, expr, i)
                                                if o.known for m in made),
                        frozenset((o.fn, o.index) for o in made) | {v for o in made for v in o.via})

    def resets_others(self, reset: Action, back: Action) -> Optional[str]:
        """A module's ``zero_grad()`` that clears none of the parameters the optimizers stepped
        after ``back`` hold: every object it may be is a copy of a module (an EMA teacher made by
        ``deepcopy``) or a module whose class neither holds nor is held by a stepped one. The
        answer says what the reset clears ("a copy made at file:line"); None when it may clear
        the stepped parameters or cannot be told."""
        if reset.event.kind != "call" or reset.event.method != "zero_grad" \
                or looks_optimizer(reset.receiver) or not re.fullmatch(r"[\w.]+", reset.receiver):
            return None
        # a copy is no object made before it: only the copy itself, given to the optimizer,
        # is one of its modules, whatever else it was given
        held = self.stepped_modules(back.fn, back.index, partial=True)
        mine = self.origins(reset.fn, reset.receiver, reset.index)
        if not held or not all(o.known for o in mine):
            return None
        for o in mine:
            if o.kind == "copy":
                if o in held:
                    return None
            elif not o.cls or not all(h.known for h in held) or any(
                    self.contains_class(h.cls, o.cls) or self.contains_class(o.cls, h.cls) for h in held):
                return None
        o = mine[0]
        site = self.project.functions.get(o.fn)
        where = f"{site.path}:{o.span.line}" if site is not None and o.span is not None else o.fn
        return f"a copy made at {where}" if o.kind == "copy" else f"a `{o.cls}` made at {where}"

    # -- backward and its loss -----------------------------------------------------------------
    def backward_sites(self) -> list[Site]:
        return [(fn, i) for fn in list(self.project.functions.values())
                for i, e in enumerate(fn.events) if is_backward(e)]

    def _expression_events(self, fn: FunctionInfo, i: int) -> list[int]:
        """The call events nested in the expression of event ``i`` (a return, a backward)."""
        outer = fn.events[i].span
        return [k for k in range(i + 1, len(fn.events))
                if fn.events[k].kind == "call" and fn.events[k].span.within(outer)]

    def loss_slice(self, fn: FunctionInfo, i: int, live: bool = False) -> list[Site]:
        """``live``: only what carries autograd history into the loss (tensors computed with
        gradients on and not detached on the way): the modules the backward really reaches."""
        key = (fn.qualname, i, live, self.project._generation)
        if key not in self._slices:
            event = fn.events[i]
            names = backward_operands(event)
            inner = self._expression_events(fn, i)
            out: list[Site] = [(fn, k) for k in inner]
            for k in inner:
                out += self._into_callees(fn, k, 1, set(), live)
            self._slices[key] = _unique(out + self._slice(fn, i, names, 0, {fn.qualname}, live))
        return list(self._slices[key])

    def _slice(self, fn: FunctionInfo, stop: int, names: list[str], depth: int,
               stack: set[str], live: bool = False) -> list[Site]:
        wanted = set(names)
        out: list[Site] = []
        reached = set(fn.events[stop].conditions) if stop < len(fn.events) else set()
        for j in range(stop - 1, -1, -1):
            e = fn.events[j]
            if e.kind not in ("assign", "augassign", "call") or not (set(e.targets) & wanted):
                continue
            if live and self.grad_off(fn, j) is not None:
                continue  # computed without gradients: a tensor with no history
            calls = list(calls_within(fn, j, first=j))
            outer = outer_call(fn, j)
            if outer is not None and self.returns_detached(fn, outer):
                continue  # `emb = model.get_embedding(g)` that returns `h.detach()`: off the slice
            whole = outer_call(fn, statement_start(fn, j)) if live else None
            if whole is not None and whole.method in NON_DIFFERENTIABLE:
                continue  # `emb = model.enc(x).detach()`: no history comes out of the statement
            out.append((fn, j))
            if outer is not None and outer.method in NON_DIFFERENTIABLE:
                continue  # `pred = logits.argmax(-1)`: no gradient flows back through it
            if e.kind == "assign" and set(e.conditions) <= reached and \
                    re.match(r"[\w.]+\s*(,\s*[\w.]+\s*)*=[^=]", e.text):
                # a plain assignment on every path to the use (under no test the use is not
                # under: the script's main guard, say): earlier values are overwritten
                wanted -= set(e.targets)
            # the value flows, not the module object that computes it: `model(g)` reads g, and
            # following `model` would lead into how the model was built
            read = set(e.uses) - {fn.events[k].func for k in calls}
            if live:  # `clf(emb.detach())`: emb's history stops here
                read = {u for u in read if not detached_text(e.text, u)}
            wanted |= read
            if e.kind == "call" and depth < MAX_DEPTH:
                out += self._into_callees(fn, j, depth + 1, stack, live)
        return out

    def returns_detached(self, fn: FunctionInfo, call: Event) -> bool:
        """The call runs only project functions whose every return is explicitly cut from the
        autograd graph (``return h.detach()``): its result carries no gradient to the modules
        computed inside it. (A ``@torch.no_grad()`` callee stays on the slice: GM102 reports it.)"""
        found = [self.project.function(q) for q in self.resolve(fn, call)]
        callees = [c for c in found if c is not None]
        return bool(callees) and all(_returns_cut(c) for c in callees)

    def _into_callees(self, fn: FunctionInfo, k: int, depth: int, stack: set[str],
                      live: bool = False) -> list[Site]:
        out: list[Site] = []
        if self.grad_off(fn, k) is not None:
            return out  # everything it runs is gradient-free anyway: reported at the call
        for qual in self.resolve(fn, fn.events[k]):
            callee = self.project.function(qual)
            if callee is None or qual in stack or live and self.grad_off_decorator(callee) is not None:
                continue  # (a `@torch.no_grad()` callee gives back no history)
            out.append((callee, -1))  # the callee itself (decorators)
            for j, e in enumerate(callee.events):
                if e.kind != "return":
                    continue
                inner = self._expression_events(callee, j)
                out += [(callee, m) for m in inner]
                for m in inner:
                    out += self._into_callees(callee, m, depth + 1, stack | {qual}, live)
                out += self._slice(callee, j, e.uses, depth, stack | {qual}, live)
        return out

    # -- loops -------------------------------------------------------------------------------
    def contains(self, qualname: str, kind: str) -> bool:
        """The function, or anything it calls, runs a ``backward`` / ``step``."""
        return self._contains_walk(qualname, kind, frozenset())[0]

    def _contains_walk(self, qualname: str, kind: str, stack: frozenset[str]) -> tuple[bool, bool]:
        """(:meth:`contains`, exact). A negative answer is exact when no call was passed over
        for being on ``stack`` (a cycle) or past the depth limit: it holds wherever the function
        is reached from, and is kept like every positive one (a library's helpers are asked
        about from many callers)."""
        key = (qualname, kind)
        if key in self._contains:
            return self._contains[key], True
        if len(stack) >= MAX_DEPTH:
            return False, False
        fn = self.project.function(qualname)
        result, exact = False, True
        for i, e in enumerate(fn.events if fn is not None else ()):
            if self._classify(fn, i) == kind:
                result = True
            elif e.kind == "call":
                for q in self.resolve(fn, e):
                    found, whole = (False, False) if q in stack else \
                        self._contains_walk(q, kind, stack | {qualname})
                    exact = exact and whole
                    if found:
                        result = True
                        break
            if result:
                break
        if result or exact or not stack:
            self._contains[key] = result
        return result, result or exact

    def _classify(self, fn: FunctionInfo, i: int) -> str:
        e = fn.events[i]
        if is_backward(e):
            return "backward"
        if e.kind == "call" and e.method == "step" and (
                looks_optimizer(e.receiver) or "scaler" in e.receiver.lower()
                or any(o.kind == "new" and is_optimizer_class(o.cls)
                       for o in self.origins(fn, e.receiver, i))):
            return "step"
        if is_grad_reset(e):
            return "reset"
        return ""

    def _flatten(self, fn: FunctionInfo, indices: list[int], depth: int,
                 stack: frozenset[str]) -> list[Action]:
        out: list[Action] = []
        for i in indices:
            e = fn.events[i]
            kind = self._classify(fn, i)
            if kind:
                receiver = e.receiver
                if kind == "step" and "scaler" in receiver.lower() and e.args:
                    receiver = e.args[0]
                out.append(Action(kind, fn, i, receiver))
            if e.kind == "call" and depth < MAX_DEPTH:
                for qual in self.resolve(fn, e):
                    callee = self.project.function(qual)
                    if callee is None or qual in stack:
                        continue
                    if not (self.contains(qual, "backward") or self.contains(qual, "step")
                            or self.contains(qual, "reset")):
                        continue
                    out += self._flatten(callee, list(range(len(callee.events))), depth + 1,
                                         stack | {qual})
        return out

    def extra_forwards(self) -> list[tuple[TrainingLoop, FunctionInfo, int]]:
        """Module calls run once per training iteration, in train mode, whose output no backward
        reads: under no_grad, or after the backward of the step (a monitoring forward). They are
        looked for in the loop's own body and in the step functions it calls that backpropagate
        (``trainer.training_step(g)``)."""
        out: list[tuple[TrainingLoop, FunctionInfo, int]] = []
        seen: set[tuple[str, int]] = set()
        for loop in self.training_loops():
            steps = {a.fn.qualname: a.fn for a in loop.of("backward") if a.fn is not loop.fn}
            scopes = [(loop.fn, [i for i, e in enumerate(loop.fn.events) if loop.loop_id in e.loop_ids])]
            scopes += [(fn, list(range(len(fn.events)))) for fn in steps.values()]
            for fn, body in scopes:
                backwards = [a.index for a in loop.of("backward") if a.fn is fn]
                on_loss = {(sfn.qualname, j) for b in backwards for sfn, j in self.loss_slice(fn, b)}
                evaluating = False  # `.eval()` earlier in this iteration, no `.train()` since
                switch: Optional[bool] = None  # the mode the previous call left
                for i in body:
                    e = fn.events[i]
                    evaluating = evaluating if switch is None else switch
                    switch = self.mode_switch(fn, i)
                    if switch is not None and e.method in ("eval", "train"):
                        continue
                    if evaluating or (fn.qualname, i) in on_loss or e.kind != "call" \
                            or (fn.qualname, i) in seen:
                        continue
                    after_backward = any(b < i and set(fn.events[b].loop_ids) <= set(e.loop_ids)
                                         for b in backwards)
                    if not self.module_call(fn, i):
                        # a helper or hook the iteration calls (a monitoring callback): the
                        # forwards it makes in train mode, without gradients or after the backward
                        found = self._hook_forwards(fn, i, self.grad_off(fn, i) is not None or after_backward,
                                                    steps)
                    elif not self.runs_forward(fn, i) or (self.grad_off(fn, i) is None and not after_backward):
                        continue  # a parameter walk (an EMA update's) is no forward
                    else:
                        # a framework's call of a user hook (auditor/static/frameworks.py): the
                        # forward is written in the hook, not at the framework's call
                        found = self._hook_forwards(fn, i) if fn.framework else [(fn, i)]
                    for where, k in found:
                        if (where.qualname, k) not in seen:
                            seen.add((where.qualname, k))
                            out.append((loop, where, k))
        return out

    def mode_switch(self, fn: FunctionInfo, k: int) -> Optional[bool]:
        """Whether the call at ``k`` leaves a module in eval mode (True) or train mode (False):
        ``.eval()``, ``.train()``, ``.train(False)``, or a project function doing so, a context
        manager among them (``with evaluating(model):`` runs its body in eval mode); None for
        any other event."""
        e = fn.events[k]
        if e.kind != "call":
            return None
        if e.method in ("eval", "train") and e.receiver:
            return e.method == "eval" or e.args[:1] == ["False"]
        for qual in self.resolve(fn, e):
            callee = self.project.function(qual)
            if callee is None or callee.class_name:
                continue
            switches = [x.method == "eval" or x.args[:1] == ["False"] for x in callee.events
                        if x.kind == "call" and x.method in ("eval", "train") and x.receiver]
            if switches and any(d.removesuffix("()").endswith("contextmanager") for d in callee.decorators):
                return any(switches)  # the body of the `with` runs between entry and exit
            if switches:
                return switches[-1]
        return None

    def _hook_forwards(self, fn: FunctionInfo, i: int, unread: Optional[bool] = None,
                       steps: Mapping[str, FunctionInfo] = {}, depth: int = 0,
                       stack: frozenset[str] = frozenset(), evaluating: bool = False) -> list[Site]:
        """The forwards of modules that the functions the call at ``i`` runs make in train mode
        (not after their own ``.eval()``), and those of the plain functions they call in turn
        (an engine's ``fire()`` running the handlers registered on it, a handler calling an
        evaluation helper). ``unread``: for a plain function (not a module's method), whether
        no backward reads what it computes (called under no_grad or after the step's
        backward); else only its own forwards without gradients count. ``evaluating``: the
        caller left the modules in eval mode."""
        out: list[Site] = []
        for qual in self.resolve(fn, fn.events[i]):
            hook = self.project.function(qual)
            if hook is None or qual in steps or qual in stack or (
                    unread is not None and hook.class_name
                    and self.is_module_class(hook.class_name) and not fn.framework):
                continue  # a step that backpropagates, or a module's own method
            if depth and self.contains(qual, "backward"):
                continue
            off = self.grad_off_decorator(hook) is not None
            mode = evaluating
            for k, e in enumerate(hook.events):
                if e.kind != "call":
                    continue
                switch = self.mode_switch(hook, k)
                if e.method in ("eval", "train") and e.receiver:
                    pass  # the switch itself: the mode is set below
                elif self.module_call(hook, k):
                    if not mode and self.runs_forward(hook, k) and (
                            unread is None or unread or off or self.grad_off(hook, k) is not None):
                        out.append((hook, k))
                elif depth < MAX_HOOK_DEPTH:
                    # a helper starts in the mode left here and switches on its own
                    inner = unread if unread is None else \
                        unread or off or self.grad_off(hook, k) is not None
                    out += self._hook_forwards(hook, k, inner, steps, depth + 1,
                                               stack | {qual}, mode)
                if switch is not None:
                    mode = switch
        return out

    def training_loops(self) -> list[TrainingLoop]:
        if self._loops is not None:
            return self._loops
        # a rule whose prefilter skipped the training script still asks where training happens:
        # the files that backpropagate, and those that call a step function of theirs (the loop
        # of `trainer.training_step(g)` may be all a script holds)
        self.project.load_mentioning("backward(")
        steps = {fn.name for fn in list(self.project.functions.values())
                 if any(is_backward(e) for e in fn.events)}
        for name in sorted(steps - NOT_FORWARD - _COMMON_NAMES):
            self.project.load_mentioning(f"{name}(")
        self._loops = []
        for fn in list(self.project.functions.values()):
            loop_ids = sorted({lid for e in fn.events for lid in e.loop_ids})
            if not loop_ids:
                continue
            if not (self.contains(fn.qualname, "backward") and self.contains(fn.qualname, "step")):
                continue
            for lid in loop_ids:
                body = [i for i, e in enumerate(fn.events) if lid in e.loop_ids]
                actions = self._flatten(fn, body, 0, frozenset({fn.qualname}))
                kinds = {a.kind for a in actions}
                if "backward" in kinds and "step" in kinds:
                    self._loops.append(TrainingLoop(fn, lid, actions))
        return self._loops


def _returns_cut(fn: FunctionInfo) -> bool:
    returns = [i for i, e in enumerate(fn.events) if e.kind == "return"]
    if not returns:
        return False
    for i in returns:
        call = outer_call(fn, i)
        value = fn.events[i].text.removeprefix("return").lstrip()
        if value.startswith(("{", "[", "(")):
            return False  # `return {"loss": loss, "err": err.detach()}`: a part is detached
        if call is None or call.method not in NON_DIFFERENTIABLE or not _is_whole(call.text, value):
            return False  # `return total, {k: v.item() ...}`, `a + b.detach()`: a part is cut
    return True


def _is_whole(call_text: str, value: str) -> bool:
    """The call is the whole returned expression (texts shortened with ``…`` compared as far
    as both go)."""
    a, b = call_text.removesuffix("…"), value.removesuffix("…")
    if a == b:
        return True
    return (call_text.endswith("…") and b.startswith(a)) or (value.endswith("…") and a.startswith(b))
