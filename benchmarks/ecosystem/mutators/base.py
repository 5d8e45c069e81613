"""The machinery every operator shares: a parsed source with positions and parents, an edit
(node replacements plus the original nodes whose lines are truth too), and how an edit becomes
a mutated text with its truth lines.

An operator is a function ``Source -> Iterable[Edit]``: it finds every site where a person could
write its bug class, from the syntax alone (never from gm-audit's model of the program: whether a
mutant is a bug is decided by running it, ``benchmarks/ecosystem/oracle/``), and says how to
rewrite each. Truth lines are computed, not
declared: the lines of the new text that the edit changed, plus the new lines of its anchors
(original nodes a rule reports at although the edit left them alone, e.g. the ``.eval()`` call
whose ``.train()`` was removed).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

Replacement = Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]
# a replacement is built from the node as updated by edits inside it (an insertion in a loop
# and another around the loop both survive)
Rewrite = Union[Replacement, Callable[[cst.CSTNode], Replacement]]


@dataclass
class Edit:
    replace: dict[cst.CSTNode, Rewrite]
    description: str
    anchors: tuple[cst.CSTNode, ...] = ()
    # lines the edit changed are truth unless the rule reports only at the anchors
    changed_are_truth: bool = True


@dataclass(frozen=True)
class Operator:
    name: str  # e.g. ``gm501.second-self-loop``
    rule: str
    find: Callable[["Source"], Iterable[Edit]]
    needs: tuple[str, ...]  # text one of which a file must contain to be worth parsing
    benign: bool = False


class Source:
    """One parsed file: positions, parents and the names its imports bind."""

    def __init__(self, path: str, text: str, seeded: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.text = text
        self.seeded = seeded  # RNG families some file of the repository seeds (GM603)
        self.module = cst.parse_module(text)
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self._pos = wrapper.resolve(PositionProvider)
        self._parent = wrapper.resolve(ParentNodeProvider)
        self.imports = _imports(self.module)

    def line(self, node: cst.CSTNode) -> int:
        return self._pos[node].start.line

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parent.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        node = self._parent.get(node)
        while node is not None:
            yield node
            node = self._parent.get(node)

    def statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement line (simple or compound) holding ``node``, an element of a body."""
        for up in [node, *self.ancestors(node)]:
            if isinstance(up, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return up
        raise ValueError("node outside any statement")

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def qualify(self, expr: cst.BaseExpression) -> str:
        """Dotted name of ``expr`` with its import alias resolved (``F.mse_loss`` ->
        ``torch.nn.functional.mse_loss``); empty for anything but a name chain."""
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return ""
        root = self.imports.get(expr.value, expr.value)
        return ".".join([root, *reversed(parts)])


def _imports(module: cst.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in _walk(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = cst.helpers.get_full_name_for_node(alias.name) or ""
                bound = alias.asname.name.value if alias.asname else full.split(".")[0]
                names[bound] = full if alias.asname else bound
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            base = cst.helpers.get_full_name_for_node(node.module) if node.module else ""
            for alias in node.names:
                full = cst.helpers.get_full_name_for_node(alias.name) or ""
                bound = alias.asname.name.value if alias.asname else full
                names[bound] = f"{base}.{full}" if base else full
    return names


def _walk(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


class _Apply(cst.CSTTransformer):
    def __init__(self, replace: dict[cst.CSTNode, Rewrite]) -> None:
        super().__init__()
        self.replace = {id(k): v for k, v in replace.items()}

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        new = self.replace.get(id(original), updated)
        return new(updated) if callable(new) else new


@dataclass(frozen=True)
class Applied:
    text: str
    truth: tuple[int, ...]


def apply(source: Source, edit: Edit) -> Applied:
    """The new text of ``source`` under ``edit`` and its truth lines (1-based, new text)."""
    text = source.module.visit(_Apply(edit.replace)).code
    cst.parse_module(text)  # a mutant that does not parse would measure GM000, not the rule
    old, new = source.text.splitlines(), text.splitlines()
    # a neutralised statement's old line must not match its own text moved elsewhere (a
    # zero_grad moved below the backward): blank it out of the comparison
    for node, rewrite in edit.replace.items():
        if not callable(rewrite) and rewrite.deep_equals(_PASS):
            old[source.line(node) - 1] = "\0removed"
    changed: set[int] = set()
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            changed.update(range(j1 + 1, j2 + 1))
        for k in range(i1, i2):  # a changed old line maps into its replacement block
            mapping[k + 1] = j1 + 1 + min(k - i1, max(j2 - j1 - 1, 0))
    truth = set(changed) if edit.changed_are_truth else set()
    truth.update(mapping[source.line(a)] for a in edit.anchors if source.line(a) in mapping)
    return Applied(text, tuple(sorted(truth)))


def parse_statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code + "\n")


def insert_before(stmt: cst.CSTNode, *code: str) -> dict[cst.CSTNode, Rewrite]:
    return {stmt: lambda new: cst.FlattenSentinel([*map(parse_statement, code), new])}


def insert_after(stmt: cst.CSTNode, *code: str) -> dict[cst.CSTNode, Rewrite]:
    return {stmt: lambda new: cst.FlattenSentinel([new, *map(parse_statement, code)])}


def wrap_with(stmt: cst.CSTNode, item: str) -> dict[cst.CSTNode, Rewrite]:
    """Put ``stmt`` alone in a ``with ITEM:`` block."""
    return {stmt: lambda new: cst.With(items=[cst.WithItem(cst.parse_expression(item))],
                                       body=cst.IndentedBlock([new.with_changes(leading_lines=[])]),
                                       leading_lines=new.leading_lines)}


_PASS = cst.parse_statement("pass\n")


def neutralise(stmt: cst.CSTNode) -> dict[cst.CSTNode, Rewrite]:
    """Replace a statement by ``pass``: removed in effect, and the lines below keep their numbers."""
    return {stmt: _PASS}
