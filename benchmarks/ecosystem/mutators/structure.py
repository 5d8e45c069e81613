"""Structural finders shared by the operators: training loops (a loop whose body calls
``.backward()``), the optimizer and its step, module calls whose output flows into the loss,
loss-function calls, optimizer constructions. Everything is recognised from the code's shape
and the torch/dgl API it calls, never from a variable's name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Source

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# attribute calls that are tensor/graph methods, not modules: their output is not "a module's"
TENSOR_METHODS = frozenset(
    "to cuda cpu float double half bfloat16 long int view reshape mean sum squeeze unsqueeze "
    "permute transpose detach clone item numpy size contiguous flatten repeat expand norm pow "
    "exp log abs max min argmax softmax sigmoid tanh relu type append extend get items keys "
    "values format join split cat stack ndata edata edges nodes number_of_nodes num_nodes "
    "in_degrees out_degrees local_var update_all apply_edges backward step zero_grad".split())


_FIELDS: dict[type, tuple[str, ...]] = {}
_PUNCTUATION = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
                "header", "footer", "newline", "equal", "dot", "colon", "star"}


def _child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's syntax children by its dataclass fields: libcst's ``children`` runs a whole
    visit per call (and yields every whitespace and punctuation node), which dominated the time."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(
            f.name for f in dataclasses.fields(node)
            if f.name not in _PUNCTUATION and not f.name.startswith("whitespace"))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out.extend(v for v in value if isinstance(v, cst.CSTNode))
    return out


def walk(node: cst.CSTNode, into_scopes: bool = False) -> Iterator[cst.CSTNode]:
    """``node``'s subtree, parents before children, not entering nested defs unless asked (a
    whole module is always entered: its functions are where the code is)."""
    into_scopes = into_scopes or isinstance(node, cst.Module)
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, _SCOPES) and not into_scopes:
            continue
        stack.extend(reversed(_child_nodes(current)))


def calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    return (n for n in walk(node) if isinstance(n, cst.Call))


def method_calls(node: cst.CSTNode, method: str) -> Iterator[cst.Call]:
    for call in calls(node):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == method:
            yield call


def receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def scope_of(src: Source, node: cst.CSTNode) -> cst.CSTNode:
    return next((a for a in src.ancestors(node) if isinstance(a, cst.FunctionDef)), src.module)


@dataclass
class TrainLoop:
    loop: cst.CSTNode  # the innermost For/While holding the backward
    scope: cst.CSTNode
    backward: cst.Call
    steps: list[cst.Call]  # optimizer ``.step()`` calls after the backward, in the loop
    zero_grads: list[cst.Call]

    @property
    def loss(self) -> Optional[cst.BaseExpression]:
        return receiver(self.backward)


@lru_cache(maxsize=8)  # every operator asks this of the same file in turn
def train_loops(src: Source) -> list[TrainLoop]:
    found = []
    for backward in method_calls(src.module, "backward"):
        loop = next((a for a in src.ancestors(backward) if isinstance(a, (cst.For, cst.While))), None)
        if loop is None or scope_of(src, loop) is not scope_of(src, backward):
            continue
        after = src.line(backward)
        steps = [c for c in method_calls(loop.body, "step") if not c.args and src.line(c) >= after]
        found.append(TrainLoop(loop, scope_of(src, loop), backward, steps,
                               list(method_calls(loop.body, "zero_grad"))))
    return found


def statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Statement lines under ``node`` in source order, not entering nested defs."""
    return (n for n in walk(node)
            if isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and n is not node)


def assigned_names(stmt: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign)) else [])
            for target in targets:
                names.update(n.value for n in walk(target) if isinstance(n, cst.Name))
    return names


def used_names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in walk(node) if isinstance(n, cst.Name)}


