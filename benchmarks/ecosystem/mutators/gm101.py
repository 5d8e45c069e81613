"""GM101: a stop-gradient on the loss path (``.detach()`` on a module output or the prediction),
and its benign twin, the detached target."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.program import run_by_a_program, trained_by_its_loss
from benchmarks.ecosystem.mutators.structure import (MODULE_METHODS, TENSOR_METHODS, assign_value,
                                                     assigned_names, calls, dependency_slice,
                                                     forward_sites, gradients_after_detach, in_body,
                                                     loss_calls, loss_modules, scope_of, statements,
                                                     used_names, walk)


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    """Only where another module's gradient still reaches the loss, and the detached module's
    does not: detaching the loss's only source (``loss = model(g, x)``) makes ``backward``
    raise instead of training silently, and detaching one view of a two-view model whose other
    view still reaches the loss (``z1, z2 = model(g1, x1, g2, x2)``, then ``z1.detach()``; or a
    second call of the same module) is the stop-gradient BYOL and SimSiam train with: every
    parameter still gets its gradient, GM101 documents it as valid. Nor where the optimizers
    stepped after the loss's backward hold other modules only (a GAN's discriminator step,
    the generator's sample detached or not): the program model is asked, as the rule does."""
    for tl, call, stmt in forward_sites(src):
        module = src.code(call.func)
        what = f"`.detach()` on `{module}(...)` on the loss path"
        first = _first_unpacked(stmt, call)
        whole = isinstance(stmt, cst.SimpleStatementLine) and assign_value(stmt) is call
        detached = {first} if first else assigned_names(stmt) if whole else set()
        reaching = gradients_after_detach(src, tl, call, detached)
        if not reaching or any(_overlap(module, other) for other in reaching):
            continue
        if src.program is not None and not src.program.ask(
                lambda project: trained_by_its_loss(project, src.path, src.line(call), module)):
            continue
        if first is None:
            yield Edit({call: _detached(call)}, what)
        else:  # a tuple has no .detach(): detach the first output after unpacking
            yield Edit(insert_after(stmt, f"{first} = {first}.detach()"), what)


def detach_submodule_output(src: Source) -> Iterator[Edit]:
    """Inside what a module's forward runs (``forward`` and the methods it calls on ``self``):
    ``h = self.encoder(...)`` detached where another submodule with parameters reads ``h`` on
    the way to what the method returns (``self.encoder_to_decoder(h)``), and the encoder runs
    nowhere else there: the encoder gets no gradient, the rest still trains (GraphMAE's bug).
    Only in a file some program of the repository imports: a class nothing runs has no bug."""
    if src.program is None or not src.program.ask(lambda project: run_by_a_program(project, src.path)):
        return
    criteria = loss_modules(src)
    for cls in (n for n in walk(src.module, into_scopes=True) if isinstance(n, cst.ClassDef)):
        methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
        bare = _parameterless(src, cls)
        for method in _run_by_forward(methods):
            path = _return_path(src, method)
            runs = [c for c in calls(method) if _submodule(c, methods)]
            for stmt in path:
                value, names = assign_value(stmt), assigned_names(stmt)
                if not (isinstance(value, cst.Call) and _submodule(value, methods) and len(names) == 1
                        and isinstance(stmt.body[0], cst.Assign) and in_body(src, stmt)) \
                        or src.code(value.func) in bare or _evaluated(src, value):
                    continue  # a layer without parameters, or a target computed without gradients
                module, (name,) = src.code(value.func), names
                if sum(src.code(c.func) == module for c in runs) > 1:
                    continue  # the module runs again: its gradient has another way
                readers = [c for later in path if src.line(later) > src.line(stmt)
                           for c in calls(later) if _submodule(c, methods) and name in used_names(c)
                           and not _overlap(src.code(c.func), module)
                           and src.code(c.func) not in criteria | bare and not _evaluated(src, c)]
                if readers:
                    yield Edit(insert_after(stmt, f"{name} = {name}.detach()"),
                               f"`.detach()` on `{module}(...)` before `{src.code(readers[0].func)}`")


# torch.nn / dgl.nn layers without parameters: detaching their output cuts nothing of theirs,
# and reading a detached value through them trains nothing
PARAMETERLESS = frozenset(
    "ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Hardtanh Softplus Softsign "
    "Softmax LogSoftmax Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout "
    "Identity Flatten Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d "
    "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveAvgPool1d AdaptiveAvgPool2d Upsample "
    "SumPooling AvgPooling MaxPooling SortPooling".split())


