"""Untrusted text in reports: file names, source lines, the program's output and exception
messages all come from the repository being checked.

On a terminal, control characters would act (clear the screen, fake OSC-8 links, bidi overrides
reorder what is shown): they are shown escaped, as are the bytes of a file name that is not UTF-8.
A quoted text is capped: a 50 MB output line must not become a 50 MB report.
"""

from __future__ import annotations

import re

MAX_QUOTED = 2000  # characters of one quoted line, path or message

# C0 (tab kept) and C1 controls, DEL, line/paragraph separators, bidi embeddings, overrides and
# isolates, and the lone surrogates that stand for a file name's undecodable bytes
_UNSAFE = "\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\udc80-\udcff"
_ONE_LINE = re.compile(f"[\x00-\x08\x0a{_UNSAFE}]")
_LINES = re.compile(f"[\x00-\x08{_UNSAFE}]")  # the same, newline kept


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int = MAX_QUOTED, multiline: bool = False) -> str:
    """``text`` safe to print: controls escaped (newlines kept if ``multiline``), at most
    ``limit`` characters kept."""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return (_LINES if multiline else _ONE_LINE).sub(_escape, text)


def code_span(text: str) -> str:
    """A Markdown code span holding ``text`` literally, whatever backticks it contains."""
    text = printable(text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
