"""Inline suppressions: ``# gm-audit: ignore[GM101, GM201]`` or a bare ``# gm-audit: ignore``.

A directive that is not exactly one of these (``ignore[GM101;GM201]``, ``ignored[GM101]``,
``ignore[detach]``) suppresses nothing and is reported (GM001): read loosely it would silence
every rule on the line without anyone noticing.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

DIRECTIVE_RE = re.compile(r"#\s*gm-audit:\s*(?P<body>.*)")
IGNORE_RE = re.compile(r"ignore(?:\[(?P<codes>[^\]]*)\])?(?=\s|#|$)", re.I)
CODE_RE = re.compile(r"GM\d{3}")

Ignores = dict[int, Optional[frozenset[str]]]  # line -> codes, None = every rule
Malformed = list[tuple[int, str]]  # line, the directive as written


def parse_ignores(text: str) -> tuple[Ignores, Malformed]:
    """Only real comments count (tokenize), not the same text inside a string. Lines are
    counted as Python counts them: ``\\r`` alone ends a line too."""
    if "gm-audit:" not in text:
        return {}, []
    found: Ignores = {}
    malformed: Malformed = []
    try:
        # newline=None: universal newlines, so a CR-only file is not one long line
        tokens = list(tokenize.generate_tokens(io.StringIO(text, newline=None).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}, []
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        directive = DIRECTIVE_RE.search(tok.string)
        if not directive:
            continue
        line = tok.start[0]
        match = IGNORE_RE.match(directive.group("body"))
        codes = match and match.group("codes")
        parts = [c.strip().upper() for c in codes.split(",")] if codes is not None else []
        if not match or (codes is not None and not all(CODE_RE.fullmatch(p) for p in parts)):
            malformed.append((line, directive.group(0).strip()))
        elif codes is None:
            found[line] = None
        else:
            found[line] = frozenset(parts)
    return found, malformed


def is_suppressed(ignores: Ignores, line: int, code: str) -> bool:
    if line not in ignores:
        return False
    codes = ignores[line]
    return codes is None or code in codes