def assign_value(stmt: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(
            stmt.body[0], (cst.Assign, cst.AugAssign)):
        return stmt.body[0].value
    return None


def loss_path(src: Source, tl: TrainLoop) -> list[cst.CSTNode]:
    """Statements of the loop that the backward'd loss depends on, newest first, following
    names backwards from the loss through the assignments before the backward."""
    if tl.loss is None:
        return []
    before = [s for s in statements(tl.loop.body) if src.line(s) < src.line(tl.backward)]
    return dependency_slice(before, used_names(tl.loss))


def dependency_slice(stmts: list[cst.CSTNode], needed: set[str]) -> list[cst.CSTNode]:
    """The assignments among ``stmts`` (in source order) that the names ``needed`` depend on,
    newest first, following names backwards through each assignment's value."""
    needed = set(needed)
    path = []
    for stmt in reversed(stmts):
        value = assign_value(stmt)
        if value is not None and assigned_names(stmt) & needed:
            path.append(stmt)
            needed |= used_names(value)
    return path


# methods only an ``nn.Module`` has: what they are called on is a model (or a part of one)
MODULE_METHODS = frozenset(
    "parameters named_parameters buffers named_buffers modules named_modules children "
    "named_children train eval requires_grad_".split())


@lru_cache(maxsize=8)  # every operator asks this of the same file in turn
def modules(src: Source) -> frozenset[str]:
    """The expressions (``model``, ``self.encoder``) the file treats as modules: receivers of
    a module-only method. One spelling is one object across the file's functions (a model is
    handed from ``main`` to the training function under the same name): an approximation."""
    return frozenset(src.code(r) for c in calls(src.module)
                     if isinstance(c.func, cst.Attribute) and c.func.attr.value in MODULE_METHODS
                     and assignable(r := c.func.value))


def is_module_call(src: Source, call: cst.Call) -> bool:
    """A forward of a model: the call of a module (``model(g, x)``) or of a submodule or
    method of one (``model.encoder(x)``), other than a tensor/graph method and the module API.
    A call on anything else (a graph, a feature dict, a sampler, a helper) is not one."""
    func = src.code(call.func)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in TENSOR_METHODS | MODULE_METHODS:
        return False
    return any(func == m or func.startswith(m + ".") for m in modules(src))


def module_calls_on_loss_path(src: Source, tl: TrainLoop) -> list[cst.Call]:
    out = []
    for stmt in loss_path(src, tl):
        value = assign_value(stmt)
        out.extend(c for c in calls(value) if is_module_call(src, c))
    return out


LOSS_FUNCTIONS = frozenset(
    "mse_loss l1_loss smooth_l1_loss cross_entropy nll_loss binary_cross_entropy "
    "binary_cross_entropy_with_logits kl_div cosine_embedding_loss huber_loss".split())


def is_loss_call(src: Source, call: cst.Call) -> bool:
    """A torch loss: a functional loss, or a ``torch.nn.*Loss`` built or called."""
    name = src.qualify(call.func)
    last = name.rsplit(".", 1)[-1]
    return name.startswith("torch.") and (last in LOSS_FUNCTIONS or last.endswith("Loss"))


def loss_calls(src: Source) -> Iterator[cst.Call]:
    return (c for c in calls(src.module) if is_loss_call(src, c) and src.qualify(c.func))


def optimizer_builds(src: Source) -> Iterator[tuple[cst.CSTNode, cst.Call, cst.BaseExpression]]:
    """``(statement, torch.optim.X(...) call, model)`` where the first argument is
    ``model.parameters()``."""
    for call in calls(src.module):
        name = src.qualify(call.func)
        if not name.startswith("torch.optim.") or ".lr_scheduler" in name or not call.args:
            continue
        first = call.args[0].value
        if isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and \
                first.func.attr.value == "parameters":
            yield src.statement(call), call, first.func.value


def first_loop_statement(src: Source, tl: TrainLoop) -> cst.CSTNode:
    """The first statement of the loop body (the place to insert at the loop's top)."""
    return next(iter(statements(tl.loop.body)))


def in_body(src: Source, stmt: cst.CSTNode) -> bool:
    """Whether ``stmt`` sits directly in an indented body or the module (so statements can go
    beside it); not true of the header-line bodies of ``if x: y``."""
    parent = src.parent(stmt)
    return isinstance(parent, (cst.IndentedBlock, cst.Module))


def torch_bound(src: Source) -> bool:
    """Whether ``torch`` is imported under its own name (so injected code may use it)."""
    return src.imports.get("torch") == "torch"


# the hook a Lightning module's training step runs in: its module calls are the training forward
STEP_HOOKS = frozenset({"training_step"})


def forward_sites(src: Source) -> Iterator[tuple[Optional[TrainLoop], cst.Call, cst.CSTNode]]:
    """``(loop, module call, its statement)`` for the model calls of a training step whose
    statement sits in an indented body (not the calls of loss modules): those on a training
    loop's loss path, and every module call of a ``training_step`` hook (loop None)."""
    criteria = loss_modules(src)
    for tl in train_loops(src):
        for call in module_calls_on_loss_path(src, tl):
            stmt = src.statement(call)
            if in_body(src, stmt) and src.code(call.func) not in criteria:
                yield tl, call, stmt
    for fn in walk(src.module, into_scopes=True):
        if isinstance(fn, cst.FunctionDef) and fn.name.value in STEP_HOOKS:
            for call in calls(fn.body):
                stmt = src.statement(call)
                if is_module_call(src, call) and in_body(src, stmt) and src.code(call.func) not in criteria:
                    yield None, call, stmt


def feature_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The features a module call gets: its last positional argument when that can be assigned
    to (DGL models take ``(graph, features)``); None for a call of fewer than two arguments."""
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    last = positional[-1] if len(positional) >= 2 else None
    return last if isinstance(last, (cst.Name, cst.Attribute, cst.Subscript)) else None


@lru_cache(maxsize=8)  # every operator asks this of the same file in turn
def loss_modules(src: Source) -> set[str]:
    """What loss modules are bound to: the targets of ``X = torch.nn.SomeLoss(...)``."""
    out = set()
    for stmt in statements(src.module):
        value = assign_value(stmt)
        if isinstance(value, cst.Call) and is_loss_call(src, value) and isinstance(stmt.body[0], cst.Assign):
            out.update(src.code(t.target) for t in stmt.body[0].targets)
    return out


def assignable(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Name, cst.Attribute))


def kwarg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def submodule_call(call: cst.Call, methods: dict[str, cst.FunctionDef]) -> bool:
    """``self.x(...)`` that runs a submodule: not a method of the class, a tensor method or
    the module API."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
        and func.value.value == "self" and func.attr.value not in methods \
        and func.attr.value not in TENSOR_METHODS | MODULE_METHODS


def run_by_forward(methods: dict[str, cst.FunctionDef]) -> Iterator[cst.FunctionDef]:
    """``forward`` and the methods it calls on ``self``, transitively: what a call of the
    module runs."""
    todo, seen = ["forward"], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        yield methods[name]
        todo += [c.func.attr.value for c in calls(methods[name]) if isinstance(c.func, cst.Attribute)
                 and isinstance(c.func.value, cst.Name) and c.func.value.value == "self"]


def forward_methods(src: Source) -> Iterator[tuple[cst.FunctionDef, dict[str, cst.FunctionDef]]]:
    """Each method a module's forward runs, with the methods of its class."""
    for cls in (n for n in walk(src.module, into_scopes=True) if isinstance(n, cst.ClassDef)):
        methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
        for method in run_by_forward(methods):
            yield method, methods
