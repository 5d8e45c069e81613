"""Suppressions. On a line: ``# gm-audit: ignore[GM101, GM201]``, a bare ``# gm-audit: ignore``,
or the flake8/Ruff spelling ``# noqa: GM602`` (only its GM codes count: a bare ``# noqa`` or one
listing other linters' codes is left to those linters). For the whole file, anywhere in it:
``# gm-audit: ignore-file`` or ``# gm-audit: ignore-file[GM603]``. The same comments in a YAML
configuration file suppress the findings reported at its lines.

A ``gm-audit:`` directive that is not exactly one of these (``ignore[GM101;GM201]``,
``ignored[GM101]``, ``ignore[detach]``) suppresses nothing and is reported (GM001): read loosely
it would silence every rule on the line without anyone noticing.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Iterable, Optional

DIRECTIVE_RE = re.compile(r"#\s*gm-audit:\s*(?P<body>.*)")
IGNORE_RE = re.compile(r"ignore(?P<file>-file)?(?:\[(?P<codes>[^\]]*)\])?(?=\s|#|$)", re.I)
NOQA_RE = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z0-9_,\s]+)", re.IGNORECASE)
CODE_RE = re.compile(r"GM\d{3}")
FILE_LEVEL = 0  # the line key of a file-level suppression

Ignores = dict[int, Optional[frozenset[str]]]  # line -> codes, None = every rule
Malformed = list[tuple[int, str]]  # line, the directive as written
Written = dict[int, str]  # the line key of Ignores -> its comment as written (quoted when unused)


def _codes(text: str) -> list[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def parse_ignores(text: str) -> tuple[Ignores, Malformed, Written]:
    """Only real comments count (tokenize), not the same text inside a string. Lines are
    counted as Python counts them: ``\\r`` alone ends a line too."""
    if "gm-audit:" not in text and "noqa" not in text.lower():
        return {}, [], {}
    try:
        # newline=None: universal newlines, so a CR-only file is not one long line
        tokens = list(tokenize.generate_tokens(io.StringIO(text, newline=None).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}, [], {}
    return _read_comments((tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT)


# a YAML comment: `#` at the start of a line or after a space, outside quotes
_YAML_COMMENT = re.compile(r"""^(?:[^'"#]|'[^']*'|"(?:[^"\\]|\\.)*")*?(?:^|(?<=\s))(#.*)$""")


def parse_config_ignores(text: str) -> Ignores:
    """The suppressions of a YAML configuration file's comments (a finding may point at the
    line that sets a value); JSON has no comments and gets none."""
    if "gm-audit:" not in text and "noqa" not in text.lower():
        return {}
    comments = ((n, m.group(1)) for n, line in enumerate(re.split(r"\r\n|\r|\n", text), 1)
                if (m := _YAML_COMMENT.match(line)))
    return _read_comments(comments)[0]


def _read_comments(comments: Iterable[tuple[int, str]]) -> tuple[Ignores, Malformed, Written]:
    found: Ignores = {}
    malformed: Malformed = []
    written: Written = {}
    for line, comment in comments:
        directive = DIRECTIVE_RE.search(comment)
        if directive:
            match = IGNORE_RE.match(directive.group("body"))
            codes = match.group("codes") if match else None
            parts = _codes(codes) if codes is not None else []
            if not match or (codes is not None and not all(CODE_RE.fullmatch(p) for p in parts)):
                malformed.append((line, directive.group(0).strip()))
                continue
            key = FILE_LEVEL if match.group("file") else line
            new = None if codes is None else frozenset(parts)
            old = found.get(key, frozenset())
            found[key] = None if new is None or old is None else old | new
            written[key] = directive.group(0).strip()
            continue
        noqa = NOQA_RE.search(comment)
        if noqa:
            gm = frozenset(c for c in _codes(noqa.group("codes")) if CODE_RE.fullmatch(c))
            if gm:
                found[line] = gm
                written[line] = noqa.group(0).strip()
    return found, malformed, written


def suppressing_line(ignores: Ignores, line: int, code: str) -> Optional[int]:
    """The key of the suppression that silences ``code`` on ``line`` (the line itself or
    FILE_LEVEL), or None."""
    for key in (line, FILE_LEVEL):
        if key in ignores and (ignores[key] is None or code in ignores[key]):
            return key
    return None
