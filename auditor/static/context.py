"""What a rule sees of one file: its source, parse tree, positions and name resolution."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from auditor.static.facts import MODULE_SCOPE, FileFacts, Span  # noqa: F401 (MODULE_SCOPE re-exported)
from auditor.static.positions import Shape, ast_shape, cst_kind
from auditor.static.reading import python_lines
from auditor.static.walk import descendants



def resolve_relative(module_name: str, path: str, level: int, module: Optional[str]) -> str:
    """``from ..utils import x`` in the module ``module_name`` (at ``path``): ``pkg.utils``."""
    # the checked folder's own `__init__.py` is the package its files' names start from
    package = module_name.split(".") if module_name != "__init__" else []
    # a module's package is its name minus the last part (an __init__ is its own package)
    up = level - 1 if path.endswith("__init__.py") else level
    base = package[: len(package) - up] if level else package
    return ".".join([*base, module] if module else base)


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    return None


# statements with bodies: counting ahead inside one would walk the whole body (and an import in
# it numbers nothing), for a node the traversal reaches soon
_COMPOUND = (cst.FunctionDef, cst.ClassDef, cst.With, cst.For, cst.While, cst.If)


class FileContext:
    """One parsed file. Positions and names are resolved once, in the single traversal."""

    def __init__(
        self, path: str, source: str, module: cst.Module, module_name: str, exact: bool = False,
        shape: Optional[Shape] = None,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.facts = FileFacts(path=path, module=module_name)
        # Positions are the only metadata every analysed file needs (events carry lines). They
        # come from CPython's ast (see positions.py); libcst's PositionProvider (about 2.4x the
        # parse) only when that mapping cannot be used. Scope analysis is never resolved.
        # ``shape``: the file's ast shape, when the caller has it already.
        if exact:
            self._ast_spans = None
        else:
            shape = shape or ast_shape(source)
            self._ast_spans = shape.spans if shape else None
        self._order: dict[cst.CSTNode, int] = {}
        self._counts: dict[str, int] = {}
        self._last: Optional[cst.CSTNode] = None  # the node numbered last
        self._ahead: tuple[Optional[cst.CSTNode], dict[cst.CSTNode, int]] = (None, {})
        self._exact: Optional[Mapping[cst.CSTNode, Any]] = None
        # > 0 while the traversal is inside an import statement (its dotted names are not
        # expressions: no positions are numbered for them, rules should not report there)
        self.in_import = 0
        self.local_defs: set[str] = {
            stmt.name.value
            for stmt in module.body
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
        }
        self.lines = python_lines(source)

    @property
    def module_name(self) -> str:
        return self.facts.module

    def number(self, node: cst.CSTNode, kind: str) -> None:
        """Called by the engine's collector, first in the traversal, for every node of a
        position kind, in pre-order: the node's index among its kind."""
        count = self._counts.get(kind, 0)
        self._order[node] = count
        self._counts[kind] = count + 1
        self._last = node

    def _index(self, node: cst.CSTNode) -> Optional[int]:
        """The node's index among its kind: numbered already, or (a part of the statement or
        expression numbered last, which a rule reads before the traversal reaches it) counted
        ahead, as the traversal will number it. Slicing the source beats regenerating it."""
        index = self._order.get(node)
        if index is not None or self._last is None or type(self._last) in _COMPOUND:
            return index
        root, ahead = self._ahead
        if root is not self._last:
            ahead, counts = {}, dict(self._counts)
            for below in descendants(self._last):
                kind = cst_kind(below)
                if kind is not None:
                    ahead[below] = counts.get(kind, 0)
                    counts[kind] = ahead[below] + 1
            self._ahead = (self._last, ahead)
        return ahead.get(node)

    def positions_consistent(self) -> bool:
        """After the traversal: did every kind meet as many libcst nodes as ast found?"""
        if self._ast_spans is None:
            return True
        kinds = set(self._counts) | set(self._ast_spans)
        return all(self._counts.get(k, 0) == len(self._ast_spans.get(k, ())) for k in kinds)

    def span(self, node: cst.CSTNode) -> Span:
        if self._ast_spans is not None:
            index = self._index(node)
            kind = cst_kind(node)
            spans = self._ast_spans.get(kind, ()) if kind else ()
            if index is not None and index < len(spans):
                found = spans[index]
                return Span(found.line, found.column, found.end_line, found.end_column)
        if self._exact is None:  # a node not numbered yet (a child of the current node, say)
            self._exact = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        rng = self._exact[node]
        return Span(rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)

    def line_text(self, line: int, limit: int = 120) -> str:
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def code(self, node: cst.CSTNode, limit: int = 120) -> str:
        """Source text of a node: sliced from the file when its position is known (cheap),
        regenerated by libcst otherwise."""
        index = self._index(node) if self._ast_spans is not None else None
        if index is not None:
            span = self._ast_spans[cst_kind(node) or ""][index]
            text = self._slice(span)
        else:  # not numbered (yet): names and attribute chains are spelled from the nodes
            text = dotted(node) or self.module.code_for_node(node)
        text = text.strip()
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def _slice(self, span: Span) -> str:
        first, last = span.line - 1, span.end_line - 1
        if first == last:
            return self.lines[first][span.column - 1 : span.end_column - 1]
        parts = [self.lines[first][span.column - 1 :], *self.lines[first + 1 : last],
                 self.lines[last][: span.end_column - 1]]
        return "\n".join(parts)

    def add_import(self, alias: str, qualified: str) -> None:
        self.facts.imports[alias] = qualified

    def resolve_relative(self, level: int, module: Optional[str]) -> str:
        return resolve_relative(self.module_name, self.path, level, module)

    def qualify(self, node: cst.CSTNode) -> str:
        """Best qualified name of an expression: imports and module-level definitions resolved.

        ``F.mse_loss`` -> ``torch.nn.functional.mse_loss``; ``DDP`` ->
        ``torch.nn.parallel.DistributedDataParallel``; unknown names stay as written.
        """
        if isinstance(node, cst.Name):
            name = node.value
            if name in self.facts.imports:
                return self.facts.imports[name]
            if name in self.local_defs:
                return f"{self.module_name}.{name}"
            return name
        if isinstance(node, cst.Attribute):
            base = self.qualify(node.value)
            return f"{base}.{node.attr.value}" if base else ""
        if isinstance(node, cst.Call):
            base = self.qualify(node.func)
            return f"{base}()" if base else ""
        return ""
