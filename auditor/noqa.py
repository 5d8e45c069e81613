"""``# noqa: GM602`` comments added on the lines of findings: ``check --add-noqa`` and the editor
server's "disable for this line" action. A line that already has a ``# noqa: E501`` gets the
codes merged into it (``# noqa: E501, GM602``), one with a ``# gm-audit: ignore[GM101]`` gets
them in its brackets (that directive would hide a second comment from gm-audit). A line whose end
is inside a string or after a backslash continuation cannot take a comment and is left alone;
every added comment is verified by reading the new text back with :mod:`auditor.suppression`.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from auditor.emit import EXIT_CLEAN, EXIT_FINDINGS
from auditor.findings import Finding
from auditor.scope import PROJECT
from auditor.suppression import DIRECTIVE_RE, IGNORE_RE, parse_ignores, suppressing_line

# a noqa listing codes; only its codes, not an explanation written after them
NOQA_LIST_RE = re.compile(r"#\s*noqa\s*:\s*[A-Za-z]+\d+(?:\s*,\s*[A-Za-z]+\d+)*", re.I)
_LINE_END = re.compile(r"(\r\n|\r|\n)")


def _comments_and_ends(text: str) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """The comment of each line (column, text), and the lines whose end can take one: those
    where tokenize sees a line end (NEWLINE or NL), not inside a string or after a backslash."""
    comments: dict[int, tuple[int, str]] = {}
    ends: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.start[1], tok.string)
        elif tok.type in (tokenize.NEWLINE, tokenize.NL):
            ends.add(tok.start[0])
    return comments, ends


def _with_codes(content: str, comment: tuple[int, str] | None, codes: list[str]) -> str:
    """One line's content (no line end) carrying ``codes`` in a suppression comment."""
    if comment is not None:
        column, written = comment
        directive = DIRECTIVE_RE.search(written)
        ignore = IGNORE_RE.match(directive.group("body")) if directive else None
        if ignore is not None and ignore.group("codes") is not None:
            at = column + directive.start("body") + ignore.end("codes")  # type: ignore[union-attr]
            return content[:at] + "".join(f", {c}" for c in codes) + content[at:]
        noqa = NOQA_LIST_RE.search(written)
        if noqa is not None and directive is None:
            at = column + noqa.end()
            return content[:at] + "".join(f", {c}" for c in codes) + content[at:]
    return content.rstrip(" \t") + f"  # noqa: {', '.join(codes)}"


def add_noqa(text: str, wanted: Mapping[int, Iterable[str]]) -> tuple[str, list[int]]:
    """``text`` with ``# noqa`` codes on the lines of ``wanted`` (line -> codes), and the lines
    that got them. Lines that cannot take a comment, and a text that does not tokenize, are left
    as they are."""
    try:
        comments, ends = _comments_and_ends(text)
    except (tokenize.TokenError, SyntaxError):
        return text, []
    parts = _LINE_END.split(text)  # content, end, content, end, ..., last content
    before = parse_ignores(text)[0]
    changed: dict[int, str] = {}
    for line, codes in sorted(wanted.items()):
        missing = sorted({c for c in codes if suppressing_line(before, line, c) is None})
        if missing and line in ends and 2 * (line - 1) < len(parts):
            changed[line] = parts[2 * (line - 1)]
            parts[2 * (line - 1)] = _with_codes(parts[2 * (line - 1)], comments.get(line), missing)
    new = "".join(parts)
    after = parse_ignores(new)[0]
    refused = [line for line in changed
               if any(suppressing_line(after, line, c) is None for c in wanted[line])]
    for line in refused:  # a layout the merge got wrong: the line stays as the user wrote it
        parts[2 * (line - 1)] = changed.pop(line)
    return ("".join(parts) if refused else new), sorted(changed)


def add_noqa_command(findings: Sequence[Finding], quiet: bool) -> int:
    """``check --add-noqa``: a ``# noqa`` on every line with a finding (never on another line),
    each file written atomically in its own encoding. Exit 0 when every finding got one."""
    from auditor.code_docs import ENGINE_CODES
    from auditor.fix import decode_with_encoding, write_fixed

    wanted: dict[str, dict[int, set[str]]] = {}
    for f in findings:
        if f.rule not in ENGINE_CODES and f.path != PROJECT:
            wanted.setdefault(f.path, {}).setdefault(f.line, set()).add(f.rule)
    changed: dict[str, tuple[bytes, bytes]] = {}
    added: dict[str, int] = {}
    for path, lines in sorted(wanted.items()):
        try:
            data = Path(path).read_bytes()
            text, encoding = decode_with_encoding(data)
            new, done = add_noqa(text, lines)
            if done:
                changed[path], added[path] = (data, new.encode(encoding)), len(done)
        except (OSError, ValueError, UnicodeEncodeError):
            continue  # reported below as lines left without a comment
    for path in write_fixed(changed):
        added.pop(path)
    count = sum(added.values())
    left = sum(len(lines) for lines in wanted.values()) - count
    if not quiet:
        print(f"gm-audit: added {count} noqa directive(s) to {len(added)} file(s)", file=sys.stderr)
        if left:
            print(f"gm-audit: {left} line(s) with findings got none (a line ending inside a "
                  "string or after a backslash, or a file that could not be written)",
                  file=sys.stderr)
    return EXIT_FINDINGS if left else EXIT_CLEAN
