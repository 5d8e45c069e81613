"""Path search over function summaries: "on some path from this event, what happens next?".

A rule starts a search at one event (a ``.eval()`` call, a ``load_state_dict``) with one
*tracked* name (``model``, ``self.model``) and a small immutable *state*. The object may have
other names there (``eval_model = self.model.module if ddp else self.model``, see
:func:`aliases`): all are followed, each mapped across calls on its own, and a visitor sees them
as ``Step.names``. The search walks the events that may run afterwards, in order (a loop that
runs no iteration on the path, see :func:`idle_loops`, is skipped):

* the rest of the start function, and, for every loop around the start event, the rest of the
  loop body followed by its beginning (the next iteration);
* into every project function a call resolves to (the tracked name mapped onto the callee's
  parameters, or onto the attribute its constructor stored it in), before the call event itself;
* when the start function ends (or returns early), up into each caller, continuing after the
  call site with the tracked name mapped back (``model`` param -> the argument ``self.model``,
  and the name the call's result is bound to when the function returns it: :func:`returns`).

At each event the rule's visitor answers a verdict (the path stops there) or None (it goes on,
with a possibly updated state). The answer is every path's outcome: the visitor's verdicts plus
``end`` (ran off the program), ``loop`` (came back round to the start) and ``lost`` (the tracked
value could not be followed). The walk is bounded (depth, caller levels, events visited).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable, Iterable, Optional

from auditor.static.conditions import attribute_none_tests, innermost, ruled_out
from auditor.static.dataflow import callers_of, contains, held_container
from auditor.static.facts import Event, FunctionInfo
from auditor.static.project import Project

NO_GRAD_CONTEXTS = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                    "torch.autograd.grad_mode.no_grad")

END, LOOP, LOST, BUDGET = "end", "loop", "lost", "budget"
TRAINED = "trained"

# Module methods that do not run the module's forward: calling them is not training it.
NOT_FORWARD = frozenset({
    "eval", "train", "parameters", "named_parameters", "state_dict", "load_state_dict", "to",
    "cuda", "cpu", "float", "double", "half", "bfloat16", "zero_grad", "requires_grad_", "apply",
    "modules", "named_modules", "children", "named_children", "buffers", "named_buffers",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "update", "add_module", "share_memory", "type", "copy_",
})


@dataclass(frozen=True)
class Step:
    """One event on a path, with what the walk knows about it there."""

    fn: FunctionInfo
    index: int
    tracked: Optional[str]  # the followed name as spelled in ``fn``; None: not visible here
    conditional: bool  # the event may be skipped on this path (an `if` the start is not in)
    no_grad: bool  # runs under no_grad / inference_mode (own `with`, or a caller's, or decorator)
    resolved: bool = False  # a call the walk followed the tracked object into (its events came first)
    project: Optional[Project] = field(default=None, compare=False, repr=False)
    aliases: tuple[str, ...] = ()  # other names of the tracked object in ``fn`` (see aliases)
    # the walk follows the object by where it was made and no name reaches it here: what runs
    # here cannot be said to use it (see PathSearch's identity)
    unnamed: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """Every name of the tracked object here, ``tracked`` first."""
        return (self.tracked, *self.aliases) if self.tracked else ()

    @property
    def event(self) -> Event:
        return self.fn.events[self.index]

    @property
    def where(self) -> str:
        return f"{self.fn.path}:{self.event.span.line}"


@dataclass(frozen=True)
class Outcome:
    verdict: str
    step: Optional[Step]
    trail: tuple[str, ...] = ()  # call sites passed through ("engine.py:69"), outermost first


Visitor = Callable[[Step, Hashable], tuple[Optional[str], Hashable]]
Names = tuple[str, ...]  # the names of the tracked object in one function, the primary first
# one path's end in a function: (verdict or "return" / "wrapped", state, step, names there)
Walked = tuple[str, Hashable, Optional[Step], Names]


@dataclass(frozen=True)
class Identity:
    """The tracked object by where it was made (auditor/static/training.py builds it, on this
    module): does an expression at an event of a function name it, and which events (its
    constructor's call, the factory calls that returned it) make it anew."""

    names_it: Callable[[FunctionInfo, str, int], bool]
    made_at: frozenset  # of (function qualname, event index)


def _distinct(names: Iterable[Optional[str]]) -> Names:
    return tuple(dict.fromkeys(n for n in names if n is not None))


def under_no_grad(event: Event) -> bool:
    return any(c.removesuffix("()") in NO_GRAD_CONTEXTS for c in event.context)


def is_no_grad_function(fn: FunctionInfo) -> bool:
    return any(d.removesuffix("()") in NO_GRAD_CONTEXTS for d in fn.decorators)


def rebase(name: str, old: str, new: str) -> Optional[str]:
    """``name`` re-rooted from ``old`` to ``new`` (``self.model.encoder``: self.model -> m)."""
    if name == old:
        return new
    if name.startswith(old + "."):
        return new + name[len(old):]
    return None


def is_same_or_parent(receiver: str, tracked: str) -> bool:
    """``receiver`` is the tracked module or one that contains it (``model`` for ``model.enc``)."""
    return tracked == receiver or tracked.startswith(receiver + ".")


# `loss.backward()`; a LightningModule's `self.manual_backward(loss)` (manual optimization)
BACKWARD_METHODS = ("backward", "manual_backward")


def is_backward(event: Event) -> bool:
    return event.kind == "call" and (event.method in BACKWARD_METHODS
                                     or event.func == "torch.autograd.backward")


def forward_use(event: Event, tracked: str) -> bool:
    """The event runs the tracked module forward: itself, a module containing it (``model(g)``
    for ``model.encoder``), or a submodule / method of it (``self.encoder(g)`` for ``self``,
    an entry ``m["encoder"](g)`` for ``m``)."""
    if event.kind != "call":
        return False
    func = event.func.removesuffix("()")
    if func.endswith(".forward"):
        func = func[: -len(".forward")]
    if is_same_or_parent(func, tracked):
        return True
    if any(is_same_or_parent(tracked, c) for c in held_container(func)):
        return True
    return func.startswith(tracked + ".") and event.method not in NOT_FORWARD


def rebinds(event: Event, tracked: Optional[str]) -> bool:
    """``model = build_model(args)`` binds the tracked name (or a prefix of it) to an object made
    without it: what was tracked is no longer reached by that name. ``model = model.to(dev)``
    and ``model = pretrain(model, ...)`` keep it (their value may be the same object)."""
    if not tracked or event.kind != "assign":
        return False
    for target in event.targets:
        if tracked == target or tracked.startswith(target + "."):
            return not any(u == target or u.startswith(target + ".") for u in event.uses)
    return False


def bound_alias(event: Event, names: tuple[str, ...]) -> tuple[str, ...]:
    """The name an assignment makes another name of the tracked object, met on the path:
    ``model = self.model`` (or a choice between its names, a wrapper's ``.module``) in a method
    the walk entered holding ``self.model``."""
    if event.kind != "assign":
        return ()
    for target in event.targets:
        bound = event.bound_to(target)
        if bound and all(n.removesuffix(".module") in names or n in names for n in bound):
            return (target,)
    return ()


def backward_trains(step: "Step") -> bool:
    """The backward at ``step`` may train the tracked module: some optimizer stepped after it
    may hold its parameters (see Training.trains_module)."""
    from auditor.static.training import Training  # built on this module: imported when asked
    if step.project is None:
        return True
    training = Training.of(step.project)
    return any(training.trains_module(step.fn, step.index, name) for name in step.names or (None,))


def training_visitor(step: "Step", forwarded: Hashable) -> tuple[Optional[str], Hashable]:
    """Stops with ``trained`` at a backward reached after the tracked module ran forward with
    gradients on the same path (a frozen teacher run under no_grad never counts)."""
    event, tracked = step.event, step.tracked
    if is_backward(event):
        trains = forwarded and not step.no_grad and not step.unnamed and backward_trains(step)
        return (TRAINED, forwarded) if trains else (None, forwarded)
    if tracked and not step.no_grad and not step.resolved \
            and any(forward_use(event, name) for name in step.names):
        return None, True
    return None, forwarded


def in_one_program(project: Project, fn: FunctionInfo, outcome: "Outcome") -> bool:
    """The path from ``fn`` to ``outcome`` stays within files one program runs together."""
    paths = {fn.path, *(where.rsplit(":", 1)[0] for where in outcome.trail)}
    if outcome.step is not None:
        paths.add(outcome.step.fn.path)
    # any of them may be the one whose program holds the rest (a library module's own closure
    # holds what it imports, not who imports it)
    if any(project.share_program(p, *sorted(paths - {p})) for p in sorted(paths)):
        return True
    # library code that no entry point runs: nothing says it runs apart from the rest
    return not any(p in prog.files for prog in project.programs() for p in paths)


def first_trained(project: Project, fn: FunctionInfo,
                  outcomes: list["Outcome"]) -> Optional["Outcome"]:
    """The first outcome that reached a training backward within the program of ``fn``."""
    return next((o for o in outcomes if o.verdict == TRAINED and o.step is not None
                 and in_one_program(project, fn, o)), None)


def trains_after(project: Project, fn: FunctionInfo, index: int,
                 tracked: str) -> Optional["Outcome"]:
    """A path from event ``index`` on which ``tracked`` is trained (forward, then backward)."""
    return first_trained(project, fn, PathSearch(project, training_visitor).run(fn, index, tracked, False))


def bindings(event: Event, callee: FunctionInfo) -> list[tuple[str, str]]:
    """(parameter, argument text) pairs of a call event bound to ``callee``'s parameters."""
    params = list(callee.params)
    pairs: list[tuple[str, str]] = []
    positional = [a for a in event.args if not a.startswith("*")]
    if callee.instance_argument and params:
        # `trainer.fit(model, loader)`: self is the model, the other parameters follow it
        instance = event.argument(callee.instance_argument)
        if instance:
            pairs.append((params[0], instance))
        rest = positional[1:] if callee.instance_argument not in event.kwargs else positional
        return [*pairs, *zip(params[1:], rest),
                *[(k, v) for k, v in event.kwargs.items() if k in params[1:]]]
    if callee.class_name and params and params[0] in ("self", "cls"):
        first = params.pop(0)
        if callee.name != "__init__" and first == "self":
            func = event.func.removesuffix("()")
            if callee.name in ("forward", "__call__") and event.method != callee.name:
                pairs.append((first, func))  # `model(g)` / `self.model(g)`: self is the callee
            elif event.receiver and event.method:
                # `super().hook(x)`: the base's method runs on the same instance
                pairs.append((first, "self" if event.receiver == "super()" else event.receiver))
    pairs += list(zip(params, positional))
    pairs += [(k, v) for k, v in event.kwargs.items() if k in callee.params]
    return pairs


def rebase_across(event: Event, callee: FunctionInfo, name: str, into: bool) -> Optional[str]:
    """``name`` re-rooted across the call ``event`` of ``callee``: from an argument to its
    parameter (``into`` the callee) or from a parameter back to the caller's argument."""
    for param, arg in bindings(event, callee):
        mapped = rebase(name, arg, param) if into else rebase(name, param, arg)
        if mapped is not None:
            return mapped
    return None


def call_sites_of(project: Project, fn: FunctionInfo) -> list[tuple[FunctionInfo, int]]:
    """(caller, index of the call event) for every call site of ``fn`` in the project."""
    out = [(caller, next(i for i, e in enumerate(caller.events) if e is event))
           for caller, event in callers_of(project, fn.qualname)]
    if not out and fn.class_name and fn.name not in ("forward", "__call__", "__init__") \
            and fn.name not in NOT_FORWARD:
        # `model.embed(g)` where nothing tells the instance's class: any `<x>.embed(...)` call
        # of that method name that resolves nowhere else may be one. Not for nn.Module's own
        # API: an unresolved `m.train()` is Module.train, not every project class's `train`
        out = list(_unresolved_method_calls(project).get(fn.name, ()))
    return out


def runs_before(project: Project, fn: FunctionInfo, index: int,
                found: Callable[[FunctionInfo, Event], bool],
                max_up: int = 3) -> Optional[tuple[FunctionInfo, Event]]:
    """An event for which ``found`` holds that runs before event ``index`` of ``fn``: earlier
    in ``fn`` (in what its calls run too), or, in a caller, earlier than the call that leads
    here (``pretrain(); finetune()``), up to ``max_up`` callers."""
    frames, seen = [(fn, index, 0)], set()
    while frames:
        cur, stop, level = frames.pop()
        for e in cur.events[:stop]:
            if found(cur, e):
                return cur, e
            if e.kind != "call":
                continue
            for qual in project.resolve_call(e, cur):
                for inner in sorted(project.reachable_from(qual)):
                    callee = project.function(inner)
                    hit = next((x for x in callee.events if found(callee, x)), None) if callee else None
                    if hit is not None:
                        return callee, hit
        if level < max_up:
            for caller, i in call_sites_of(project, cur):
                if (caller.qualname, i) not in seen:
                    seen.add((caller.qualname, i))
                    frames.append((caller, i, level + 1))
    return None


def _unresolved_method_calls(project: Project) -> dict[str, list[tuple[FunctionInfo, int]]]:
    """Method calls on a non-``self`` receiver that resolve to no function, by method name;
    built once per project size (files load on demand), not once per question."""
    cache = project.memo("paths")
    memo = cache.get("unresolved_methods")
    if memo is not None and memo[0] == len(project.functions):
        return memo[1]
    index: dict[str, list[tuple[FunctionInfo, int]]] = {}
    for caller in list(project.functions.values()):
        for i, e in enumerate(caller.events):
            if e.kind == "call" and e.method and e.receiver != "self" \
                    and not project.resolve_call(e, caller):
                index.setdefault(e.method, []).append((caller, i))
    cache["unresolved_methods"] = (len(project.functions), index)
    return index


MAX_RETURN_CALLS = 3  # `return load(model)` chains followed to the function that returns a name


def returned_call(fn: FunctionInfo, index: int) -> Optional[Event]:
    """The call that is the whole value of the ``return`` at ``index`` (``return f(x)``), if any:
    the first call event inside the statement, starting where the value does and ending with it."""
    ret = fn.events[index]
    value = ret.text.removeprefix("return")
    column = ret.span.column + len("return") + len(value) - len(value.lstrip())
    call = next((e for e in fn.events[index + 1:] if e.kind == "call"), None)
    if call is None or not contains(ret.span, call.span):
        return None
    same_start = (call.span.line, call.span.column) == (ret.span.line, column)
    same_end = (call.span.end_line, call.span.end_column) == (ret.span.end_line, ret.span.end_column)
    return call if same_start and same_end else None


def returns(project: Optional[Project], fn: FunctionInfo, tracked: str, depth: int = 0) -> bool:
    """``fn`` returns the object named ``tracked`` in it: ``return model``, or the value of a call
    that returns the parameter ``tracked`` is bound to (``return load(name, model)`` where
    ``load`` ends in ``return model``), through at most MAX_RETURN_CALLS calls."""
    for j, e in enumerate(fn.events):
        if e.kind != "return":
            continue
        if e.one_object() == tracked:  # `return model`, `return model.module if ddp else model`
            return True
        call = returned_call(fn, j) if project is not None and depth < MAX_RETURN_CALLS else None
        for qual in project.resolve_call(call, fn) if call is not None else ():
            callee = project.function(qual)
            inner = rebase_across(call, callee, tracked, into=True) if callee is not None else None
            if inner is not None and returns(project, callee, inner, depth + 1):
                return True
    return False


def returned_as(fn: FunctionInfo, call: Event, tracked: Optional[str],
                project: Optional[Project] = None) -> Optional[str]:
    """``m = load_pretrained(...)`` where ``load_pretrained`` returns the tracked ``model``
    (see :func:`returns`): it is ``m`` in the caller."""
    if tracked is None or len(call.targets) != 1:
        return None
    return call.targets[0] if returns(project, fn, tracked) else None


def aliases(fn: FunctionInfo, index: int, name: str, project: Optional[Project] = None) -> tuple[str, ...]:
    """Other names of the object ``name`` holds at event ``index`` of ``fn``: the value of the
    name's last binding before it, when that is another name (``final = self.model``) or a
    choice between names of one model (``m = self.model.module if ddp else self.model``: a
    DataParallel / DDP wrapper's ``.module`` is the model it wraps, whose parameters are the
    wrapper's), or the argument of a call that returns it (``net = unwrap(self.model)``, see
    :func:`returns`). The binding must hold on every path to the event (not in an `if` the
    event is not in) and its names must not be rebound in between."""
    at = fn.events[index]
    j = next((k for k in range(index - 1, -1, -1) if fn.events[k].kind in ("assign", "augassign")
              and name in fn.events[k].targets), None)
    if j is None:
        return ()
    binding = fn.events[j]
    names = binding.bound_to(name) or (_handed_back(project, fn, j) if binding.targets == [name] else [])
    if not names or len({n.removesuffix(".module") for n in names}) != 1 \
            or at.conditions[:len(binding.conditions)] != binding.conditions:
        return ()
    if any(rebinds(e, n) for e in fn.events[j + 1:index] for n in names):
        return ()
    return tuple(n for n in dict.fromkeys(names) if n != name)


def _handed_back(project: Optional[Project], fn: FunctionInfo, j: int) -> list[str]:
    """The argument the call that is the whole value of assignment ``j`` returns as itself
    (``net = self.runner.unwrap_model(self.model)`` -> [self.model]), when every function the
    call resolves to returns that one argument."""
    binding = fn.events[j]
    value = binding.text.split("=", 1)[-1].strip()
    call = next((e for e in fn.events[j + 1:] if e.kind == "call"), None) if project is not None else None
    if call is None or not re.fullmatch(r"[\w.]+\(.*\)", value, re.S) or not contains(binding.span, call.span) \
            or (call.span.end_line, call.span.end_column) != (binding.span.end_line, binding.span.end_column):
        return []
    handed: set[str] = set()
    for qual in project.resolve_call(call, fn):
        callee = project.function(qual)
        given = [arg for param, arg in (bindings(call, callee) if callee is not None else ())
                 if re.fullmatch(r"[\w.]+", arg) and returns(project, callee, param)]
        if len(given) != 1:
            return []
        handed.add(given[0])
    return sorted(handed) if len(handed) == 1 else []


def idle_loops(fn: FunctionInfo, entry: int) -> set[int]:
    """The loops of ``fn`` that run no iteration on a path entering it at event ``entry`` (-1:
    its start): ``for ... in range(E)`` where ``E = 0`` is bound on every path to the loop
    (``if pretrained: args['epochs'] = 0; model = load(...)`` entered at the load) and nothing
    is assigned to E's root between that binding and the loop."""
    out: set[int] = set()
    at = fn.events[entry] if entry >= 0 else None
    for k, call in enumerate(fn.events[entry + 1:], entry + 1):
        first = call.loop_ids[-1] if call.loop_ids else None
        if first is None or call.kind != "call" or call.func != "range" or len(call.args) != 1 \
                or any(first in e.loop_ids for e in fn.events[:k]):
            continue  # not the `range(E)` a loop's body starts with
        bound = re.sub(r"\s+", "", call.args[0])
        root = re.split(r"[.\[]", bound)[0]
        j = next((m for m in range(k - 1, -1, -1) if fn.events[m].kind in ("assign", "augassign")
                  and any(t == root or t.startswith(root + ".") for t in fn.events[m].targets)), None)
        if j is None or re.sub(r"\s+", "", fn.events[j].text) != bound + "=0":
            continue
        binding = fn.events[j]
        # the binding runs on every path through `entry` (or through the loop, when it is
        # bound after the entry): its `if` blocks and loops are theirs too
        holds = at if at is not None and j < entry else call
        if holds.conditions[:len(binding.conditions)] == binding.conditions \
                and set(binding.loop_ids) <= set(holds.loop_ids):
            out.add(first)
    return out


def _returns_last(fn: FunctionInfo, order: list[int]) -> list[int]:
    """``order`` with each ``return`` after the calls of its own expression: in
    ``return self.evaluate(model)`` the call runs before the function is left."""
    out: list[int] = []
    pending: Optional[int] = None
    for i in order:
        event = fn.events[i]
        if pending is not None and not contains(fn.events[pending].span, event.span):
            out.append(pending)
            pending = None
        if event.kind == "return":
            pending = i
        else:
            out.append(i)
    return out if pending is None else [*out, pending]


class PathSearch:
    def __init__(
        self,
        project: Project,
        visitor: Visitor,
        max_depth: int = 6,
        max_up: int = 4,
        max_events: int = 6000,
        identity: Optional[Identity] = None,
    ) -> None:
        self.project = project
        self.visitor = visitor
        # where no name reaches the tracked object (up from a callback an object was handed: the
        # handler's `self.model` in the loop that fires it), the walk goes on without one and
        # names it again where a call's callee or receiver is the same object
        self.identity = identity
        self.max_depth = max_depth
        self.max_up = max_up
        self.budget = max_events
        self._seen_up: set[tuple] = set()
        # the start event's tests on its object's attributes (`if self.save_path is None:
        # ... else: <start>`): a caller holding an object built so that they fail has no path
        self.start_tests: list[tuple[str, bool]] = []

    # -- mapping the tracked name across calls ------------------------------------------------
    def map_into(self, caller: FunctionInfo, event: Event, callee: FunctionInfo,
                 names: Names) -> Names:
        """The names of the tracked object inside ``callee`` (those that cross the call)."""
        return _distinct(self._map_into(caller, event, callee, n) for n in names)

    def _map_into(self, caller: FunctionInfo, event: Event, callee: FunctionInfo,
                  tracked: str) -> Optional[str]:
        mapped = rebase_across(event, callee, tracked, into=True)
        if mapped is not None:
            return mapped
        if event.receiver and event.method and callee.class_name:
            return self.attribute_alias(caller, event.receiver, callee.class_name, tracked,
                                        event.span.line)
        return None

    def attribute_alias(self, fn: FunctionInfo, receiver: str, class_name: str, tracked: str,
                        line: int) -> Optional[str]:
        """``trainer = Trainer(model)`` and ``self.model = model`` in ``Trainer.__init__``:
        ``model`` is ``self.model`` inside the methods of ``trainer``."""
        ctor = next((e for e in reversed(fn.events)
                     if e.kind == "call" and receiver in e.targets and e.span.line <= line
                     and e.func.removesuffix("()") == class_name), None)
        init = self.project.function(f"{class_name}.__init__")
        if ctor is None or init is None:
            return None
        for param, arg in bindings(ctor, init):
            inner = rebase(tracked, arg, param)
            if inner is None:
                continue
            for e in init.events:
                if e.kind == "assign" and e.uses == [inner] and len(e.targets) == 1 \
                        and e.targets[0].startswith("self."):
                    return e.targets[0]
        return None

    def map_up(self, callee: FunctionInfo, event: Event, names: Names) -> Names:
        """The names of the tracked object in the caller after the call ``event``: the
        arguments its parameters were bound to, and what the call's value is assigned to when
        it returns the object (``net = load(path, base)``: both ``base`` and ``net``)."""
        return _distinct(name for n in names for name in (
            rebase_across(event, callee, n, into=False), returned_as(callee, event, n, self.project)))

    def callers(self, fn: FunctionInfo) -> list[tuple[FunctionInfo, int]]:
        return call_sites_of(self.project, fn)

    # -- walking ------------------------------------------------------------------------------
    def run(self, fn: FunctionInfo, index: int, tracked: Optional[str],
            state: Hashable) -> list[Outcome]:
        names = (tracked, *aliases(fn, index, tracked, self.project)) if tracked else ()
        self.start_tests = attribute_none_tests(fn.events[index]) if fn.class_name else []
        return self._continue(fn, index, names, state, up=0, trail=(),
                              holder="self" if self.start_tests else None)

    def _continue(self, fn: FunctionInfo, index: int, names: Names, state: Hashable,
                  up: int, trail: tuple[str, ...], holder: Optional[str] = None) -> list[Outcome]:
        """Everything after event ``index`` of ``fn``: the loop wrap-arounds and the straight
        path to the end, which then continues in the callers. ``holder``: ``self`` while ``fn``
        is a method of the start event's object."""
        start = fn.events[index]
        no_grad = is_no_grad_function(fn)  # each later event answers for its own `with`
        outcomes: list[Outcome] = []
        sequences = []
        for loop_id in reversed(start.loop_ids):
            body = [i for i, e in enumerate(fn.events) if loop_id in e.loop_ids]
            sequences.append(([i for i in body if i > index] + [i for i in body if i < index], True))
        idle = idle_loops(fn, index) - set(start.loop_ids)
        sequences.append(([i for i in range(index + 1, len(fn.events))
                           if not idle & set(fn.events[i].loop_ids)], False))
        for order, is_loop in sequences:
            for kind, st, step, left in self._walk(fn, order, names, state, innermost(start),
                                                   no_grad, depth=0, stack=(fn.qualname,)):
                if kind == "wrapped" and is_loop:
                    outcomes.append(Outcome(LOOP, step, trail))
                elif kind in ("return", "wrapped"):
                    left_at = step.event if kind == "return" and step is not None else None
                    outcomes += self._up(fn, left, st, up, trail, left_at, holder)
                else:
                    outcomes.append(Outcome(kind, step, trail))
        return outcomes

    def _up(self, fn: FunctionInfo, names: Names, state: Hashable, up: int,
            trail: tuple[str, ...], left_at: Optional[Event] = None,
            holder: Optional[str] = None) -> list[Outcome]:
        """The paths on from each caller of ``fn``, left at the ``return`` event ``left_at``
        (None: its end); not through a caller whose tests at the call rule that return out, nor
        through one calling ``fn`` on an object built so that the start event cannot run."""
        if up >= self.max_up:
            return [Outcome(END, None, trail)]
        sites = self.callers(fn)
        if not sites:
            return [Outcome(END, None, trail)]
        outcomes: list[Outcome] = []
        for caller, i in sites:
            event = caller.events[i]
            if left_at is not None and ruled_out(self.project, fn, left_at, caller, event):
                continue
            same = holder == "self" and event.receiver == "self" and bool(caller.class_name)
            if holder == "self" and not same and self._built_to_skip(caller, event):
                continue
            mapped = self.map_up(fn, event, names)
            # what the caller had bound the argument from (`net = unwrap(self.model)`) names it too
            mapped = _distinct((*mapped, *(a for n in mapped for a in aliases(caller, i, n, self.project))))
            if names and not mapped and self.identity is None:
                outcomes.append(Outcome(LOST, None, trail))
                continue
            key = (caller.qualname, i, mapped, state, same)
            if key in self._seen_up:
                continue
            self._seen_up.add(key)
            where = f"{caller.path}:{event.span.line}"
            outcomes += self._continue(caller, i, mapped, state, up + 1, (where, *trail),
                                       "self" if same else None)
        return outcomes

    def _built_to_skip(self, caller: FunctionInfo, event: Event) -> bool:
        """``event`` calls into the start's object held by a local of ``caller`` that a
        constructor call there built with attributes the start event's tests rule out."""
        # construction.py answers through configuration values, which are built on this module
        from auditor.static.construction import attribute_values
        for attr, is_none in self.start_tests:
            values = attribute_values(self.project, caller, event.receiver, event.span.line, attr)
            if values and all((v.value is None) != is_none for v in values):
                return True
        return False

    def _walk(self, fn: FunctionInfo, order: list[int], names: Names, state: Hashable,
              start_branch: Optional[str], no_grad: bool, depth: int,
              stack: tuple[str, ...]) -> list[Walked]:
        """Walk ``order`` (indices of ``fn``'s events). Returns (kind, state, step, names) per
        path: a verdict, ``return`` (left the function), ``wrapped`` (walked ``order`` to its
        end), with the names that still reach the tracked object there."""
        results: list[Walked] = []
        states = {state}
        for i in _returns_last(fn, order):
            if not states:
                break
            event = fn.events[i]
            if not names and self.identity is not None:
                if (fn.qualname, i) in self.identity.made_at:
                    # made anew here: a later use is of another object than the one tracked
                    results += [(LOST, st, None, names) for st in states]
                    states = set()
                    break
                names = self._named_again(fn, i)
            branch = innermost(event)
            conditional = branch is not None and branch != start_branch
            ng = no_grad or under_no_grad(event)
            # the names the statement binds to another object stop naming the tracked one
            kept = names if conditional else tuple(n for n in names if not rebinds(event, n))
            kept = _distinct((*kept, *bound_alias(event, kept)))
            next_states: set[Hashable] = set()
            for st in states:
                self.budget -= 1
                if self.budget < 0:
                    results.append((BUDGET, st, None, names))
                    continue
                entry_states = {st}
                resolved = False
                if event.kind == "call" and depth < self.max_depth:
                    entry_states, stopped, resolved = self._descend(
                        fn, event, names, st, conditional, ng, depth, stack)
                    results += stopped
                if names and not kept:
                    results.append((LOST, st, None, names))  # no name holds it any more
                    continue
                for est in entry_states:
                    step = Step(fn, i, kept[0] if kept else None, conditional, ng, resolved,
                                self.project, kept[1:], self.identity is not None and not kept)
                    verdict, new = self.visitor(step, est)
                    if verdict is not None:
                        results.append((verdict, new, step, kept))
                    elif event.kind == "return":
                        results.append(("return", new, step, kept))
                        if conditional:
                            next_states.add(new)
                    else:
                        next_states.add(new)
            states, names = next_states, kept
        results += [("wrapped", st, None, names) for st in states]
        return results

    def _named_again(self, fn: FunctionInfo, i: int) -> Names:
        """The tracked object's name at event ``i`` of ``fn`` when the call there runs it (its
        callee or receiver is the same object): the walk lost its name on the way here."""
        if fn.events[i].kind != "call" or self.identity is None:
            return ()
        span = fn.events[i].span
        # the calls nested in this one run first (`model(g).sum().backward()`)
        for k in range(i, len(fn.events)):
            event = fn.events[k]
            if not event.span.within(span):
                break
            expr = event.receiver if event.receiver and event.method else event.func.removesuffix("()")
            if event.kind == "call" and re.fullmatch(r"[\w.]+", expr or "-") \
                    and self.identity.names_it(fn, expr, k):
                return (expr,)
        return ()

    def _descend(self, fn: FunctionInfo, event: Event, names: Names, state: Hashable,
                 conditional: bool, no_grad: bool, depth: int, stack: tuple[str, ...]
                 ) -> tuple[set[Hashable], list[Walked], bool]:
        """Run the project functions a call resolves to; states after they return, and the
        paths that stopped inside them."""
        callees = [q for q in self.project.resolve_call(event, fn) if q not in stack]
        if not callees:
            return {state}, [], False
        after: set[Hashable] = set()
        stopped: list[Walked] = []
        # the tracked object was followed into a callee, whose events then answered for it;
        # `self.model(x)` for a tracked `self` enters a forward where no name holds `self`:
        # the call itself is then the forward of a part of it
        followed = False
        for qual in callees:
            callee = self.project.function(qual)
            if callee is None or not callee.events:
                after.add(state)
                continue
            mapped = self.map_into(fn, event, callee, names)
            followed = followed or bool(mapped) or not names or is_no_grad_function(callee)
            idle = idle_loops(callee, -1)
            order = [i for i, e in enumerate(callee.events) if not idle & set(e.loop_ids)]
            sub = self._walk(callee, order, mapped, state,
                             None, no_grad or is_no_grad_function(callee), depth + 1,
                             (*stack, qual))
            for kind, st, step, left in sub:
                if kind == "return" and step is not None \
                        and ruled_out(self.project, callee, step.event, fn, event):
                    continue  # an early return the caller's own test at the call excludes
                if kind in ("return", "wrapped"):
                    after.add(st)
                else:
                    stopped.append((kind, st, step, left))
        if conditional:
            # an `if` the start is not in: the callee's verdicts stand, but skipping it is a path
            after.add(state)
        return after, [(k, s, replace(st, conditional=st.conditional or conditional)
                        if st is not None else None, left) for k, s, st, left in stopped], followed
