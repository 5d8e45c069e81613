"""What a rule sees of one file: its source, parse tree, positions and name resolution."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from auditor.static.facts import FileFacts, Span
from auditor.static.positions import ast_spans, cst_kind

MODULE_SCOPE = "<module>"


def module_name_for(path: Path) -> str:
    """Dotted module name: walk up through packages (folders holding ``__init__.py``)."""
    parts = [path.stem] if path.stem != "__init__" else []
    parent = path.parent
    while (parent / "__init__.py").is_file() and parent.name:
        parts.insert(0, parent.name)
        parent = parent.parent
    return ".".join(parts) or path.parent.name


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    return None


class FileContext:
    """One parsed file. Positions and names are resolved once, in the single traversal."""

    def __init__(
        self, path: str, source: str, module: cst.Module, module_name: str, exact: bool = False
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.facts = FileFacts(path=path, module=module_name)
        # Positions are the only metadata every analysed file needs (events carry lines). They
        # come from CPython's ast (see positions.py); libcst's PositionProvider (about 2.4x the
        # parse) only when that mapping cannot be used. Scope analysis is never resolved.
        self._ast_spans = None if exact else ast_spans(source)
        self._order: dict[cst.CSTNode, int] = {}
        self._counts: dict[str, int] = {}
        self._exact: Optional[Mapping[cst.CSTNode, Any]] = None
        self.local_defs: set[str] = {
            stmt.name.value
            for stmt in module.body
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
        }
        self.lines = source.splitlines()

    @property
    def module_name(self) -> str:
        return self.facts.module

    def number(self, node: cst.CSTNode, kind: str) -> None:
        """Called by the engine's collector, first in the traversal, for every node of a
        position kind, in pre-order: the node's index among its kind."""
        count = self._counts.get(kind, 0)
        self._order[node] = count
        self._counts[kind] = count + 1

    def positions_consistent(self) -> bool:
        """After the traversal: did every kind meet as many libcst nodes as ast found?"""
        if self._ast_spans is None:
            return True
        kinds = set(self._counts) | set(self._ast_spans)
        return all(self._counts.get(k, 0) == len(self._ast_spans.get(k, ())) for k in kinds)

    @property
    def exact_positions(self) -> bool:
        return self._ast_spans is None

    def span(self, node: cst.CSTNode) -> Span:
        if self._ast_spans is not None:
            index = self._order.get(node)
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
        text = self.module.code_for_node(node).strip()
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def add_import(self, alias: str, qualified: str) -> None:
        self.facts.imports[alias] = qualified

    def resolve_relative(self, level: int, module: Optional[str]) -> str:
        package = self.module_name.split(".")
        # a module's package is its name minus the last part (an __init__ is its own package)
        base = package[: len(package) - level] if level else package
        return ".".join([*base, module] if module else base)

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
