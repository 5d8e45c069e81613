"""Reading a source file as untrusted input: never blocking, never more than the limit."""

from __future__ import annotations

import io
import os
import re
import stat
import tokenize
from pathlib import Path

MAX_FILE_BYTES = 4 * 1024 * 1024
# the analysis costs about 10-30 KiB of memory a line (a 22,000-line file of real code: 0.7 GB,
# 28 s; a million short lines: 10 GB, 8 minutes): past this a file is skipped, not analysed
MAX_ANALYSED_LINES = 30_000


def read_source(path: Path, limit: int = MAX_FILE_BYTES, follow_symlinks: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (one more than the limit: the caller sees it is
    too large without reading all of it). OSError for anything but a regular file, checked on
    the open file itself: discovery's check could be outrun by a swap for a FIFO."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO's open blocks otherwise
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return fh.read(limit + 1)


def line_count(data: bytes) -> int:
    """How many lines ``data`` holds, whichever of ``\\n``, ``\\r\\n`` or ``\\r`` ends them."""
    ended = max(data.count(b"\n"), data.count(b"\r"))
    return ended + (1 if data and not data.endswith((b"\n", b"\r")) else 0)


_LINE_END = re.compile(r"\r\n|\r|\n")


def python_lines(text: str) -> list[str]:
    """``text``'s lines as Python numbers them: only ``\\r\\n``, ``\\r`` and ``\\n`` end a line
    (``str.splitlines`` also splits at form feed, U+2028, U+0085... and shifts every line after)."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def without_comment(line: str) -> str:
    """One line of code up to its comment (a ``#`` in a string literal is no comment)."""
    if "#" not in line:
        return line
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]]
    except (tokenize.TokenError, SyntaxError):  # the line ends inside brackets: cut nothing
        pass
    return line
