"""GM603: incomplete seeding: one seeding call removed, an RNG drawn from in the training loop
whose family the repository never seeds while it seeds others, or a fresh unseeded numpy
``Generator`` drawn from there while the repository seeds anything; benign twin, a draw from a
seeded family."""

from __future__ import annotations

import re
from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before, neutralise
from benchmarks.ecosystem.mutators.structure import calls, first_loop_statement, in_body, train_loops

# family -> (the module it needs bound in the file, a draw from it)
DRAWS = {"torch": ("torch", "torch.randperm(8)"), "numpy": ("numpy", "{m}.random.permutation(8)"),
         "random": ("random", "{m}.random()"), "dgl": ("dgl", "{m}.rand_graph(8, 16)")}
SEEDS = {"torch": re.compile(r"\bmanual_seed(_all)?\("), "numpy": re.compile(r"\brandom\.seed\(|default_rng\(\d"),
         "random": re.compile(r"(?<!\.)\brandom\.seed\("), "dgl": re.compile(r"\bdgl\.(random\.)?seed\(")}


def seeded_families(texts: Iterator[str]) -> frozenset[str]:
    """The RNG families that some file seeds (numpy's and stdlib's seed calls look alike:
    ``np.random.seed`` counts for numpy, a bare ``random.seed`` for the stdlib)."""
    joined = "\n".join(texts)
    return frozenset(f for f, pattern in SEEDS.items() if pattern.search(joined))


def _draw(src: Source, seeded: bool) -> Iterator[Edit]:
    if not src.seeded:
        return
    bound = {full: name for name, full in src.imports.items()}
    # a family the file imports first; else one imported on the spot (the draw is the bug)
    families = sorted((f for f in DRAWS if (f in src.seeded) == seeded), key=lambda f: DRAWS[f][0] not in bound)
    for tl in train_loops(src) if families else ():
        stmt = first_loop_statement(src, tl)
        if in_body(src, stmt):
            module, draw = DRAWS[families[0]]
            imports = () if module in bound else (f"import {module}",)
            yield Edit(insert_before(stmt, *imports, f"drawn = {draw.format(m=bound.get(module, module))}"),
                       f"a draw from the {'seeded' if seeded else 'unseeded'} {families[0]} RNG")


def fresh_generator(src: Source) -> Iterator[Edit]:
    """``np.random.default_rng()`` without a seed takes OS entropy: no global seed reaches it,
    whichever families the repository seeds (so this applies wherever it seeds one)."""
    if not src.seeded:
        return
    bound = {full: name for name, full in src.imports.items()}
    imports = () if "numpy" in bound else ("import numpy",)
    for tl in train_loops(src):
        stmt = first_loop_statement(src, tl)
        if in_body(src, stmt):
            yield Edit(insert_before(stmt, *imports,
                                     f"drawn = {bound.get('numpy', 'numpy')}.random.default_rng().permutation(8)"),
                       "a draw from a fresh, unseeded numpy Generator in the training loop")


# the seeding calls of each family, by qualified name
SEEDING = ("torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
           "numpy.random.seed", "random.seed", "dgl.seed", "dgl.random.seed")


def drop_seed(src: Source) -> Iterator[Edit]:
    """Each seeding call that is a statement of its own, removed."""
    for call in calls(src.module):
        stmt = src.statement(call)
        if src.qualify(call.func) in SEEDING and in_body(src, stmt) and \
                len(stmt.body) == 1 and stmt.body[0].value is call:
            yield Edit(neutralise(stmt), f"`{src.code(call)}` removed")


def unseeded_draw(src: Source) -> Iterator[Edit]:
    return _draw(src, seeded=False)


def seeded_draw(src: Source) -> Iterator[Edit]:
    return _draw(src, seeded=True)


OPERATORS = [
    Operator("gm603.unseeded-draw", "GM603", unseeded_draw, (".backward(",)),
    Operator("gm603.drop-seed", "GM603", drop_seed, ("seed(",)),
    Operator("gm603.fresh-generator", "GM603", fresh_generator, (".backward(",)),
    Operator("gm603.seeded-draw", "GM603", seeded_draw, (".backward(",), benign=True),
]
