"""GM501 self-loop-twice: self loops added to a graph that already carries them."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.config_truth import empty_loop
from auditor.static.dataflow import constructed_class, call_targets, mentions
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.paths import bindings
from auditor.static.project import Project

ADD_FUNCS = {"dgl.add_self_loop", "dgl.transforms.add_self_loop",
             "dgl.transforms.functional.add_self_loop"}
REMOVE_FUNCS = {"dgl.remove_self_loop", "dgl.transforms.remove_self_loop",
                "dgl.transforms.functional.remove_self_loop"}
ADD_TRANSFORMS = {"dgl.AddSelfLoop", "dgl.transforms.AddSelfLoop",
                  "dgl.transforms.module.AddSelfLoop"}
REMOVE_TRANSFORMS = {"dgl.RemoveSelfLoop", "dgl.transforms.RemoveSelfLoop",
                     "dgl.transforms.module.RemoveSelfLoop"}
# reading these from a graph gives tensors/counts, not a graph or its edge list
NOT_GRAPH = {"ndata", "edata", "srcdata", "dstdata", "num_nodes", "number_of_nodes", "num_edges",
             "number_of_edges", "in_degrees", "out_degrees", "device", "idtype", "batch_size",
             "batch_num_nodes", "batch_num_edges", "nodes", "ntypes", "etypes", "shape",
             "dtype", "num_src_nodes", "num_dst_nodes"}
CONTAINER_ADDS = {"append", "extend", "insert", "add"}
# `for g, y in dataset` inside a comprehension: its targets and the name it iterates
_COMPREHENSION = re.compile(r"\bfor\s+([\w\s,()]+?)\s+in\s+([\w.]+)")
MAX_ROUNDS = 8


@dataclass(frozen=True)
class Origin:
    """Where a graph's self loops were added."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} (`{self.text}`)"


@dataclass
class Op:
    kind: str  # add | remove | make_adder | make_remover | add_via_transform
    event: Event
    source: str = ""  # the text of the graph the op reads ("" when it creates a new one)
    in_place: bool = False

    @property
    def graph(self) -> str:
        return _root(self.source)


Taint = frozenset  # of Origin: where the self loops a graph carries were added
CLEAN: frozenset = frozenset()


def _root(text: str) -> str:
    return text.split("[")[0].split("(")[0].strip()


def _attribute_read(use: str, in_class: str, names: set[str]) -> bool:
    """``use`` reads an attribute that may hold a tainted graph: the instance's own
    (``self.g``, in a method), or one of ``names`` off another object (``dataset.graph``)."""
    root = _root(use)
    return bool(in_class) and root.startswith("self.") or \
        bool(names) and root.partition(".")[2].split(".")[0] in names


