"""GM604: nondeterminism switched on where the run is seeded: ``cudnn.benchmark = True``,
``cudnn.deterministic`` turned off, or a misspelled ``cudnn.deterministic`` that silently sets a
new attribute."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_after
from benchmarks.ecosystem.mutators.structure import calls, in_body, torch_bound, walk


def _after_seeding(src: Source, code: str, what: str) -> Iterator[Edit]:
    # a file that already holds the statement already has the bug: a copy of it is no new finding
    if not torch_bound(src) or code in src.text:
        return
    for call in calls(src.module):
        stmt = src.statement(call)
        if src.qualify(call.func) in ("torch.manual_seed", "torch.cuda.manual_seed_all") and in_body(src, stmt):
            yield Edit(insert_after(stmt, code), what)


def cudnn_benchmark(src: Source) -> Iterator[Edit]:
    return _after_seeding(src, "torch.backends.cudnn.benchmark = True", "cudnn.benchmark on after seeding")


def misspelled_flag(src: Source) -> Iterator[Edit]:
    written = [n for n in walk(src.module, into_scopes=True) if isinstance(n, cst.Attribute)
               and n.attr.value == "deterministic" and src.qualify(n).startswith("torch.backends.cudnn")]
    for attr in written:
        yield Edit({attr.attr: cst.Name("determinstic")}, "`cudnn.deterministic` misspelled")
    if not written:
        yield from _after_seeding(src, "torch.backends.cudnn.determinstic = True",
                                  "a misspelled `cudnn.determinstic` set after seeding")


def deterministic_off(src: Source) -> Iterator[Edit]:
    """``...deterministic = True`` (cudnn's flag) or ``use_deterministic_algorithms(True)``
    turned off."""
    for node in walk(src.module, into_scopes=True):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "True" \
                and any(src.code(t.target).endswith("cudnn.deterministic") for t in node.targets):
            yield Edit({node.value: cst.Name("False")}, "`cudnn.deterministic` set to False")
        elif isinstance(node, cst.Call) and src.qualify(node.func) == "torch.use_deterministic_algorithms" \
                and node.args and src.code(node.args[0].value) == "True":
            yield Edit({node.args[0].value: cst.Name("False")}, "deterministic algorithms turned off")


OPERATORS = [
    Operator("gm604.deterministic-off", "GM604", deterministic_off, ("deterministic",)),
    Operator("gm604.cudnn-benchmark", "GM604", cudnn_benchmark, ("manual_seed",)),
    Operator("gm604.misspelled-flag", "GM604", misspelled_flag, ("manual_seed", "deterministic")),
]
