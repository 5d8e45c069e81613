"""Positions from CPython's ast, mapped onto libcst nodes, equal libcst's PositionProvider."""

import importlib.util
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

import auditor.static.engine as engine
from auditor.static.collector import FactCollector
from auditor.static.engine import analyze_source
from auditor.static.context import FileContext
from auditor.static.positions import cst_kind
from auditor.static.visitor import Visitor
from auditor.static.walk import descendants, walk

TRICKY = '''
import torch.nn.functional as F
from a.b import c as d
@torch.no_grad()
@staticmethod
async def f(x, *args, **kw):
    async with lock as l, other():
        y = (g(x)).h(k=1, **kw)(z)[0].detach()
    s = f"{x.mean()!r:>{w(1)}} é {'ü'.upper()}"
    v = [q(i) for i in range(3) if p(i)] ; t: int = len(s)
    if a(1): pass
    elif b(2): u = c(3) if d(4) else e(5)
    else:
        async for n in m(): n += o(n)
    while w(): return lambda: r(1)
class K(Base, metaclass=M):
    déjà = "é"; x = déjà.encode(errors="strict")
loss = (w * (a + b)) ** 2 - f"{n % 3}" @ m
def h(x: int | None = 2 * 3) -> "a" + "b": return -x // 2
'''


def compare(text: str):
    module = cst.parse_module(text)
    ctx = FileContext("x.py", text, module, "x")
    walk(module, [FactCollector(ctx)])
    assert ctx.positions_consistent()
    exact = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    checked = 0
    for node in list(ctx._order):
        mine = ctx.span(node)
        ref = exact[node]
        assert (mine.line, mine.end_line) == (ref.start.line, ref.end.line), (type(node), mine, ref)
        if not (isinstance(node, cst.Call) and node.lpar):  # ast spans exclude parentheses
            assert (mine.column, mine.end_column) == (ref.start.column + 1, ref.end.column + 1), (type(node), mine, ref)
        checked += 1
    return checked


def test_tricky_shapes_match_position_provider():
    assert compare(TRICKY) > 40


def test_dgl_sources_match_position_provider():
    spec = importlib.util.find_spec("dgl")
    if spec is None:
        pytest.fail("dgl must be installed (requirements/constraints.txt)")
    root = Path(list(spec.submodule_search_locations)[0])
    files = sorted(root.rglob("*.py"))[::6]  # a spread of real files, kept quick
    assert sum(compare(p.read_text(encoding="utf-8")) for p in files) > 1000


def test_mismatch_falls_back_to_exact_positions(monkeypatch):
    """When ast and libcst disagree on a file's shape, the engine redoes it with libcst's own
    positions instead of reporting shifted lines."""
    real = engine.ast_shape

    def shifted(source, tree=None):
        shape = real(source, tree)
        shape.spans["call"].insert(0, shape.spans["call"][0])  # one call too many: every index off by one
        return shape

    monkeypatch.setattr(engine, "ast_shape", shifted)
    text = "import torch\nx = f(1)\nstate = torch.load('w.pt')\n"
    result = analyze_source("x.py", Path("x.py"), text.encode(), ("GM602",))
    assert [(f.rule, f.line, f.column) for f in result.findings] == [("GM602", 3, 9)]


class _AsksAhead(Visitor):
    """A rule that reads the parts of a statement before the traversal reaches them (as
    ``ctx.code(node.value)`` in ``visit_Assign`` does)."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.asked: dict[cst.CSTNode, tuple[int, int, int, int]] = {}

    def _ask(self, node: cst.CSTNode) -> None:
        for below in descendants(node):
            if cst_kind(below) is not None and below not in self.ctx._order:
                s = self.ctx.span(below)
                self.asked.setdefault(below, (s.line, s.column, s.end_line, s.end_column))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._ask(node)

    def visit_Return(self, node: cst.Return) -> None:
        self._ask(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._ask(node)


def test_parts_asked_for_before_the_traversal_reaches_them_have_their_own_positions():
    text = TRICKY + "z = a.b[f(x, k=g(y))].c(h(1)[2])\nreturn_ = [m(n) for n in p.q]\n"
    module = cst.parse_module(text)
    ctx = FileContext("x.py", text, module, "x")
    asks = _AsksAhead(ctx)
    walk(module, [FactCollector(ctx), asks])
    assert ctx._exact is None  # every answer came from the ast's spans
    exact = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(asks.asked) > 20
    for node, (line, column, end_line, end_column) in asks.asked.items():
        ref = exact[node]
        assert (line, end_line) == (ref.start.line, ref.end.line), (type(node), ref)
        if not (isinstance(node, cst.Call) and node.lpar):
            assert (column, end_column) == (ref.start.column + 1, ref.end.column + 1), (type(node), ref)


def test_a_weighted_term_has_its_position_without_regenerating_the_file():
    """A rule reporting at a binary operation (`w * loss`) gets its span from the ast, as for the
    other kinds: asking libcst for positions regenerates the whole file's code."""
    text = "def step(w, loss, aux):\n    total = (w * loss) + 0.5 * aux\n    return total\n"
    module = cst.parse_module(text)
    ctx = FileContext("x.py", text, module, "x")
    walk(module, [FactCollector(ctx)])
    ops = [n for n in ctx._order if isinstance(n, cst.BinaryOperation)]
    assert len(ops) == 3
    spans = {module.code_for_node(n).strip("()"): ctx.span(n) for n in ops}
    assert ctx._exact is None
    assert (spans["w * loss"].line, spans["w * loss"].column, spans["w * loss"].end_column) == (2, 14, 22)
    assert spans["0.5 * aux"].column == 26


def test_attribute_visitors_run_around_their_field():
    """libcst's attribute visitors (``visit_IfExp_body``) run around that field's nodes, as
    libcst's own traversal calls them: the collector records a conditional expression's test
    as the condition of the calls in each branch."""
    source = "def f(loss, reduction):\n    return loss.mean() if reduction == 'mean' else loss.sum()\n"
    module = cst.parse_module(source)
    ctx = FileContext("m.py", source, module, "m")
    collector = FactCollector(ctx)
    walk(module, [collector])
    calls = {e.method: e.conditions for e in collector.facts.functions["m.f"].events if e.kind == "call"}
    assert calls == {"mean": ["reduction == 'mean'"], "sum": ["not (reduction == 'mean')"]}