class Flow:
    """Name-level taint "this graph already has self loops", across the project's functions."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.entry: dict[str, dict[str, Taint]] = {}
        self.returns: dict[str, Taint] = {}
        self.attrs: dict[tuple[str, str], Taint] = {}
        self.adders: dict[str, set[str]] = {}  # function -> names bound to AddSelfLoop()
        self.findings: dict[tuple[str, int, int], tuple[Span, str, Taint]] = {}
        self.changed = False
        self.touched: set[tuple[str, object]] = set()  # what changed this round (worklist)
        # A run whose inputs did not change since its previous run started changes nothing: it
        # is skipped, so the rounds follow the same course at a fraction of the runs (dgl:
        # six rounds of every function, because a `forward`'s return taint changed).
        self.clock = 0
        self.changed_at: dict[tuple[str, object], int] = {}  # what -> clock of its last change
        self.started: dict[str, tuple[int, int]] = {}  # function -> (clock, project size) of its last run
        self.reads: dict[str, set[str]] = {}  # function -> functions whose return taint it reads
        self.reads_attrs: set[str] = set()  # functions that read `self.<attr>` taints
        # `dataset.graph` read outside the class (a local built from a project class): the
        # attribute names some class holds a tainted graph in, and the functions that read
        # such an attribute of an object and the classes they read it from
        self.attr_names: set[str] = set()
        self.reads_objects: dict[str, set[str]] = {}
        # function -> the (object, attribute) it reads off local objects (``dataset.graph``)
        self._reads: Optional[dict[str, set[tuple[str, str]]]] = None
        self._classes: dict[tuple[str, str, int], frozenset[str]] = {}

    # -- classifying calls -------------------------------------------------------------------------
    def op(self, fn: FunctionInfo, e: Event) -> Optional[Op]:
        func = e.func.removesuffix("()")
        adders = self.adders.get(fn.qualname, set())
        if func in ADD_FUNCS:
            return Op("add", e, e.args[0] if e.args else e.kwargs.get("g", ""))
        if func in REMOVE_FUNCS or (e.method == "remove_self_loop" and e.receiver):
            return Op("remove", e, e.receiver)
        if e.method == "add_self_loop" and e.receiver:
            return Op("add", e, e.receiver)
        if func in ADD_TRANSFORMS:
            return Op("make_adder", e)
        if func in REMOVE_TRANSFORMS:
            return Op("make_remover", e)
        if func in adders:
            return Op("add", e, e.args[0] if e.args else "")
        if e.method == "add_edges":
            args = e.args if e.receiver and func != "dgl.add_edges" else e.args[1:]
            graph = e.receiver if func != "dgl.add_edges" else (e.args[0] if e.args else "")
            # every node at once (`g.nodes()`, `torch.arange(n)`): `add_edges(j, j)` in a loop
            # over nodes adds one loop per node and is the loop-building idiom itself
            if len(args) >= 2 and args[0] == args[1] and ("nodes(" in args[0] or "range(" in args[0]):
                return Op("add", e, graph, in_place=func != "dgl.add_edges")
        for key in ("transform", "pre_transform"):
            value = e.kwargs.get(key, "")
            if "AddSelfLoop" in value or value in adders:
                return Op("add_via_transform", e)
        return None

    # -- taint lookups -----------------------------------------------------------------------------
    def lookup(self, fn: FunctionInfo, env: dict[str, Taint], name: str) -> Taint:
        name = _root(name)
        if name in env:
            return env[name]
        if name.startswith("self.") and fn.class_name:
            self.reads_attrs.add(fn.qualname)
            return CLEAN.union(*(self.attrs.get((cls, name), CLEAN)
                                 for cls in self.project.lineage(fn.class_name)))
        obj, _, attr = name.rpartition(".")
        if obj and "." not in obj and obj != "self" and attr in self.attr_names:
            classes = self._object_classes(fn, obj)
            if classes:
                self.reads_objects.setdefault(fn.qualname, set()).update(classes)
                return CLEAN.union(*(self.attrs.get((c, f"self.{attr}"), CLEAN) for c in classes))
        return CLEAN

    def _object_classes(self, fn: FunctionInfo, obj: str) -> frozenset[str]:
        """The project classes (its own and its bases) of the object the local ``obj`` of
        ``fn`` was built as, anywhere in ``fn`` (a name is asked here without its statement's
        line): asked at every read of an attribute off it, kept until a load grows the project."""
        key = (fn.qualname, obj, len(self.project.functions))
        found = self._classes.get(key)
        if found is None:
            cls = self.project.instance_class(fn, obj, fn.span.end_line if fn.span else sys.maxsize)
            found = self._classes[key] = frozenset(self.project.lineage(cls)) if cls else frozenset()
        return found

    def tainted_use(self, fn: FunctionInfo, env: dict[str, Taint], uses: list[str]) -> Taint:
        """A graph-valued read of a tainted name (``g``, ``g.to``, ``g.edges``; not
        ``g.ndata`` or ``g.num_nodes()``)."""
        if not env:  # no tainted local: only attributes can be (most functions)
            uses = [u for u in uses if "." in u and _attribute_read(u, fn.class_name, self.attr_names)]
        out = CLEAN
        for u in uses:
            # the longest tainted prefix: `self.gs.copy` reads `self.gs`, a looped graph list
            parts = _root(u).split(".")
            for n in range(len(parts), 0, -1):
                name = ".".join(parts[:n])
                origin = self.lookup(fn, env, name)
                if not origin:
                    continue
                attrs = [x[len(name) + 1:].split(".")[0] for x in uses if x.startswith(name + ".")]
                if not attrs or any(a not in NOT_GRAPH for a in attrs):
                    out |= origin
                break
        return out

    def _set(self, store: dict, key, origin: Taint, what: tuple[str, object] = ("all", None)) -> None:
        old = store.get(key, CLEAN)
        if not origin <= old:
            store[key] = old | origin
            self._changed(what)

    def _changed(self, what: tuple[str, object]) -> None:
        self.changed = True
        self.touched.add(what)
        self.changed_at[what] = self.clock

    def assign(self, fn: FunctionInfo, env: dict[str, Taint], names: Iterable[str],
               origin: Taint) -> None:
        for name in names:
            if not origin:
                env.pop(name, None)
                continue
            env[name] = origin
            if name.startswith("self.") and fn.class_name:
                self._set(self.attrs, (fn.class_name, name), origin, ("attr", fn.class_name))
                if name.count(".") == 1 and name[5:] not in self.attr_names:
                    self.attr_names.add(name[5:])
                    self._changed(("attr name", name[5:]))

    # -- one function --------------------------------------------------------------------------------
    def run_function(self, fn: FunctionInfo) -> None:
        self.clock += 1
        self.started[fn.qualname] = (self.clock, len(self.project.functions))
        env: dict[str, Taint] = dict(self.entry.get(fn.qualname, {}))
        events = fn.events
        i = 0
        while i < len(events):
            head = events[i]
            group = [head]
            j = i + 1
            if head.kind in ("assign", "augassign", "return"):
                while j < len(events) and events[j].kind == "call" and \
                        head.span.line <= events[j].span.line <= head.span.end_line:
                    group.append(events[j])
                    j += 1
            self.run_statement(fn, env, group)
            i = j

    def run_statement(self, fn: FunctionInfo, env: dict[str, Taint], group: list[Event]) -> None:
        head = group[0]
        if head.loop_ids and empty_loop(self.project, fn, head) is not None:
            return  # (a transform loop over a configured list that is empty on every run)
        calls = [e for e in group if e.kind == "call"]
        result: Taint = CLEAN
        decided = False
        reads = self.comprehension_scope(fn, env, head)
        made: dict[int, Taint] = {}  # what each inner call returned: `add_self_loop(make_graph(n))`
        for e in reversed(calls):  # innermost first: `dgl.add_self_loop(dgl.remove_self_loop(g))`
            op = self.op(fn, e)
            if op is None:
                made[id(e)] = self.call(fn, reads, e)
                result |= made[id(e)]
                continue
            if op.kind == "make_adder":
                if not set(head.targets) <= self.adders.get(fn.qualname, set()):
                    self._changed(("entry", fn.qualname))
                self.adders.setdefault(fn.qualname, set()).update(head.targets)
                decided = True
            elif op.kind == "remove":
                result, decided = CLEAN, True
            elif op.kind in ("add", "add_via_transform"):
                earlier = self.graph_input(fn, reads, op, e)
                if "(" in op.source and "remove_self_loop(" not in op.source:
                    earlier = earlier.union(*(t for x in calls if x is not e and id(x) in made
                                              and x.span.within(e.span) for t in [made[id(x)]]))
                here = Origin(fn.path, e.span.line, _short(e.text))
                if earlier - {here}:
                    key = (fn.path, e.span.line, e.span.column)
                    seen = self.findings.get(key, (e.span, fn.path, CLEAN))[2]
                    self.findings[key] = (e.span, fn.path, seen | (earlier - {here}))
                result, decided = earlier | {here}, True
                if op.in_place:
                    self.assign(fn, env, [op.graph], result)
        if head.kind == "call":
            return
        if head.kind == "return":
            origin = result if decided else result | self.tainted_use(fn, env, head.uses)
            if origin:
                self._set(self.returns, fn.qualname, origin, ("return", fn.qualname))
            return
        if not decided:
            result |= self.tainted_use(fn, env, head.uses)
        if head.kind == "augassign" and not result:
            return
        self.assign(fn, env, head.targets, result)

    def comprehension_scope(self, fn: FunctionInfo, env: dict[str, Taint], head: Event) -> dict[str, Taint]:
        """The names a statement reads: ``env``, plus the targets of its comprehensions bound to
        what they iterate (``[dgl.add_self_loop(g) for g in graphs]``: ``g`` is a graph of
        ``graphs``). A comprehension's targets stay inside it."""
        if head.text.startswith(("for ", "async for ")) or " for " not in head.text:
            return env
        bound = {}
        for targets, iterable in _COMPREHENSION.findall(head.text):
            origin = self.tainted_use(fn, env, [iterable])
            for name in re.findall(r"\w+", targets) if origin else ():
                bound[name] = origin
        return {**env, **bound} if bound else env

    def graph_input(self, fn: FunctionInfo, env: dict[str, Taint], op: Op, e: Event) -> Taint:
        """Taint of the graph an add reads: a name, or the names inside a nested call."""
        if "(" not in op.source:
            return self.lookup(fn, env, op.graph) if op.graph else CLEAN
        if "remove_self_loop(" in op.source or "RemoveSelfLoop" in op.source:
            return CLEAN
        return self.tainted_use(fn, env, [u for u in e.uses if u != e.func])

    def call(self, fn: FunctionInfo, env: dict[str, Taint], e: Event) -> Taint:
        """Flow a call's tainted arguments into project callees; the callee's return taint."""
        taint_of = {a: self.arg_taint(fn, env, e, a) for a in [*e.args, *e.kwargs.values()]}
        any_taint = CLEAN.union(*taint_of.values())
        if e.method in CONTAINER_ADDS and e.receiver and any_taint:
            self.assign(fn, env, [_root(e.receiver)], any_taint)
        # the functions this call runs, as the program model resolves them (a model instance's
        # `forward` through where the instance was built); an unresolved call carries nothing
        callees = call_targets(self.project, fn, e)
        if any_taint and "collate_fn" in e.kwargs:
            callees_collate = self.project.resolve_call(
                Event("call", e.span, func=self._qualify(fn, e.kwargs["collate_fn"])), fn)
            for q in callees_collate:
                callee = self.project.function(q)
                if callee is not None and callee.params:
                    self._set(self.entry.setdefault(q, {}), callee.params[0], any_taint, ("entry", q))
        if any_taint:
            self._fields_built(e, taint_of)
        out = CLEAN
        reads = self.reads.setdefault(fn.qualname, set())
        for q in callees:
            callee = self.project.function(q)
            if callee is None:
                continue
            receiver = callee.params[0] if callee.class_name and callee.params and \
                callee.params[0] in ("self", "cls") else None
            for p, arg in bindings(e, callee):
                origin = taint_of.get(arg, CLEAN)
                if origin and p != receiver:
                    self._set(self.entry.setdefault(q, {}), p, origin, ("entry", q))
            out |= self.returns.get(q, CLEAN)
            reads.add(q)
            if callee.name == "__init__" and callee.class_name:
                # an instance of a dataset whose items carry self loops is a looped graph source
                for method in ("__getitem__", "__iter__"):
                    for cand in self.project.method_candidates(callee.class_name, method):
                        out |= self.returns.get(cand, CLEAN)
                        reads.add(cand)
        return out

    def _fields_built(self, e: Event, taint_of: dict[str, Taint]) -> None:
        """A dataclass or NamedTuple built from a looped graph (``Dataset(graph=g, ...)``): the
        field holds it, as a constructor's ``self.graph = graph`` would."""
        for cls in constructed_class(self.project, e):
            info = self.project.classes.get(cls)
            if info is None or not info.fields or f"{cls}.__init__" in self.project.functions:
                continue
            positional = [a for a in e.args if not a.startswith("*")]
            for n, name in enumerate(info.fields):
                arg = e.kwargs.get(name) or (positional[n] if n < len(positional) else "")
                origin = taint_of.get(arg, CLEAN) if arg else CLEAN
                if origin:
                    self._set(self.attrs, (cls, f"self.{name}"), origin, ("attr", cls))
                    if name not in self.attr_names:
                        self.attr_names.add(name)
                        self._changed(("attr name", name))

    def arg_taint(self, fn: FunctionInfo, env: dict[str, Taint], e: Event, arg: str) -> Taint:
        """Taint of one argument of the call ``e``: a name's; for a call passed as the argument
        (``step(next(batches))``) what that call reads, when it is no self-loop operation; for
        any other expression (``[ds[i] for i in idx]``, ``(g, x)``) the names it reads."""
        if arg.replace(".", "").replace("_", "").isalnum():
            return self.tainted_use(fn, env, [arg])
        callee = arg.removesuffix("(...)").removesuffix("()")
        if callee == arg or not callee.replace(".", "").replace("_", "").isalnum():
            return self.tainted_use(fn, env, [u for u in e.uses if u != e.func and mentions(arg, u)])
        inner = next((x for x in fn.events if x.kind == "call" and x is not e
                      and x.span.within(e.span) and x.func.endswith(callee)), None)
        if inner is None or self.op(fn, inner) is not None:
            return CLEAN
        return self.tainted_use(fn, env, [u for u in inner.uses if u != inner.func])

    def _qualify(self, fn: FunctionInfo, name: str) -> str:
        facts = self.project.files.get(fn.path)
        if facts is not None and name in facts.imports:
            return facts.imports[name]
        return name

    def run(self) -> None:
        """Chaotic iteration to the fixpoint: after a first pass over every function, only the
        functions that read something that changed are run again."""
        todo = list(self.project.functions.values())
        for _ in range(MAX_ROUNDS):
            self.changed = False
            self.touched = set()
            for fn in todo:
                if self._inputs_changed(fn):
                    self.run_function(fn)
            if not self.changed:
                break
            todo = self._dependents(self.touched)

    def _inputs_changed(self, fn: FunctionInfo) -> bool:
        """Has anything ``fn``'s run reads changed since its previous run started (its own
        changes included)? Its entry taint and adders, the return taints of its callees, the
        attributes of its class and bases, the project's functions (an on-demand load)."""
        started = self.started.get(fn.qualname)
        if started is None or started[1] != len(self.project.functions):
            return True
        since = started[0]
        inputs = [("all", None), ("entry", fn.qualname)]
        inputs += [("return", q) for q in self.reads.get(fn.qualname, ())]
        if fn.qualname in self.reads_attrs:  # the classes `lookup` reads, already loaded
            inputs += [("attr", c) for c in self.project.lineage(fn.class_name)]
        inputs += [("attr", c) for c in self.reads_objects.get(fn.qualname, ())]
        if self.attr_names:
            inputs += [("attr name", attr) for _, attr in self._object_reads().get(fn.qualname, ())
                       if attr in self.attr_names]
        return any(self.changed_at.get(what, 0) >= since for what in inputs)

    def _object_reads(self) -> dict[str, set[tuple[str, str]]]:
        """Function -> the (object, attribute) pairs it reads off local objects. Made once:
        functions loaded later are run whole anyway."""
        if self._reads is None:
            self._reads = {}
            for fn in self.project.functions.values():
                for e in fn.events:
                    for u in e.uses:
                        root, _, rest = _root(u).partition(".")
                        if rest and root != "self" and "." not in root:
                            self._reads.setdefault(fn.qualname, set()).add((root, rest.split(".")[0]))
        return self._reads

    def _reading(self, attr: str) -> set[str]:
        """The functions that read ``attr`` off a local object (``dataset.graph``) built from a
        class that holds a tainted graph as ``self.<attr>``."""
        holders = {cls for cls, name in self.attrs if name == f"self.{attr}"}
        out = set()
        for qual, obj in [(q, o) for q, reads in self._object_reads().items() for o, a in reads if a == attr]:
            fn = self.project.functions.get(qual)
            if fn is not None and holders & self._object_classes(fn, obj):
                out.add(qual)
        return out

    def _dependents(self, touched: set[tuple[str, object]]) -> list[FunctionInfo]:
        functions = self.project.functions
        if ("all", None) in touched:
            return list(functions.values())
        dirty: set[str] = set()
        classes: set[str] = set()
        for kind, key in touched:
            if kind == "entry":
                dirty.add(str(key))
            elif kind == "attr":
                classes.add(str(key))
                dirty.update(q for q, read in self.reads_objects.items() if key in read)
            elif kind == "attr name":  # newly tainted: who reads it off an object may now see it
                dirty.update(self._reading(str(key)))
            elif kind == "return":
                name = str(key).rsplit(".", 1)[-1]
                if name in ("forward", "__getitem__", "__iter__"):
                    return list(functions.values())  # reached through unresolved module calls
                dirty.update(self.project.callers(str(key)))
        if classes:
            for fn in functions.values():
                if fn.class_name and any(
                        c in classes for c in self.project.lineage(fn.class_name)):
                    dirty.add(fn.qualname)
        return [functions[q] for q in dirty if q in functions]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:59] + "…"


