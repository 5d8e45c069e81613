"""``gm-audit server``: a language server over stdio (pygls), publishing the static pass's
findings of each open document and offering its safe fixes and ``# noqa`` comments as code
actions, as ``ruff server`` does. The protocol is in :mod:`auditor.server.protocol`; what it
computes, in :mod:`auditor.server.documents`."""

from __future__ import annotations

import os
import sys

from auditor.emit import UsageError


def serve() -> int:
    """Speak the protocol on stdin/stdout until the client's ``exit``. Both streams are moved to
    private descriptors, for the protocol alone: anything else printed (a library's warning)
    goes to stderr, where editors put a server's log, instead of corrupting a message; and the
    check's forked workers find a ``sys.stdin`` of their own to close (multiprocessing closes it
    in every child, and closing the protocol's, whose lock the reading thread holds, hung)."""
    try:
        from auditor.server.protocol import SERVER
    except ImportError as exc:
        raise UsageError(f"`gm-audit server` needs {exc.name}: pip install 'gm-audit[server]'") from None
    incoming = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    outgoing = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), sys.stdin.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdin, sys.stdout = open(os.devnull), sys.stderr
    SERVER.start_io(incoming, outgoing)
    return 0
