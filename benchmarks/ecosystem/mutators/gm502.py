"""GM502: node features normalised with the statistics of each batch."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before
from benchmarks.ecosystem.mutators.structure import (assign_value, assigned_names, feature_arg,
                                                     forward_sites, is_module_call, scope_of,
                                                     statements, used_names)


def _epochs_only(src: Source, loop: cst.CSTNode) -> bool:
    """A loop over epochs (``range(...)``, ``tqdm(range(...))``, or a name assigned one in the
    same scope): full-batch training, where the batch is the whole dataset and its statistics
    are the dataset's, so standardising it there is no per-batch bug."""
    if not isinstance(loop, cst.For):
        return False
    text = src.code(loop.iter)
    if isinstance(loop.iter, cst.Name):
        values = [src.code(v) for stmt in statements(scope_of(src, loop))
                  if loop.iter.value in assigned_names(stmt) and (v := assign_value(stmt)) is not None]
        return bool(values) and all(_ranges(v) for v in values)
    return _ranges(text)


def _ranges(text: str) -> bool:
    return text.startswith(("range(", "tqdm(range(", "trange("))


def _model_output(src: Source, loop: cst.CSTNode, feature: cst.BaseExpression) -> bool:
    """``feature`` reads what a module computed in the loop (``h = model(g, x)`` before
    ``predictor(h[u], h[v])``): embeddings, not the data's features GM502 is about."""
    names = used_names(feature)
    return any(assigned_names(stmt) & names and isinstance(value := assign_value(stmt), cst.Call)
               and is_module_call(src, value) for stmt in statements(loop))


def per_batch_stats(src: Source) -> Iterator[Edit]:
    for tl, call, stmt in forward_sites(src):
        if _epochs_only(src, tl.loop):
            continue
        feature = feature_arg(call)
        if feature is not None and not _model_output(src, tl.loop, feature):
            x = src.code(feature)
            yield Edit(insert_before(stmt, f"{x} = ({x} - {x}.mean(0, keepdim=True)) / "
                                           f"({x}.std(0, keepdim=True) + 1e-6)"),
                       f"`{x}` standardised with its batch's statistics")


OPERATORS = [Operator("gm502.per-batch-stats", "GM502", per_batch_stats, (".backward(",))]