def _parameterless(src: Source, cls: cst.ClassDef) -> set[str]:
    """The ``self.x`` of ``cls`` that every assignment builds as a layer without parameters."""
    built: dict[str, list[bool]] = {}
    for stmt in (n for n in walk(cls, into_scopes=True) if isinstance(n, cst.SimpleStatementLine)):
        value = assign_value(stmt)
        if not isinstance(stmt.body[0], cst.Assign):
            continue
        for target in stmt.body[0].targets:
            text = src.code(target.target)
            if text.startswith("self."):
                name = src.qualify(value.func) if isinstance(value, cst.Call) else ""
                bare = name.startswith(("torch.", "dgl.")) and name.rsplit(".", 1)[-1] in PARAMETERLESS
                built.setdefault(text, []).append(bare)
    return {attr for attr, kinds in built.items() if all(kinds)}


def _submodule(call: cst.Call, methods: dict[str, cst.FunctionDef]) -> bool:
    """``self.x(...)`` that runs a submodule: not a method of the class, a tensor method or
    the module API."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
        and func.value.value == "self" and func.attr.value not in methods \
        and func.attr.value not in TENSOR_METHODS | MODULE_METHODS


def _run_by_forward(methods: dict[str, cst.FunctionDef]) -> Iterator[cst.FunctionDef]:
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


def _return_path(src: Source, fn: cst.FunctionDef) -> list[cst.CSTNode]:
    """The assignments of ``fn`` what it returns depends on, in source order."""
    body = list(statements(fn.body))
    needed = set().union(*(used_names(r.value) for s in body for r in walk(s)
                           if isinstance(r, cst.Return) and r.value is not None))
    return dependency_slice(body, needed)[::-1]


def _overlap(one: str, other: str) -> bool:
    """The two module expressions may share parameters: the same module, or one holds the
    other (``model`` runs ``model.encoder``)."""
    return one == other or one.startswith(other + ".") or other.startswith(one + ".")


def _first_unpacked(stmt: cst.CSTNode, call: cst.Call) -> Optional[str]:
    """``a`` when ``stmt`` is ``a, b = call``."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if isinstance(small, cst.Assign) and small.value is call and isinstance(small.targets[0].target, cst.Tuple):
        first = small.targets[0].target.elements[0].value
        return first.value if isinstance(first, cst.Name) else None
    return None


# Lightning runs these hooks without gradients: a loss computed there is never backpropagated
_EVALUATION_HOOKS = {"validation_step", "test_step", "predict_step"}


_TO_NUMBER = {"item", "tolist", "numpy", "data"}


def _evaluated(src: Source, call: cst.Call) -> bool:
    """``call``'s value is never backpropagated: turned into a number in its own expression (a
    metric, ``F.l1_loss(y, p).item()``), or run without gradients, in a Lightning evaluation hook
    or a ``no_grad`` block, or only reported."""
    if _only_reported(src, call):
        return True
    for up in src.ancestors(call):
        if isinstance(up, cst.Attribute) and up.attr.value in _TO_NUMBER:
            return True
        if isinstance(up, cst.FunctionDef):
            return up.name.value in _EVALUATION_HOOKS or any(
                "no_grad" in src.code(d.decorator) or "inference_mode" in src.code(d.decorator)
                for d in up.decorators)
        if isinstance(up, cst.With) and any("no_grad" in src.code(i.item) or "inference_mode"
                                            in src.code(i.item) for i in up.items):
            return True
    return False


def _only_reported(src: Source, call: cst.Call) -> bool:
    """``test_loss = F.cross_entropy(...)`` whose name is afterwards only turned into a number
    (``test_loss.item()``): a reported loss, never backpropagated."""
    stmt = src.statement(call)
    names = assigned_names(stmt)
    if assign_value(stmt) is not call or len(names) != 1:
        return False
    name = next(iter(names))
    uses = [n for n in walk(scope_of(src, call)) if isinstance(n, cst.Name) and n.value == name
            and src.line(n) > src.line(stmt)]
    return bool(uses) and all(isinstance(p := src.parent(n), cst.Attribute) and p.value is n
                              and p.attr.value in _TO_NUMBER for n in uses)


def _detach_loss_argument(src: Source, index: int, what: str) -> Iterator[Edit]:
    for call in loss_calls(src):
        if _evaluated(src, call):
            continue
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) >= 2:
            arg = positional[index]
            yield Edit({arg.value: _detached(arg.value)},
                       f"`.detach()` on the {what} of `{src.code(call.func)}`")


def detach_prediction(src: Source) -> Iterator[Edit]:
    return _detach_loss_argument(src, 0, "prediction")


def detach_target(src: Source) -> Iterator[Edit]:
    return _detach_loss_argument(src, 1, "target")


OPERATORS = [
    Operator("gm101.detach-module-output", "GM101", detach_module_output, (".backward(",),
             reads=("GM101",)),
    Operator("gm101.detach-submodule-output", "GM101", detach_submodule_output, ("def forward",),
             reads=("GM101",)),
    Operator("gm101.detach-prediction", "GM101", detach_prediction, ("loss",)),
    Operator("gm101.detach-target", "GM101", detach_target, ("loss",), benign=True),
]
