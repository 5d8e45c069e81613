"""Inline suppressions: ``# gm-audit: ignore[GM101, GM201]`` or a bare ``# gm-audit: ignore``."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

IGNORE_RE = re.compile(r"#\s*gm-audit:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")

Ignores = dict[int, Optional[frozenset[str]]]  # line -> codes, None = every rule


def parse_ignores(text: str) -> Ignores:
    """Only real comments count (tokenize), not the same text inside a string."""
    if "gm-audit:" not in text:
        return {}
    found: Ignores = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        match = IGNORE_RE.search(tok.string)
        if not match:
            continue
        codes = match.group("codes")
        line = tok.start[0]
        if codes is None:
            found[line] = None
        else:
            found[line] = frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
    return found


def is_suppressed(ignores: Ignores, line: int, code: str) -> bool:
    if line not in ignores:
        return False
    codes = ignores[line]
    return codes is None or code in codes
