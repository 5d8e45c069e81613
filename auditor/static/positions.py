"""Source positions without libcst's PositionProvider.

PositionProvider regenerates the whole file's code to learn every node's position: about 2.4x
the cost of parsing it. CPython's ``ast`` knows positions for free and parses at a fraction of
libcst's cost, so positions come from there: for each node kind below, the i-th libcst node of
that kind in pre-order is the i-th ``ast`` node of that kind sorted by (start, -end) — parents
start no later and end no earlier than their children, siblings follow source order. The engine
numbers libcst nodes as it meets them; when a kind's counts disagree at the end of a file (syntax
newer than this interpreter's ``ast``, say), the file is re-analysed with PositionProvider.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from auditor.static.facts import Span

# libcst node type -> the kind shared with ast
CST_KIND: dict[type, str] = {
    cst.Call: "call", cst.Attribute: "attr", cst.FunctionDef: "def", cst.ClassDef: "class",
    cst.With: "with", cst.Return: "return", cst.Assign: "assign", cst.AnnAssign: "annassign",
    cst.AugAssign: "augassign", cst.For: "for", cst.While: "while", cst.If: "if",
    cst.Subscript: "subscript",
}
AST_KIND: dict[type, str] = {
    ast.Call: "call", ast.Attribute: "attr", ast.FunctionDef: "def", ast.AsyncFunctionDef: "def",
    ast.ClassDef: "class", ast.With: "with", ast.AsyncWith: "with", ast.Return: "return",
    ast.Assign: "assign", ast.AnnAssign: "annassign", ast.AugAssign: "augassign",
    ast.For: "for", ast.AsyncFor: "for", ast.While: "while", ast.If: "if",
    ast.Subscript: "subscript", ast.keyword: "keyword",
}


def cst_kind(node: cst.CSTNode) -> Optional[str]:
    kind = CST_KIND.get(type(node))
    if kind is None and isinstance(node, cst.Arg) and (node.keyword is not None or node.star == "**"):
        return "keyword"
    return kind


def ast_spans(source: str, tree: Optional[ast.Module] = None) -> Optional[dict[str, list[Span]]]:
    """Spans per kind in libcst pre-order, or None when CPython cannot parse the file; ``tree``:
    its ``ast``, when the caller has parsed it already."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    lines = source.splitlines(keepends=True)

    def char_col(line: int, byte_col: int) -> int:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    found: dict[str, list[tuple[int, int, int, int]]] = {}
    for node in ast.walk(tree):
        kind = AST_KIND.get(type(node))
        if kind is None or getattr(node, "end_lineno", None) is None:
            continue
        found.setdefault(kind, []).append(
            (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        )
    out: dict[str, list[Span]] = {}
    for kind, spans in found.items():
        spans.sort(key=lambda s: (s[0], s[1], -s[2], -s[3]))
        out[kind] = [
            Span(l, char_col(l, c) + 1, el, char_col(el, ec) + 1) for l, c, el, ec in spans
        ]
    return out
