"""GM102: gradient mode off around a training forward or a statement of a module's forward."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, wrap_with
from benchmarks.ecosystem.mutators.structure import (calls, forward_methods, forward_sites, in_body,
                                                     statements, submodule_call, torch_bound)


def no_grad_forward(src: Source) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for _, call, stmt in forward_sites(src):
        yield Edit(wrap_with(stmt, "torch.no_grad()"),
                   f"`torch.no_grad()` around the forward `{src.code(call.func)}(...)`")


def no_grad_in_forward(src: Source) -> Iterator[Edit]:
    """Each statement of a module's forward that calls a submodule, under ``torch.no_grad()``."""
    if not torch_bound(src):
        return
    for method, methods in forward_methods(src):
        for stmt in statements(method.body):
            called = [c for c in calls(stmt) if submodule_call(c, methods)]
            if called and isinstance(stmt, cst.SimpleStatementLine) and in_body(src, stmt):
                yield Edit(wrap_with(stmt, "torch.no_grad()"),
                           f"`torch.no_grad()` around `{src.code(called[0].func)}(...)` in "
                           f"`{method.name.value}`")


OPERATORS = [
    Operator("gm102.no-grad-forward", "GM102", no_grad_forward, (".backward(", "training_step")),
    Operator("gm102.no-grad-in-forward", "GM102", no_grad_in_forward, ("def forward",)),
]
