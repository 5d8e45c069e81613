"""GM603 incomplete-seeding: a global RNG drawn from (masks, dropout, weight init, shuffling,
sampling, augmentation) that is never seeded while the pipeline seeds the others."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.facts import Event, FunctionInfo
from auditor.static.programs import LIBRARY, TEST, is_test_code, is_test_path
from auditor.static.project import Project
from auditor.static.training import is_backward
from auditor.static.rng import (
    FAMILIES, Draw, SeedCall, draw_of, project_seeding, takes_every_neighbour,
)

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

FRESH = "draws fresh OS entropy"  # the message of a fresh generator's finding (confirm reads it)

_SEED_CALL = {
    "random": "random.seed(seed)",
    "numpy": "np.random.seed(seed)",
    "torch": "torch.manual_seed(seed)",
    "torch.cuda": "torch.cuda.manual_seed_all(seed)",
    "dgl": "dgl.seed(seed)",
}


class IncompleteSeeding(Rule):
    code = "GM603"
    name = "incomplete-seeding"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "an RNG (random, numpy, torch, CUDA, dgl) is drawn from but never seeded while others are"
    preview_kind = "draws no call reaches, judged by the programs importing their file"
    # "backward": which programs train decides which of them must reproduce
    prefilter = (
        "backward", "rand", "seed", "shuffle", "ropout", "sampling", "Sampler", "Linear", "Conv", "Embedding",
        "init.", "normal_", "uniform_", "bernoulli", "multinomial", "DropEdge", "DropNode",
        "FeatMask",
    )
    doc = """
