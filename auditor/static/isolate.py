"""Per-file work in processes that may die: a native crash (libcst's parser overflowing its
stack) costs the file that caused it, never the run."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterator, Optional, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def _context() -> multiprocessing.context.BaseContext:
    # fork is much cheaper to start; the static path holds no threads or GPU state to worry about
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _child(fn: Callable[[J], R], job: J, conn) -> None:
    conn.send(fn(job))
    conn.close()


ISOLATED_SECONDS = 60.0  # libcst is superlinear on some shapes: a risky file may also hang


def run_isolated(fn: Callable[[J], R], job: J, timeout: float = ISOLATED_SECONDS) -> Optional[R]:
    """``fn(job)`` in a child process; None when the child died without an answer or had none
    within ``timeout`` seconds (it is then killed)."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(fn, job, send), daemon=True)
    child.start()
    send.close()  # the child's end: its death now shows as EOF here
    try:
        return receive.recv() if receive.poll(timeout) else None
    except (EOFError, OSError):
        return None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()


def map_surviving(fn: Callable[[J], R], jobs: Sequence[J], workers: int) -> Iterator[tuple[J, Optional[R]]]:
    """``(job, fn(job))`` for every job, over a pool of ``workers`` processes, in completion
    order. When a worker dies the pool breaks: every job it had not answered is redone alone in
    a process of its own, and the one that dies again answers None."""
    chunk = max(1, len(jobs) // (workers * 8))
    batches = [list(jobs[i:i + chunk]) for i in range(0, len(jobs), chunk)]
    lost: list[J] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        futures = {pool.submit(_batch, fn, b): b for b in batches}
        for future in as_completed(futures):
            try:
                results = future.result()
            except BrokenProcessPool:
                lost.extend(futures[future])
                continue
            yield from zip(futures[future], results)
    for job in lost:
        yield job, run_isolated(fn, job)


def _batch(fn: Callable[[J], R], batch: list[J]) -> list[R]:
    return [fn(job) for job in batch]
