"""Processes: how gm-audit starts itself again, the signals that stop a command, and Linux's
prctl(2) controls over what becomes of processes when their parent dies."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

# SIGTERM (``timeout``, a cancelled CI job), SIGHUP (a closed terminal or SSH session), Ctrl-C
STOP_SIGNALS: tuple[signal.Signals, ...] = (
    signal.SIGTERM, signal.SIGINT, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))


def gm_audit_command() -> list[str]:
    """The command line that starts this gm-audit, safe in any folder. ``python -m auditor``
    is not: Python puts the folder first on ``sys.path`` before any of gm-audit's code runs,
    so a checked tree's own ``auditor/`` or ``auditor.py`` would run in its place. ``-P``
    leaves it off."""
    return [sys.executable, "-P", "-m", "auditor"]


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` on Linux; elsewhere, or where libc cannot be loaded, nothing
    (False)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Interrupted(KeyboardInterrupt):
    """A stop signal other than Ctrl-C, raised where the command is, so that it unwinds as it
    does on Ctrl-C: its worker processes are stopped on the way (``finally``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interrupt_on_stop_signals() -> Iterator[None]:
    """In the main thread: SIGTERM and SIGHUP raise :class:`Interrupted`, as SIGINT raises
    KeyboardInterrupt. By default they would end gm-audit at once and leave its worker
    processes running (``gm-audit probe`` sets its own handlers around the program it runs)."""
    if threading.current_thread() is not threading.main_thread():  # only there can handlers be set
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, interrupt) for sig in STOP_SIGNALS if sig != signal.SIGINT}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