## What it does
Collects, across the project, the calls that seed a global RNG (`random.seed`, `np.random.seed`,
`torch.manual_seed` — which also seeds every CUDA device —, `torch.cuda.manual_seed[_all]`,
`dgl.seed`, `seed_everything`-style framework helpers) and the calls that draw from one:
`torch.randperm`/`rand*`/dropout/weight initialisation of `nn.Linear`, GAT and other layers,
`DataLoader(shuffle=True)` without a seeded `generator`, `np.random.*`, `random.shuffle` & co.,
`dgl.sampling.*` and DGL samplers (DGL's `DropEdge`, `DropNode`, `FeatMask`, `NodeShuffle` and
`AddEdge` transforms sample with torch's generator: they are torch draws). It reports the first
draw in each file from an RNG that is never seeded while at least one other RNG is.

Seeding is followed into helpers across files: a `set_seed()` in `utils.py` counts only when some
module body reaches it through calls; one that nothing calls seeds nothing. A draw is judged by
the programs that run it, and a program runs what its calls reach plus the protocol methods of
the classes it builds (`__getitem__` of a dataset it iterates, `__call__`, `forward`): a dataset's
shuffle is seeded by the script that builds the dataset after `set_seed()`. Code that only tests
and tools call is judged by the training programs that import it. Calls given their own
`generator=` and `np.random.default_rng(seed)` generators are private and need no global seed;
`np.random.default_rng()` *without* a seed draws fresh OS entropy and is reported whenever the
project seeds anything.

Severity: a warning when other RNGs are seeded (the project wants reproducibility and does not get
it). When the project seeds nothing at all, one info-level finding per RNG at its first draw, and
only in a training project (one that calls `.backward()`): that is a choice, not an oversight.

## Why is this bad?
GraphMAE's result depends on random draws at every stage: weight initialisation, which nodes are
masked (`torch.randperm`), dropout, shuffling, augmentation. Debugging a pipeline that reconstructs
badly means running it next to a minimal script that works, with the same seeds, and finding the
first tensor that differs. One unseeded RNG makes every run different, so the comparison shows
differences everywhere — the real cause (a detached tensor, a frozen BatchNorm) cannot be told
from seed noise, and a "fix" may only be a lucky seed.

## Example
```python
random.seed(0)
np.random.seed(0)
perm = torch.randperm(num_nodes)  # torch is never seeded
```

## Use instead
```python
random.seed(0)
np.random.seed(0)
torch.manual_seed(0)  # also seeds CUDA
dgl.seed(0)
perm = torch.randperm(num_nodes)
```

## Fix safety
Safe: adding the missing seeding call next to the existing ones changes which random numbers are
drawn, never what the code computes with them.

## References
- https://pytorch.org/docs/stable/notes/randomness.html
- https://docs.dgl.ai/en/latest/generated/dgl.seed.html
"""

    VALID = [
        # a script among the tests (a fixture generator with a main guard) seeds torch for its
        # fixtures: it is no run that must reproduce the library's numpy draws
        Valid({
            "pkg/split.py":
            "import numpy as np\n"
            "\n"
            "\n"
            "def split(n):\n"
            "    return np.random.permutation(n)\n",
            "tests/make_data.py":
            "import torch\n"
            "from pkg.split import split\n"
            "\n"
            "\n"
            "def make(n):\n"
            "    torch.manual_seed(0)\n"
            "    return torch.randn(n, 4), split(n)\n"
            "\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    make(10)\n",
        }),
        # the dgl seed set by a helper the package re-exports (`from .helpers import *` in
        # `pkg/__init__.py`: a relative import in an `__init__` is relative to that package)
        Valid({
            "pkg/__init__.py":
            "from .helpers import *\n",
            "pkg/helpers.py":
            "import dgl\n"
            "\n"
            "\n"
            "def seed_graph_sampling(seed):\n"
            "    dgl.seed(seed)\n",
            "train.py":
            "import random\n"
            "\n"
            "import dgl\n"
            "import numpy as np\n"
            "import torch\n"
            "from pkg import seed_graph_sampling\n"
            "\n"
            "\n"
            "def main(g):\n"
            "    random.seed(0)\n"
            "    np.random.seed(0)\n"
            "    torch.manual_seed(0)\n"
            "    seed_graph_sampling(0)\n"
            "    return dgl.sampling.sample_neighbors(g, [0, 1], 2)\n"
            "\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    main(None)\n",
        }),
        Valid(
            "import random\nimport numpy as np\nimport torch\nimport dgl\n"
            "random.seed(0)\nnp.random.seed(0)\ntorch.manual_seed(0)\ndgl.seed(0)\n"
            "perm = torch.randperm(10)\nnp.random.shuffle(items)\n"
            "nodes = dgl.sampling.sample_neighbors(g, seeds, 5)\n"
        ),
        # private, seeded generators need no global seed
        Valid(
            "import random\nimport numpy as np\nimport torch\nrandom.seed(0)\n"
            "gen = torch.Generator()\ngen.manual_seed(0)\nperm = torch.randperm(10, generator=gen)\n"
            "rng = np.random.default_rng(0)\nidx = rng.permutation(10)\n"
        ),
        # torch.manual_seed also seeds the CUDA generators
        Valid("import torch\ntorch.manual_seed(0)\nx = torch.rand(3, device='cuda')\n"),
        # seeding helper in another module, reached from the script
        Valid({
            "utils.py": "import random\nimport numpy as np\nimport torch\n\n"
            "def set_seed(s):\n    random.seed(s)\n    np.random.seed(s)\n    torch.manual_seed(s)\n",
            "train.py": "import random\nimport numpy as np\nimport torch\nfrom utils import set_seed\n\n"
            "def main():\n    set_seed(0)\n    random.shuffle(items)\n    np.random.permutation(5)\n"
            "    torch.randperm(5)\n\nmain()\n",
        }),
        # nothing seeded and no training: silent
        Valid("import random\nrandom.shuffle(items)\n"),
        # DGL's DropEdge samples with torch's Bernoulli: seeding torch covers it, dgl.seed does not
        Valid(
            "import torch\nfrom dgl import DropEdge\ntorch.manual_seed(0)\n"
            "aug = DropEdge(0.2)\n"
        ),
        # the dataset's items are drawn by the loader of the script that builds it, which seeds
        # `random`; another training script imports the module but never builds the dataset
        Valid({
            "data.py":
                "import random\n"
                "class Parts:\n"
                "    def __init__(self, items):\n"
                "        self.items = items\n"
                "    def __getitem__(self, i):\n"
                "        random.shuffle(self.items[i])\n"
                "        return self.items[i]\n",
            "train.py":
                "import random\nimport torch\nfrom torch.utils.data import DataLoader\n"
                "from data import Parts\n"
                "random.seed(0)\ntorch.manual_seed(0)\n"
                "for x in DataLoader(Parts(load())):\n"
                "    loss = x.sum()\n    loss.backward()\n",
            "other.py":
                "import torch\nimport data\n"
                "torch.manual_seed(0)\n"
                "loss = torch.ones(2, requires_grad=True).sum()\nloss.backward()\n",
        }),
        # every fanout is -1 (all neighbours) or 0 (none): the sampler has nothing to draw
        Valid(
            "import numpy as np\nimport torch\nimport dgl\ntorch.manual_seed(0)\nnp.random.seed(0)\n"
            "fanout = {etype: 0 for etype in g.canonical_etypes}\n"
            "for etype in used:\n"
            "    fanout[etype] = -1\n"
            "sampler = dgl.dataloading.MultiLayerNeighborSampler([fanout, [-1] * 2])\n"
        ),
        # the only program that seeds runs another class of the sampler's file, never the
        # sampler: its seeding says nothing about the draw (a training run reaches it unseen)
        Valid({
            "lib/__init__.py": "",
            "lib/loaders.py":
                "import dgl\n"
                "class EdgeLoader:\n"
                "    def __init__(self, g, fanout):\n"
                "        self.sampler = dgl.dataloading.MultiLayerNeighborSampler(fanout)\n"
                "class FullLoader:\n"
                "    def __init__(self, g):\n"
                "        self.sampler = dgl.dataloading.MultiLayerFullNeighborSampler(2)\n",
            "lib/registry.py": "LOADERS = {}\ndef get_loader(name):\n    return LOADERS[name]\n",
            "infer.py":
                "import numpy as np\n"
                "import torch\n"
                "from lib.loaders import FullLoader\n"
                "def main(g, model):\n"
                "    np.random.seed(0)\n"
                "    torch.manual_seed(0)\n"
                "    loader = FullLoader(g)\n"
                "    with torch.no_grad():\n"
                "        return model(g, loader)\n"
                "if __name__ == '__main__':\n"
                "    main(None, None)\n",
            "train.py":
                "from lib.registry import get_loader\n"
                "def main(g, model, opt, name):\n"
                "    for batch in get_loader(name)(g, [10, 5]):\n"
                "        loss = model(batch)\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "if __name__ == '__main__':\n"
                "    main(None, None, None, 'edge')\n",
        }),
        # no call reaches the shuffle, and of the two training programs importing its file one
        # seeds nothing: that one may be what runs it, an unseeded tool, whatever the other seeds
        Valid({
            "lib/__init__.py": "",
            "lib/parts.py":
                "import numpy as np\n"
                "class Partitioner:\n"
                "    def split(self, parts):\n"
                "        np.random.shuffle(parts)\n"
                "        return parts\n",
            "serve.py":
                "import torch\n"
                "import lib.parts\n"
                "def main(model, x):\n"
                "    torch.manual_seed(0)\n"
                "    loss = model(x).sum()\n"
                "    loss.backward()\n"
                "if __name__ == '__main__':\n"
                "    main(None, None)\n",
            "partition.py":
                "import lib.parts\n"
                "def main(model, x):\n"
                "    loss = model(x).sum()\n"
                "    loss.backward()\n"
                "if __name__ == '__main__':\n"
                "    main(None, None)\n",
        }),
    ]
    INVALID = [
        # one edge type keeps 10 of its neighbours: a draw
        Invalid(
            "import numpy as np\nimport torch\nimport dgl\ntorch.manual_seed(0)\nnp.random.seed(0)\n"
            "fanout = {etype: 0 for etype in g.canonical_etypes}\n"
            "for etype in used:\n"
            "    fanout[etype] = 10\n"
            "sampler = dgl.dataloading.MultiLayerNeighborSampler([fanout, [-1] * 2])\n",
            line=4, message_contains="dgl",
        ),
        Invalid(
            "import random\nimport numpy as np\nimport torch\nrandom.seed(0)\nnp.random.seed(0)\n"
            "mask = torch.randperm(100)[:40]\n",
            line=4, column=1, message_contains="torch",
        ),
        Invalid(
            "import numpy as np\nimport torch\nimport dgl\ntorch.manual_seed(0)\nnp.random.seed(0)\n"
            "sg = dgl.sampling.sample_neighbors(g, nodes, 10)\n",
            line=4, message_contains="dgl",
        ),
        Invalid(
            "import random\nimport torch\ntorch.manual_seed(0)\n\ndef augment(x):\n"
            "    if random.random() < 0.5:\n        x = -x\n    return x\n",
            line=6, message_contains="random",
        ),
        Invalid(
            "import numpy as np\nimport torch\ntorch.manual_seed(0)\nrng = np.random.default_rng()\n",
            line=4,
        ),
        # the seeding helper exists but is never called: nothing is seeded
        Invalid(
            {
                "utils.py": "import torch\nimport numpy as np\n\ndef set_seed(s):\n    torch.manual_seed(s)\n"
                "    np.random.seed(s)\n",
                "train.py": "import random\nimport numpy as np\nimport torch\nimport utils\n\n"
                "np.random.seed(0)\nmodel = torch.nn.Linear(4, 4)\nloss = model(x).sum()\nloss.backward()\n",
            },
            line=6, path="train.py", message_contains="never called",
        ),
        # seeding helper in another file forgets numpy; the draw is in a third file
        Invalid(
            {
                "utils.py": "import random\nimport torch\n\ndef seed_everything(s):\n    random.seed(s)\n"
                "    torch.manual_seed(s)\n",
                "data.py": "import numpy as np\n\nclass Jitter:\n    def __call__(self, pts):\n"
                "        return pts + np.random.normal(0, 0.01, pts.shape)\n",
                "train.py": "from utils import seed_everything\nfrom data import Jitter\n\n"
                "seed_everything(0)\naug = Jitter()\n",
            },
            line=5, path="utils.py", message_contains="numpy",
        ),
        # nothing seeded at all in a training script: info
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4)\nloss = model(x).sum()\nloss.backward()\n",
            line=2, message_contains="nothing in the project seeds",
        ),
        # numpy's global seed is set, yet a fresh Generator in the training loop takes OS entropy
        Invalid(
            "import numpy as np\nimport torch\n\ndef main():\n    np.random.seed(0)\n"
            "    torch.manual_seed(0)\n    model = torch.nn.Linear(4, 4)\n    for step in range(3):\n"
            "        idx = np.random.default_rng().permutation(8)\n        loss = model(x[idx]).sum()\n"
            "        loss.backward()\n\nif __name__ == '__main__':\n    main()\n",
            line=9, message_contains="fresh OS entropy",
        ),
        # DGL's edge dropping draws from torch: named as torch's, not dgl's
        Invalid(
            "import dgl\nimport numpy as np\nnp.random.seed(0)\ndgl.seed(0)\n"
            "aug = dgl.transforms.DropEdge(0.2)\n",
            line=3, message_contains="the torch RNG",
        ),
        # the helper seeds CUDA's generators and not torch's own: the CPU draws are unseeded, and
        # the line to mend is the seed taken for torch's
        Invalid(
            {
                "utils.py": "import random\nimport torch\n\ndef set_seed(s):\n    random.seed(s)\n"
                "    torch.cuda.manual_seed_all(s)\n",
                "train.py": "import torch\nfrom utils import set_seed\n\nset_seed(0)\n"
                "model = torch.nn.Linear(4, 4)\nloss = model(x).sum()\nloss.backward()\n",
            },
            line=6, path="utils.py", message_contains="CUDA generators only",
        ),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        seeding = project_seeding(project)
        # each training script on its own: the one that trains must seed what it draws
        # (minimal.py seeding torch does not make train.py reproducible)
        training = {entry for entry, reached in seeding.reach.items()
                    if any(is_backward(e) for q in reached for e in cls._events(project, q))}
        draws: list[tuple[FunctionInfo, Event, Draw]] = []
        trains = False
        for fn, event in project.events("call"):
            trains = trains or event.method == "backward"
            draw = draw_of(event)
            if draw is not None and not takes_every_neighbour(fn, event):
                draws.append((fn, event, draw))
        draws.sort(key=lambda d: (d[0].path, d[1].span.line, d[1].span.column))
        out: list[Finding] = []
        reported: set[tuple[str, str]] = set()
        # a test suite is no run that must reproduce: its fixed seeds make its fixtures (a
        # script among the tests, too)
        tests = {p.entry for p in project.programs() if p.kind == TEST or is_test_path(p.entry)}
        for fn, event, draw in draws:
            if is_test_code(fn):
                continue
            # a draw is judged by one program that runs it (a training one first): what another
            # experiment's script seeds says nothing about this one
            entries = sorted((e for e in seeding.running(fn.qualname) if e not in tests),
                             key=lambda e: (e not in training, e))
            programs = [p for p in project.programs_with(fn.path) if p.kind != TEST]
            if not entries:  # judged by the programs importing it: not those seen to pass it by
                programs = [p for p in programs if not seeding.passes_by(project, p.entry, fn)]
            files: frozenset[str] = frozenset().union(*(p.files for p in programs))
            if draw.unseedable:
                # no global seed reaches a fresh generator: any seeding of a program running it
                # (or, when no call reaches it, of a program importing it) is defeated
                here = seeding.defeated_at(project, fn)
                if here:
                    out.append(cls.make_finding(
                        fn.path, event.span,
                        f"`{draw.what}` {FRESH}: no seed reaches it, although the "
                        f"pipeline seeds {', '.join(sorted(here))}",
                        fix="pass a seed: `np.random.default_rng(seed)`",
                    ))
                continue
            if entries and not any(e in training for e in entries) \
                    and any(p.entry in training for p in programs):
                # only tools and tests call it (a test that imports a package whose modules seed
                # as they load); the training programs holding its file are what must reproduce,
                # and they reach it some way the calls do not show (a registry): judged below
                entries = []
            reached = bool(entries)
            if entries:
                owns = [(e, seeding.seeded_from(e)) for e in entries]
                lacking = [(e, own) for e, own in owns if own and draw.family not in own]
                if lacking:
                    entries, here = [lacking[0][0]], lacking[0][1]
                elif any(draw.family in own for _, own in owns):
                    continue
                elif not any(e in training for e in entries):
                    continue  # programs that neither train nor seed (a random config generator)
                else:
                    here = set()
            else:
                # no call reaches it (a dataset method, a process target): the programs whose
                # imports hold its file, any of which may be the one that runs it. When every one
                # that trains seeds other RNGs but not this one, nor does any code of its own (a
                # seeding helper its run reaches only through a registry), it is reported; else
                # they are judged by the seeding all of their own code holds: one that seeds
                # nothing may be what runs it (an unseeded tool), and a seed in another
                # program's code says nothing of that. Code whose programs seed nothing (a
                # library) leaves seeding to the caller
                runs = [(p.entry, seeding.seeded_from(p.entry), seeding.seeded_within(p.files))
                        for p in programs if p.entry in training]
                lacking = [(e, run) for e, run, own in runs if run and draw.family not in run | own]
                if lacking and len(lacking) == len(runs):
                    entries, here = [lacking[0][0]], lacking[0][1]
                else:
                    owned = [seeding.seeded_from(p.entry) | seeding.seeded_within(p.files)
                             for p in programs if p.kind != LIBRARY]
                    seeded_by_one = set().union(*owned)
                    here = set.intersection(*map(set, owned)) if owned else set()
                    if draw.family in seeded_by_one:
                        continue
                    if not here and any(p.kind == LIBRARY for p in programs):
                        # library code no entry program runs: only seeding done where it is
                        # called (its own function, what that calls) says its runs must
                        # reproduce; a dataset's fixed split seed elsewhere in it does not
                        here = seeding.seeded_on_call(project, fn.qualname)
                    if not here:
                        continue
            if draw.family in here:
                continue
            # a seed of the library's narrower generator taken for its own: the line to mend
            narrower = _NARROWER.get(draw.family)
            near = seeding.call_for(narrower[0], entries, None if entries else files) \
                if narrower and narrower[0] in here else None
            # the seeding that leaves it out: where its seed belongs
            # (a draw no call reaches is judged by the programs importing it: which of their
            # seedings it belongs to is a guess, so it stays at the draw)
            home = seeding.home(entries) if here and not near and entries else None
            key = ((near.function.path, str(near.event.span.line)) if near
                   else (home.function.path, str(home.event.span.line), draw.family) if home
                   else (fn.path, draw.family) if here else ("", draw.family))
            if key in reported or not (here or trains):
                continue
            reported.add(key)
            finding = cls._unseeded(fn, event, draw, here, seeding, entries, files, near, home)
            # no call reaches a draw in a module other programs import: which of them runs it
            # is a guess (readers judged such findings right 0 of 3 times)
            finding.preview = not reached and bool(here) and fn.path not in {p.entry for p in programs}
            out.append(finding)
        return out

    @staticmethod
    def _events(project: Project, qualname: str) -> list[Event]:
        fn = project.function(qualname)
        return fn.events if fn is not None else []

    @classmethod
    def _unseeded(cls, fn: FunctionInfo, event: Event, draw: Draw, seeded: set[str], seeding,
                  entries: list[str], files: frozenset[str],
                  near: Optional[SeedCall] = None, home: Optional[SeedCall] = None) -> Finding:
        """``entries``: the programs running the draw (none: judged by the ``files`` of the
        programs importing it); only their sites are named. Where the finding goes: ``near``, the
        call seeding only a narrower generator of the draw's library; else ``home``, the first
        call of the seeding that leaves the draw's RNG out; else the draw."""
        unreached = [c for c in seeding.unreached_for(draw.family) if c.function.path in files]
        note = ""
        if unreached:
            helper = unreached[0].function
            note = f"; `{helper.display}` would seed it but is never called"
        fix = f"seed it with the others: `{_SEED_CALL[draw.family]}`"
        if near is not None:
            return cls.make_finding(
                near.function.path, near.event.span,
                f"`{near.event.func}` seeds {_NARROWER[draw.family][1]} only: the {draw.family} RNG, "
                f"which is never seeded, is what `{draw.what}` draws from "
                f"({fn.path}:{event.span.line}): runs with the same seed differ{note}",
                fix=fix,
            )
        if home is not None:
            return cls.make_finding(
                home.function.path, home.event.span,
                f"the seeding in `{home.function.display}` covers {', '.join(sorted(seeded))} but not "
                f"the {draw.family} RNG, which is never seeded: `{draw.what}` draws from it "
                f"({fn.path}:{event.span.line}), so runs with the same seed differ{note}",
                fix=fix,
            )
        if seeded:
            where = seeding.where(next(iter(sorted(seeded))), entries, None if entries else files)
            return cls.make_finding(
                fn.path, event.span,
                f"`{draw.what}` draws from the {draw.family} RNG, which is never seeded, while "
                f"{', '.join(sorted(seeded))} {'is' if len(seeded) == 1 else 'are'} seeded"
                f"{f' (in `{where}`)' if where else ''}: runs with the same seed differ{note}",
                fix=fix,
            )
        finding = cls.make_finding(
            fn.path, event.span,
            f"nothing in the project seeds an RNG; `{draw.what}` draws from the {draw.family} RNG, "
            f"so no two training runs can be compared step by step{note}",
            fix=f"seed every RNG once at start-up ({', '.join(sorted(set(_SEED_CALL.values())))})",
        )
        finding.severity = Severity.INFO
        return finding

    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """The missing seeding call, right after the last seeding call of the function whose
        seeding the finding names (or, for a finding at the draw, of the seeding of the programs
        lacking it: a shared ``seed_everything()`` rather than one script's own lines), with the
        same seed argument; the module imported there if it is not yet."""
        family = next((f for f in sorted(FAMILIES, key=len, reverse=True)
                       if f"the {f} RNG, which is never seeded" in finding.message), None)
        if family is None:
            return None  # nothing seeded at all, or a fresh generator: no existing seed to follow
        seeding = project_seeding(fixer.project)
        calls = seeding.calls
        at = next((c for c in calls if c.function.path == finding.path and c.event.span.line == finding.line), None)
        if at is None:  # reported at the draw: the seeding of the programs that leave it out
            lacking = [e for e in seeding.reach if seeding.seeded_from(e) and family not in seeding.seeded_from(e)]
            at = seeding.home(lacking) if lacking else None
        seeds = [c for c in calls if at is not None and c.function.qualname == at.function.qualname
                 and (c.event.args or "seed" in c.event.kwargs)]
        if not seeds:
            return None
        anchor = max(seeds, key=lambda c: (c.event.span.line, c.event.span.column))
        src = fixer.source(anchor.function.path)
        node = src.node_at(anchor.event.span, cst.Call) if src else None
        statement = src.statement_of(node) if src and node else None
        if src is None or statement is None:
            return None
        seed = anchor.event.args[0] if anchor.event.args else anchor.event.kwargs["seed"]
        module, template, asname = _SEEDER[family]
        name, edits = src.import_name(module, asname)
        call = template.format(name=name, seed=seed)
        return Fix(f"seed the {family} RNG with the others: `{call}` in `{anchor.function.display}`",
                   [*edits, src.insert_after(statement, call)])

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """Confirmed when the RNG was drawn from and never seeded during the run; refuted when
        it was seeded after all (e.g. by a library, or a path the static pass did not follow).
        A fresh generator: confirmed when the run built it here without a seed while it seeded
        a global RNG."""
        if not evidence:
            return None
        if FRESH in finding.message:
            built = evidence.calls_at(finding.path, finding.line, "fresh_rng", finding.end_line)
            seeded = sorted(evidence.seeded_rngs)
            if not built or not seeded:
                return None  # the line did not run (unexercised), or nothing was seeded
            return Verdict(Status.CONFIRMED, [
                f"np.random.default_rng() ran {sum(c.count for c in built)}x here without a "
                f"seed (fresh OS entropy each run); the run seeded {', '.join(seeded)}"])
        family = next((f for f in sorted(FAMILIES, key=len, reverse=True)
                       if f"the {f} RNG" in finding.message), None)
        if family is None:
            return None
        rng = _PROBE_NAMES.get(family, family)
        draws = evidence.rng_draws.get(rng)
        seeded = evidence.seeded_rngs
        if rng in seeded:
            where = next((f"{s.path}:{s.line}" for s in evidence.seeds if s.rng == rng), "")
            return Verdict(Status.REFUTED, [f"the {family} RNG was seeded at run time ({where})"])
        if draws is not None and draws.count:
            return Verdict(Status.CONFIRMED, [
                f"the {family} RNG was drawn from {draws.count}x (first at {draws.path}:{draws.line}) "
                f"and never seeded; seeded: {', '.join(sorted(seeded)) or 'none'}"])
        return Verdict(Status.UNEXERCISED, [f"the {family} RNG was never drawn from"])


# family -> (module to import, the seeding call, the usual import alias)
_SEEDER = {
    "random": ("random", "{name}.seed({seed})", None),
    "numpy": ("numpy", "{name}.random.seed({seed})", "np"),
    "torch": ("torch", "{name}.manual_seed({seed})", None),
    "torch.cuda": ("torch", "{name}.cuda.manual_seed_all({seed})", None),
    "dgl": ("dgl", "{name}.seed({seed})", None),
}
# family -> the narrower generator of its library whose seed is taken for the family's, and
# what that seed covers (`torch.cuda.manual_seed_all` leaves the CPU generator as it was)
_NARROWER = {"torch": ("torch.cuda", "the CUDA generators")}
_PROBE_NAMES = {"torch.cuda": "cuda"}  # the probe's names of the RNGs (auditor.probe.evidence)
