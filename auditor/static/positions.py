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
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from auditor.static.facts import Span

# libcst node type -> the kind shared with ast
CST_KIND: dict[type, str] = {
    cst.Call: "call", cst.Attribute: "attr", cst.FunctionDef: "def", cst.ClassDef: "class",
    cst.With: "with", cst.Return: "return", cst.Assign: "assign", cst.AnnAssign: "annassign",
    cst.AugAssign: "augassign", cst.For: "for", cst.While: "while", cst.If: "if",
    cst.Subscript: "subscript", cst.BinaryOperation: "binop",
}
AST_KIND: dict[type, str] = {
    ast.Call: "call", ast.Attribute: "attr", ast.FunctionDef: "def", ast.AsyncFunctionDef: "def",
    ast.ClassDef: "class", ast.With: "with", ast.AsyncWith: "with", ast.Return: "return",
    ast.Assign: "assign", ast.AnnAssign: "annassign", ast.AugAssign: "augassign",
    ast.For: "for", ast.AsyncFor: "for", ast.While: "while", ast.If: "if",
    ast.Subscript: "subscript", ast.keyword: "keyword", ast.BinOp: "binop",
}


def cst_kind(node: cst.CSTNode) -> Optional[str]:
    kind = CST_KIND.get(type(node))
    if kind is None and isinstance(node, cst.Arg) and (node.keyword is not None or node.star == "**"):
        return "keyword"
    return kind


@dataclass
class Shape:
    """What CPython's ast says of a file: the spans of each node kind, in libcst's pre-order,
    and how deep the tree goes (``depth``, deepest at ``deepest_line``)."""

    spans: dict[str, list[Span]]
    depth: int
    deepest_line: int


def ast_shape(source: str, tree: Optional[ast.Module] = None) -> Optional[Shape]:
    """The file's :class:`Shape`, or None when CPython cannot parse it; ``tree``: its ``ast``,
    when the caller has parsed it already.

    The depth stands in for :func:`auditor.static.nesting.nesting_depth` (whose tokenizer costs
    a tenth of a file's analysis) wherever CPython parsed the file: each node is one level below
    its parent, and a boolean chain counts one level per operand, as libcst nests it (``a and b
    and c`` is one ast node, two nested libcst nodes)."""
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
    best, best_line = 0, 0
    todo: list[tuple[ast.AST, int]] = [(tree, 0)]  # a stack, not recursion: depth is the point
    push = todo.append
    while todo:
        node, depth = todo.pop()
        kind = AST_KIND.get(type(node))
        if kind is not None and getattr(node, "end_lineno", None) is not None:
            found.setdefault(kind, []).append(
                (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
            )
        if depth > best:
            best, best_line = depth, getattr(node, "lineno", best_line)
        below = depth + (len(node.values) if isinstance(node, ast.BoolOp) else 1)
        for name in node._fields:  # ast.iter_child_nodes, without its two generators
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, below))
            elif isinstance(value, ast.AST):
                push((value, below))
    out: dict[str, list[Span]] = {}
    ascii_only = source.isascii()  # byte columns are character columns: no line looked at
    for kind, spans in found.items():
        spans.sort(key=lambda s: (s[0], s[1], -s[2], -s[3]))
        out[kind] = [Span(l, c + 1, el, ec + 1) for l, c, el, ec in spans] if ascii_only else [
            Span(l, char_col(l, c) + 1, el, char_col(el, ec) + 1) for l, c, el, ec in spans
        ]
    return Shape(out, best, best_line)
