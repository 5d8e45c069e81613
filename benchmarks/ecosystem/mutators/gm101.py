"""GM101: a stop-gradient on the loss path (``.detach()`` on a module output or the prediction),
and its benign twin, the detached target."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import (assign_value, forward_sites, loss_calls, loss_path,
                                                     used_names)


def _detached(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(expr, cst.Name("detach")))


def detach_module_output(src: Source) -> Iterator[Edit]:
    for tl, call, stmt in forward_sites(src):
        what = f"`.detach()` on `{src.code(call.func)}(...)` on the loss path"
        unpacked = _unpacked(stmt, call)
        if unpacked is None:
            yield Edit({call: _detached(call)}, what)
            continue
        # a tuple has no .detach(): detach, after unpacking, every output the loss reads (one
        # output of several, the others still live, is a stop-gradient branch, not a cut)
        needed = used_names(tl.loss) | {n for s in loss_path(src, tl) for n in used_names(assign_value(s))}
        cut = [n for n in unpacked if n in needed]
        if cut:
            yield Edit(insert_after(stmt, f"{', '.join(cut)} = {', '.join(f'{n}.detach()' for n in cut)}"),
                       what)


def _unpacked(stmt: cst.CSTNode, call: cst.Call) -> Optional[list[str]]:
    """``[a, b]`` when ``stmt`` is ``a, b = call``."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if isinstance(small, cst.Assign) and small.value is call and isinstance(small.targets[0].target, cst.Tuple):
        return [e.value.value for e in small.targets[0].target.elements if isinstance(e.value, cst.Name)]
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
