"""A cheap estimate of how deep a file's syntax tree goes, from the tokenizer alone.

libcst's native parser overflows its stack (a segfault: the whole run dies, no report) on
absurd nesting: about 2,000 nested calls, 4,000 chained method calls or 20,000 chained binary
operators. The estimate counts, per open bracket, the trailers and operators chained since the
last comma, plus the brackets and indentation around them: about 2 per nested call or chained
``.method()``, 1 per operator. Real code stays far below :data:`MAX_DEPTH`; files above
:data:`RISKY_DEPTH` are parsed in a process that may die (auditor/static/isolate.py).
The thresholds apply to the depth of CPython's own tree wherever CPython parses the file
(:func:`auditor.static.positions.ast_shape`, a fraction of the tokenizer's cost); this estimate
decides only for files CPython refuses and libcst may still parse.
"""

from __future__ import annotations

import io
import tokenize

MAX_DEPTH = 1000  # never parsed: reported GM000 (well below every crash measured)
RISKY_DEPTH = 200  # parsed in a child process, so that a crash costs that file only

_OPERAND_END = {tokenize.NAME, tokenize.NUMBER, tokenize.STRING}
_WORD_OPERATORS = {"not", "and", "or", "if", "else", "lambda", "await", "in", "is"}
_RESETS = {",", ";", "="}


def nesting_depth(text: str) -> tuple[int, int]:
    """(estimated depth, line where it is deepest); (0, 0) when the tokenizer gives up (the
    parser then reports the syntax error)."""
    chains = [0]  # per open bracket: operators and trailers chained since its last comma
    total = 0  # sum(chains), kept as it changes: the estimate is linear in the file's size
    indent = 0
    best, best_line = 0, 0
    prev_type, prev = tokenize.NEWLINE, ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, s = tok.type, tok.string
            if kind == tokenize.INDENT:
                indent += 1
            elif kind == tokenize.DEDENT:
                indent -= 1
            elif kind == tokenize.NEWLINE:
                chains, total = [0], 0
            elif kind == tokenize.OP:
                if s in "([{":
                    if prev_type in _OPERAND_END or prev in (")", "]", "}"):
                        chains[-1] += 1  # a call or subscript trailer
                        total += 1
                    chains.append(0)
                elif s in ")]}":
                    if len(chains) > 1:
                        total -= chains.pop()
                elif s in _RESETS:
                    total -= chains[-1]
                    chains[-1] = 0
                else:
                    chains[-1] += 1
                    total += 1
            elif kind == tokenize.NAME and s in _WORD_OPERATORS:
                chains[-1] += 1
                total += 1
            if kind not in (tokenize.NL, tokenize.COMMENT):
                prev_type, prev = kind, s
            depth = total + len(chains) + indent
            if depth > best:
                best, best_line = depth, tok.start[0]
    except (tokenize.TokenError, SyntaxError):
        return 0, 0
    return best, best_line
