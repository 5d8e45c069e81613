"""GM101: a stop-gradient on the loss path (``.detach()`` on a module output or the prediction),
and its benign twin, the detached target."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, assigned_names, forward_sites,
                                                     gradients_after_detach, loss_calls)


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    """Only where another module's gradient still reaches the loss, and the detached module's
    does not: detaching the loss's only source (``loss = model(g, x)``) makes ``backward``
    raise instead of training silently, and detaching one view of a two-view model whose other
    view still reaches the loss (``z1, z2 = model(g1, x1, g2, x2)``, then ``z1.detach()``; or a
    second call of the same module) is the stop-gradient BYOL and SimSiam train with: every
    parameter still gets its gradient, GM101 documents it as valid."""
    for tl, call, stmt in forward_sites(src):
        module = src.code(call.func)
        what = f"`.detach()` on `{module}(...)` on the loss path"
        first = _first_unpacked(stmt, call)
        whole = isinstance(stmt, cst.SimpleStatementLine) and assign_value(stmt) is call
        detached = {first} if first else assigned_names(stmt) if whole else set()
        reaching = gradients_after_detach(src, tl, call, detached)
        if not reaching or any(_overlap(module, other) for other in reaching):
            continue
        if first is None:
            yield Edit({call: _detached(call)}, what)
        else:  # a tuple has no .detach(): detach the first output after unpacking
            yield Edit(insert_after(stmt, f"{first} = {first}.detach()"), what)


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
    or a ``no_grad`` block."""
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
    Operator("gm101.detach-module-output", "GM101", detach_module_output, (".backward(",)),
    Operator("gm101.detach-prediction", "GM101", detach_prediction, ("loss",)),
    Operator("gm101.detach-target", "GM101", detach_target, ("loss",), benign=True),
]