class SelfLoopTwice(Rule):
    code = "GM501"
    name = "self-loop-twice"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "`add_self_loop` on a graph that already carries self loops"
    prefilter = ("add_self_loop", "AddSelfLoop", "add_edges")
    runs_beside = True  # its self-loop taint runs every function of the tree
    doc = """
## What it does
Follows graphs along the data path (dataset processing, `__getitem__`, transforms, `collate`,
the loader, the training loop, the model's `forward`, edge-drop augmentation) across functions
and files, and finds `dgl.add_self_loop(g)`, `g.add_self_loop()`, a `dgl.AddSelfLoop()`
transform, or `g.add_edges(nodes, nodes)` applied to a graph that already had self loops added
earlier on that path with no `remove_self_loop` in between. The finding is at the later call and
names the earlier one. A single add, and `remove_self_loop` followed by `add_self_loop`, are
silent. A graph rebuilt from the edge list of a looped graph (`dgl.graph(g.edges())`, as edge
dropping does) still carries its loops. A graph passes into another function only through a call
the program model resolves (a model instance's `forward` through where the instance was built):
an add in another model of the same package, which this graph never reaches, is not on its path;
and both adds must belong to one program.

## Why is this bad?
`add_self_loop` does not check for existing loops: every node gets a second self edge. In
GAT/GCN message passing a node's own features then count twice in its aggregation (GCN's
degree normalisation and GAT's attention softmax both change), so the encoder of the pipeline
is a different function from the minimal script's even with identical weights. GraphMAE is hit
hardest on the masked nodes: their input is the mask token, and the doubled self loop amplifies
the token relative to the neighbours the reconstruction depends on, so the decoded points
scatter while the loss still decreases.

## Example
```python
import dgl
from torch import nn


class GraphMAE(nn.Module):
    def forward(self, g, x):
        g = dgl.add_self_loop(g)   # the loader's graphs have them already: now two per node
        return self.decoder(g, self.encoder(g, x))


def build_graph(src, dst, n):
    return dgl.add_self_loop(dgl.graph((src, dst), num_nodes=n))


model = GraphMAE()
for src, dst, n, x in parts:
    g = build_graph(src, dst, n)
    recon = model(g, x)
```

## Use instead
```python
import dgl
from torch import nn


class GraphMAE(nn.Module):
    def forward(self, g, x):   # the graph arrives with its self loops
        return self.decoder(g, self.encoder(g, x))


def build_graph(src, dst, n):   # the one place that adds them
    return dgl.add_self_loop(dgl.graph((src, dst), num_nodes=n))


model = GraphMAE()
for src, dst, n, x in parts:
    g = build_graph(src, dst, n)
    recon = model(g, x)
```
or add the loops in exactly one place on the data path.

## Fix safety
No automatic fix: which of the two adds is the intended one depends on the other code paths
(e.g. graphs built elsewhere without loops).

## References
- https://docs.dgl.ai/generated/dgl.add_self_loop.html ("does not remove existing self loops")
- https://github.com/THUDM/GraphMAE (`g = g.remove_self_loop().add_self_loop()`)
"""

    VALID = [
        Valid("import dgl\ng = dgl.remove_self_loop(g)\ng = dgl.add_self_loop(g)\n"),
        Valid("import dgl\ng = dgl.graph((src, dst))\ng = dgl.add_self_loop(g)\n"),
        # loops in the dataset only; the model uses the graph as it comes
        Valid({
            "data.py":
                "import dgl\n"
                "class Parts:\n"
                "    def __init__(self, edges):\n"
                "        self.graphs = [dgl.add_self_loop(dgl.graph(e)) for e in edges]\n"
                "    def __getitem__(self, i):\n"
                "        return self.graphs[i]\n",
            "model.py":
                "class Net:\n"
                "    def forward(self, g, x):\n"
                "        n = g.num_nodes()\n"
                "        return self.conv(g, x)\n",
            "train.py":
                "from data import Parts\nfrom model import Net\n"
                "ds = Parts(edges)\nmodel = Net()\n"
                "for g in ds:\n"
                "    loss = model(g, g.ndata['x'])\n",
        }),
        # loops added in the dataset, made idempotent again in the model
        Valid({
            "data.py":
                "import dgl\n"
                "def build(e):\n"
                "    return dgl.add_self_loop(dgl.graph(e))\n",
            "train.py":
                "import dgl\nfrom data import build\n"
                "g = build(edges)\n"
                "g = dgl.add_self_loop(dgl.remove_self_loop(g))\n",
        }),
        # edge dropping on a loop-free graph, then loops added once
        Valid(
            "import dgl\n"
            "def drop_edges(g, p):\n"
            "    g = dgl.remove_self_loop(g)\n"
            "    src, dst = g.edges()\n"
            "    keep = torch.rand(len(src)) > p\n"
            "    ng = dgl.graph((src[keep], dst[keep]), num_nodes=g.num_nodes())\n"
            "    return ng.add_self_loop()\n"
        ),
        # two models of one package: the script's looped graph feeds only the first; the second
        # adds loops to a graph it builds itself from its own input
        Valid({
            "pkg/__init__.py": "from .gcn import GCN\nfrom .metapath import MetapathNet\n",
            "pkg/gcn.py":
                "from torch import nn\n"
                "class GCN(nn.Module):\n"
                "    def forward(self, g, x):\n"
                "        return self.conv(g, x)\n",
            "pkg/metapath.py":
                "import dgl\nfrom torch import nn\n"
                "class MetapathNet(nn.Module):\n"
                "    def forward(self, hg, x):\n"
                "        g = dgl.metapath_reachable_graph(hg, self.metapath)\n"
                "        g = dgl.add_self_loop(g)\n"
                "        return self.conv(g, x)\n",
            "train.py":
                "import dgl\nfrom pkg import GCN\n"
                "def run(model, g):\n"
                "    return model(g, g.ndata['x'])\n"
                "g = dgl.add_self_loop(load())\n"
                "run(GCN(), g)\n",
        }),
    ]
    INVALID = [
        # the graph a dataset object holds (its constructor added the loops), read off the
        # object by the script and handed to a loader factory that adds them again
        Invalid({
            "data.py": (
                "import dgl\n\n"
                "class NodeData:\n"
                "    def __init__(self, src, dst, n):\n"
                "        g = dgl.graph((src, dst), num_nodes=n)\n"
                "        self.graph = dgl.add_self_loop(g)\n\n"
                "def make_loader(graph, sampler):\n"
                "    graph = dgl.add_self_loop(graph)\n"
                "    return dgl.dataloading.DataLoader(graph, graph.nodes(), sampler)\n"
            ),
            "train.py": (
                "import dgl\n"
                "from data import NodeData, make_loader\n\n"
                "def main(src, dst, n):\n"
                "    data = NodeData(src, dst, n)\n"
                "    return make_loader(data.graph, dgl.dataloading.NeighborSampler([5]))\n"
            ),
        }, path="data.py", line=9),
        # the batch reaches the step as a call's result (`next(batches)` of a generator over the
        # loader of graphs that already carry their self loops)
        Invalid({
            "data.py": (
                "import dgl\n\n"
                "def to_graph(src, dst, n):\n"
                "    return dgl.add_self_loop(dgl.graph((src, dst), num_nodes=n))\n\n"
                "def batches(graphs):\n"
                "    while True:\n"
                "        for g in graphs:\n"
                "            yield g\n"
            ),
            "train.py": (
                "import dgl\nfrom data import batches, to_graph\n\n"
                "def step(model, opt, g):\n"
                "    g = dgl.add_self_loop(g)\n"
                "    loss = model(g, g.ndata['x'])\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n\n"
                "def main(model, opt, edges):\n"
                "    graphs = [to_graph(s, d, n) for s, d, n in edges]\n"
                "    it = batches(graphs)\n"
                "    for _ in range(100):\n"
                "        step(model, opt, next(it))\n"
            ),
        }, path="train.py", line=5),
        Invalid(
            "import dgl\ng = dgl.add_self_loop(g)\nh = g.to('cpu')\nh = h.add_self_loop()\n",
            line=4, message_contains="example.py:2",
        ),
        # the dataset adds loops; the model's forward adds them again
        Invalid({
            "data.py":
                "import dgl\nfrom torch.utils.data import DataLoader\n"
                "class Parts:\n"
                "    def __init__(self, edges):\n"
                "        self.graphs = [self.build(e) for e in edges]\n"
                "    def build(self, e):\n"
                "        g = dgl.graph(e)\n"
                "        return dgl.add_self_loop(g)\n"
                "    def __getitem__(self, i):\n"
                "        return self.graphs[i]\n"
                "def collate(graphs):\n"
                "    return dgl.batch(graphs)\n"
                "def make_loader(ds):\n"
                "    return DataLoader(ds, batch_size=8, collate_fn=collate)\n",
            "model.py":
                "import dgl\nfrom torch import nn\n"
                "class Net(nn.Module):\n"
                "    def forward(self, g, x):\n"
                "        g = dgl.add_self_loop(g)\n"
                "        return self.conv(g, x)\n",
            "train.py":
                "from data import Parts, make_loader\nfrom model import Net\n"
                "loader = make_loader(Parts(edges))\nmodel = Net()\n"
                "for g in loader:\n"
                "    loss = model(g, g.ndata['x'])\n",
        }, line=5, path="model.py", message_contains="data.py:8"),
        # a transform object and an explicit add
        Invalid(
            "import dgl\n"
            "transform = dgl.AddSelfLoop()\n"
            "g = transform(g)\n"
            "g = dgl.add_self_loop(g)\n",
            line=4,
        ),
        # edge-drop augmentation rebuilds the graph from a looped graph's edges, re-adds loops
        Invalid(
            "import dgl\nimport torch\n"
            "def drop_edges(g, p):\n"
            "    src, dst = g.edges()\n"
            "    keep = torch.rand(len(src)) > p\n"
            "    ng = dgl.graph((src[keep], dst[keep]), num_nodes=g.num_nodes())\n"
            "    return ng.add_self_loop()\n"
            "g = dgl.add_self_loop(base)\n"
            "aug = drop_edges(g, 0.2)\n",
            line=7,
        ),
        Invalid(
            "import dgl\n"
            "g = dgl.add_self_loop(g)\n"
            "g.add_edges(g.nodes(), g.nodes())\n",
            line=3,
        ),
        # a method caches the looped graphs on the instance and hands out a copy of the list;
        # another method of the model adds loops to them again
        Invalid(
            "import dgl\nfrom torch import nn\n"
            "class Net(nn.Module):\n"
            "    def graphs(self, adjs):\n"
            "        if self._gs is None:\n"
            "            gs = []\n"
            "            for adj in adjs:\n"
            "                g = dgl.add_self_loop(dgl.graph(adj))\n"
            "                gs.append(g)\n"
            "            self._gs = gs\n"
            "        return self._gs.copy()\n"
            "    def forward(self, adjs, x):\n"
            "        gs = self.graphs(adjs)\n"
            "        for i in range(len(gs)):\n"
            "            gs[i] = dgl.add_self_loop(gs[i])\n"
            "        return self.conv(gs, x)\n",
            line=15, message_contains="example.py:8",
        ),
        # each function reads what the one defined after it returns: the looped graph reaches
        # `prepare` only after three rounds, each re-running just the functions whose inputs changed
        Invalid(
            "import dgl\n"
            "def train(model, dataset):\n"
            "    g = load(dataset)\n"
            "    return model(prepare(g))\n"
            "def prepare(g):\n"
            "    return dgl.add_self_loop(g)\n"
            "def load(dataset):\n"
            "    return build(dataset)\n"
            "def build(dataset):\n"
            "    return dgl.add_self_loop(dataset[0])\n",
            line=6, message_contains="example.py:10",
        ),
        # Lightning runs the DataModule's loader and the module's batch hook: the graphs the
        # DataModule built with their loops get a second set on every batch
        Invalid({
            "data.py":
                "import dgl\nimport pytorch_lightning as pl\n"
                "from torch.utils.data import DataLoader\n"
                "def make_graph(e):\n"
                "    return dgl.add_self_loop(dgl.graph(e))\n"
                "class Graphs(pl.LightningDataModule):\n"
                "    def setup(self, stage=None):\n"
                "        self.train_set = [make_graph(e) for e in self.edges]\n"
                "    def train_dataloader(self):\n"
                "        return DataLoader(self.train_set, batch_size=8, collate_fn=dgl.batch)\n",
            "lit.py":
                "import dgl\nimport pytorch_lightning as pl\n"
                "class Lit(pl.LightningModule):\n"
                "    def on_after_batch_transfer(self, batch, dataloader_idx):\n"
                "        return dgl.add_self_loop(batch)\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        return self.model(batch, batch.ndata['x']).sum()\n",
            "train.py":
                "import pytorch_lightning as pl\nfrom data import Graphs\nfrom lit import Lit\n"
                "trainer = pl.Trainer(max_epochs=1)\n"
                "trainer.fit(Lit(), datamodule=Graphs())\n",
        }, path="lit.py", line=5, message_contains="data.py:5"),
        # a loader handed to `Trainer.fit` feeds the training step the same way
        Invalid({
            "lit.py":
                "import dgl\nimport pytorch_lightning as pl\n"
                "class Lit(pl.LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        g = dgl.add_self_loop(batch)\n"
                "        return self.model(g, g.ndata['x']).sum()\n",
            "train.py":
                "import dgl\nimport pytorch_lightning as pl\n"
                "from torch.utils.data import DataLoader\nfrom lit import Lit\n"
                "graphs = [dgl.add_self_loop(dgl.graph(e)) for e in edges]\n"
                "loader = DataLoader(graphs, batch_size=8, collate_fn=dgl.batch)\n"
                "trainer = pl.Trainer(max_epochs=1)\n"
                "trainer.fit(Lit(), loader)\n",
        }, path="lit.py", line=5, message_contains="train.py:5"),
        # a collate a factory returns, handed the samples as a comprehension, adds loops to each
        # graph of the batch in a comprehension of its own
        Invalid(
            "import dgl\n"
            "def build(edges):\n"
            "    return [(dgl.add_self_loop(dgl.graph(e)), 0) for e in edges]\n"
            "def make_collate():\n"
            "    def collate(items):\n"
            "        graphs, labels = zip(*items)\n"
            "        return dgl.batch([dgl.add_self_loop(g) for g in graphs])\n"
            "    return collate\n"
            "def batches(dataset, collate):\n"
            "    for s in range(0, len(dataset), 8):\n"
            "        yield collate([dataset[i] for i in range(s, s + 8)])\n"
            "train = build(edges)\n"
            "for g in batches(train, make_collate()):\n"
            "    model(g, g.ndata['x'])\n",
            line=7, message_contains="example.py:3",
        ),
        # a module that makes its own loader
        Invalid(
            "import dgl\nimport pytorch_lightning as pl\n"
            "from torch.utils.data import DataLoader\n"
            "class Lit(pl.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        graphs = [dgl.add_self_loop(dgl.graph(e)) for e in self.edges]\n"
            "        return DataLoader(graphs, batch_size=8, collate_fn=dgl.batch)\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        g = dgl.add_self_loop(batch)\n"
            "        return self.model(g, g.ndata['x']).sum()\n"
            "trainer = pl.Trainer(max_epochs=1)\n"
            "trainer.fit(Lit())\n",
            line=9, message_contains="example.py:6",
        ),
        # the loops added again to what a helper returns, written as the argument itself
        Invalid(
            "import dgl\n"
            "def make_graph(n):\n"
            "    g = dgl.rand_graph(n, 3 * n)\n"
            "    return dgl.add_self_loop(dgl.remove_self_loop(g))\n"
            "def build(ns):\n"
            "    return [dgl.add_self_loop(make_graph(n)) for n in ns]\n",
            line=6, message_contains="already has them",
        ),
        # the looped graph kept in a dataclass's field by the factory that builds the dataset;
        # the trainer, handed the dataset, adds the loops again
        Invalid({
            "data.py": (
                "from dataclasses import dataclass\n"
                "import dgl\n\n"
                "@dataclass\n"
                "class GraphData:\n"
                "    graph: dgl.DGLGraph\n"
                "    n: int\n\n"
                "def build_dataset(src, dst, n):\n"
                "    graph = dgl.add_self_loop(dgl.graph((src, dst), num_nodes=n))\n"
                "    return GraphData(graph=graph, n=n)\n"
            ),
            "train.py": (
                "import dgl\n"
                "from data import build_dataset\n\n"
                "class Trainer:\n"
                "    def __init__(self, dataset, model):\n"
                "        self.g = dgl.add_self_loop(dataset.graph)\n"
                "        self.model = model\n\n"
                "def main(src, dst, n, model):\n"
                "    dataset = build_dataset(src, dst, n)\n"
                "    return Trainer(dataset, model)\n"
            ),
        }, path="train.py", line=6, message_contains="data.py:10"),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        sites = sum(1 for _, e in project.events("call")
                    if e.method in ("add_self_loop", "add_edges", "AddSelfLoop"))
        if sites == 0:
            return
        if sites > 1:
            # the data path runs through files that never mention self loops (train loop)
            project.load_mentioning("")
        flow = Flow(project)
        flow.run()
        for span, path, earlier in flow.findings.values():
            # evidence from one program only: an add in a script that never runs this file is
            # another program's data path
            earlier = [o for o in earlier if project.share_program(path, o.path)]
            if not earlier:
                continue
            # name the add farthest up the data path: another file first, then the earliest line
            named = sorted(earlier, key=lambda o: (o.path == path, o.path, o.line))
            also = f" (and {len(named) - 1} more)" if len(named) > 1 else ""
            yield cls.make_finding(
                path, span,
                f"self loops added to a graph that already has them: they were added at "
                f"{named[0]}{also} on the same data path, with no `remove_self_loop` in between; "
                "every node now has two self loops",
                fix="add self loops in one place only, or `dgl.remove_self_loop(g)` first",
            )

    @classmethod
    def confirm(cls, finding: Finding, evidence) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the add_self_loop line never ran"])
        entering = [g for g in evidence.graphs if g.where == "forward"]
        doubled = [g for g in entering if g.duplicate_self_loops]
        if doubled:
            g = doubled[0]
            return Verdict(Status.CONFIRMED, [
                f"a graph entering {g.module or 'the model'} at step {g.step} had "
                f"{g.multi_loop_nodes} of {g.num_nodes} nodes with more than one self loop"])
        here = [c for c in evidence.calls_at(finding.path, finding.line, "add_self_loop",
                                             finding.end_line)]
        after = [a.get("after") or {} for c in here for a in c.args]
        if any(isinstance(a, dict) and a.get("multi_loop_nodes") for a in after):
            return Verdict(Status.CONFIRMED, ["the add produced nodes with two self loops"])
        if entering:
            return Verdict(Status.REFUTED, [
                "no graph entering the model had a node with more than one self loop"])
        return None
