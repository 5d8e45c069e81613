"""Suppressions. On a line: ``# gm-audit: ignore[GM101, GM201]``, a bare ``# gm-audit: ignore``,
or the flake8/Ruff spelling ``# noqa: GM602`` (only its GM codes count: a bare ``# noqa`` or one
listing other linters' codes is left to those linters). For the whole file, anywhere in it:
``# gm-audit: ignore-file`` or ``# gm-audit: ignore-file[GM603]``."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

IGNORE_RE = re.compile(
    r"#\s*gm-audit:\s*ignore(?P<file>-file)?(?![\w-])(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
NOQA_RE = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z0-9_,\s]+)", re.IGNORECASE)
GM_CODE = re.compile(r"GM\d{3}")
FILE_LEVEL = 0  # the line key of a file-level suppression

Ignores = dict[int, Optional[frozenset[str]]]  # line -> codes, None = every rule


def _codes(text: Optional[str]) -> Optional[frozenset[str]]:
    return None if text is None else frozenset(
        c.strip().upper() for c in text.split(",") if c.strip())


def parse_ignores(text: str) -> Ignores:
    """Only real comments count (tokenize), not the same text inside a string."""
    if "gm-audit:" not in text and "noqa" not in text.lower():
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
        if match:
            line = FILE_LEVEL if match.group("file") else tok.start[0]
            codes = _codes(match.group("codes"))
            old = found.get(line, frozenset())
            found[line] = None if codes is None or old is None else old | codes
            continue
        noqa = NOQA_RE.search(tok.string)
        if noqa:
            codes = frozenset(c for c in _codes(noqa.group("codes")) or () if GM_CODE.fullmatch(c))
            if codes:
                found[tok.start[0]] = codes
    return found


def suppressing_line(ignores: Ignores, line: int, code: str) -> Optional[int]:
    """The key of the suppression that silences ``code`` on ``line`` (the line itself or
    FILE_LEVEL), or None."""
    for key in (line, FILE_LEVEL):
        if key in ignores and (ignores[key] is None or code in ignores[key]):
            return key
    return None
