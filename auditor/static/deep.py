"""Room for deep syntax trees: the analysis recurses once per level of a file's tree (libcst's
code generation for positions, the walk, the rules' expression walks), several frames a level,
so a flat-looking chain (a thousand ``elif``, ``a + b + ...``, ``x.a.b...``) passes Python's
default limit of 1,000 frames long before :data:`auditor.static.nesting.MAX_DEPTH` refuses it."""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

R = TypeVar("R")

# measured: chains just under MAX_DEPTH (elif, operators, attributes, subscripts, brackets,
# lambdas, conditional expressions) need 1,000 to 1,500 frames; the margin is for the rules'
# own walks. The stack is address space, not memory, until a deep file uses it (25 KiB a frame)
DEEP_RECURSION_LIMIT = 10_000
DEEP_STACK_BYTES = 256 * 1024 * 1024

_here = threading.local()


def with_deep_stack(fn: Callable[..., R], *args: object) -> R:
    """``fn(*args)`` in a thread of its own with a :data:`DEEP_STACK_BYTES` stack, under a
    recursion limit of :data:`DEEP_RECURSION_LIMIT` (its exception, if any, is raised here);
    called in such a thread, simply ``fn(*args)``. The limit is the process's, and the main
    thread's stack (8 MiB) would overflow far below it."""
    if getattr(_here, "deep", False):
        return fn(*args)
    answer: list[R] = []
    failure: list[BaseException] = []

    def run() -> None:
        _here.deep = True
        try:
            answer.append(fn(*args))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
    try:
        before = threading.stack_size(DEEP_STACK_BYTES)
        try:
            thread = threading.Thread(target=run, name="gm-audit-deep", daemon=True)
            thread.start()
        finally:
            threading.stack_size(before)
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    if failure:
        raise failure[0]
    return answer[0]
