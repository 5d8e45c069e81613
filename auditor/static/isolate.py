"""Per-file work in processes that may die or hang: a native crash (libcst's parser overflowing
its stack) or an analysis that runs past the time limit costs the file that caused it, never the
run, and leaves no process behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Callable, Iterator, Optional, Sequence, TypeVar, Union

from auditor.processes import PR_SET_PDEATHSIG, STOP_SIGNALS, prctl
from auditor.static.deep import with_deep_stack

J = TypeVar("J")
R = TypeVar("R")

# libcst is superlinear on some shapes: past this a file's analysis is given up (the largest
# file gm-audit reads, 4 MiB of real code, takes a fraction of it)
FILE_SECONDS = 60.0

# the parent's ends of the workers' pipes (a forked worker closes its copies)
_PARENT_ENDS: set[Connection] = set()
# in a worker or a process beside (daemonic: it may have no children of its own), whose death
# its parent reports already
_IN_WORKER = False


@dataclass(frozen=True)
class Lost:
    """A job without an answer: its process died (``crashed``), or ran past the time limit and
    was killed (``timeout``), ``seconds`` after the job was given."""

    reason: str  # crashed | timeout
    seconds: float


def _context() -> multiprocessing.context.BaseContext:
    # fork is much cheaper to start; the static path holds no threads or GPU state to worry about
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _serve(fn: Callable[[J], R], conn: Connection, parent: int) -> None:
    """A worker: one job at a time from ``conn``, each answered, until None or its parent's end
    closes. Its parent's death ends it, however the parent died: a parent stopped by a signal
    raises through the pool's ``finally`` (:func:`auditor.processes.interrupt_on_stop_signals`),
    and one killed outright (SIGKILL) kills it (Linux's parent-death signal) or closes its pipe."""
    global _IN_WORKER
    _IN_WORKER = True
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above: no signal will come
        os._exit(0)
    for end in list(_PARENT_ENDS):  # inherited by fork: held open here, no EOF would ever come
        end.close()
    _PARENT_ENDS.clear()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for sig in STOP_SIGNALS:
        if sig != signal.SIGINT:  # not the parent's handlers, inherited by fork: just end
            signal.signal(sig, signal.SIG_DFL)
    with_deep_stack(_answer_jobs, fn, conn)


def _answer_jobs(fn: Callable[[J], R], conn: Connection) -> None:
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(fn(job))


class _Worker:
    def __init__(self, ctx: multiprocessing.context.BaseContext, fn: Callable) -> None:
        self.conn, theirs = ctx.Pipe()
        _PARENT_ENDS.add(self.conn)
        self.process = ctx.Process(target=_serve, args=(fn, theirs, os.getpid()), daemon=True)
        self.process.start()
        theirs.close()  # its death now shows here as EOF
        self.job: object = None
        self.since = 0.0

    def give(self, job: object) -> None:
        self.job, self.since = job, time.monotonic()
        try:
            self.conn.send(job)
        except OSError:
            pass  # it died between jobs: the next wait sees its end closed, and this job lost

    def close(self, kill: bool) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                self.process.kill()
        self.process.join()
        _PARENT_ENDS.discard(self.conn)
        self.conn.close()


def map_bounded(fn: Callable[[J], R], jobs: Sequence[J], workers: int,
                timeout: Optional[float] = None) -> Iterator[tuple[J, Union[R, Lost]]]:
    """``(job, fn(job))`` for every job, over ``workers`` processes, in completion order. Each
    worker holds one job at a time, so a worker that dies, or runs a job past ``timeout``
    seconds (:data:`FILE_SECONDS`; it is then killed), answers :class:`Lost` for that job alone
    and is replaced."""
    timeout = FILE_SECONDS if timeout is None else timeout
    ctx = _context()
    todo = deque(jobs)
    busy: list[_Worker] = []
    try:
        for _ in range(min(workers, len(todo))):
            busy.append(_Worker(ctx, fn))
            busy[-1].give(todo.popleft())
        while busy:
            first_deadline = min(w.since for w in busy) + timeout
            ready = wait([w.conn for w in busy], max(0.0, first_deadline - time.monotonic()))
            for w in list(busy):
                answer: Union[R, Lost]
                if w.conn in ready:
                    try:
                        answer = w.conn.recv()
                    except (EOFError, OSError):
                        answer = Lost("crashed", time.monotonic() - w.since)
                elif time.monotonic() - w.since >= timeout:
                    answer = Lost("timeout", time.monotonic() - w.since)
                else:
                    continue
                job = w.job
                if isinstance(answer, Lost):  # a fresh process for the next job
                    busy.remove(w)
                    w.close(kill=True)
                    if todo:
                        busy.append(_Worker(ctx, fn))
                        busy[-1].give(todo.popleft())
                elif todo:
                    w.give(todo.popleft())
                else:
                    busy.remove(w)
                    w.close(kill=False)
                yield job, answer
    finally:  # an error or Ctrl-C in the caller: no worker outlives the run
        for w in busy:
            w.close(kill=True)


class Beside:
    """``fn(job)`` in a forked process while the caller goes on; :meth:`result` waits for the
    answer, :meth:`cancel` (always call one of the two) ends the process. Fork only: ``fn`` and
    what it closes over are the parent's memory as of now, not pickled."""

    def __init__(self, fn: Callable[[J], R], job: J) -> None:
        self._worker = _Worker(multiprocessing.get_context("fork"), fn)
        self._worker.give(job)
        self._open = True

    def result(self) -> Union[R, Lost]:
        try:
            answer = self._worker.conn.recv()
        except (EOFError, OSError):
            answer = Lost("crashed", time.monotonic() - self._worker.since)
        self._close(kill=isinstance(answer, Lost))
        return answer

    def cancel(self) -> None:
        self._close(kill=True)

    def _close(self, kill: bool) -> None:
        if self._open:
            self._open = False
            self._worker.close(kill)


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def run_isolated(fn: Callable[[J], R], job: J, timeout: Optional[float] = None) -> Union[R, Lost]:
    """``fn(job)`` in a child process of its own (:func:`map_bounded` with one job); in a worker
    or a process beside, in that process: a crash costs what it was doing, as its parent says
    (a file too deep to summarise ahead, loaded on demand by a rule run beside)."""
    if _IN_WORKER:
        return fn(job)
    [(_, answer)] = map_bounded(fn, [job], 1, timeout)
    return answer
