"""What the static pass knows about the global random number generators of a training pipeline.

Five RNGs matter to a GraphMAE run: Python's ``random``, NumPy's global ``numpy.random``, torch's
CPU generator, the CUDA generators, and DGL's own C++ generator (``dgl.sampling`` and the DGL
samplers). A call either *seeds* some of them, *draws* from one, or neither.

API (used by GM603 incomplete-seeding and GM604 nondeterminism-flags):

* :func:`seeded_by` — the RNGs a qualified callee seeds (``torch.manual_seed`` -> torch, cuda).
* :func:`draw_of` — which RNG a call event draws from, and why (``torch.randperm`` -> torch).
* :func:`takes_every_neighbour` — a DGL neighbour sampler whose fanouts are all -1 (every
  neighbour) or 0 (none), as the function builds them: it draws nothing.
* :func:`project_seeding` — every seeding call of a project, and whether an entry point reaches
  it (a ``set_seed()`` helper that nothing calls seeds nothing).

Everything works on :class:`auditor.static.facts.Event` summaries, so it never imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from auditor.static.conditions import normalise
from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import Event, FunctionInfo
from auditor.static.programs import runs
from auditor.static.project import Project
from auditor.static.texts import top_level_items

RANDOM, NUMPY, TORCH, CUDA, DGL = "random", "numpy", "torch", "torch.cuda", "dgl"
FAMILIES = (RANDOM, NUMPY, TORCH, CUDA, DGL)
_ALL_BUT_DGL = (RANDOM, NUMPY, TORCH, CUDA)

# `torch.manual_seed` seeds the CPU generator and every CUDA device's generator.
SEEDERS: dict[str, tuple[str, ...]] = {
    "random.seed": (RANDOM,),
    "numpy.random.seed": (NUMPY,),
    "torch.manual_seed": (TORCH, CUDA),
    "torch.random.manual_seed": (TORCH, CUDA),
    "torch.cuda.manual_seed": (CUDA,),
    "torch.cuda.manual_seed_all": (CUDA,),
    "torch.cuda.random.manual_seed": (CUDA,),
    "torch.cuda.random.manual_seed_all": (CUDA,),
    "dgl.seed": (DGL,),
    "dgl.random.seed": (DGL,),
    # framework helpers that seed random, numpy and torch (and CUDA) in one call
    "lightning.seed_everything": _ALL_BUT_DGL,
    "lightning.pytorch.seed_everything": _ALL_BUT_DGL,
    "pytorch_lightning.seed_everything": _ALL_BUT_DGL,
    "lightning_fabric.utilities.seed.seed_everything": _ALL_BUT_DGL,
    "transformers.set_seed": _ALL_BUT_DGL,
    "accelerate.utils.set_seed": _ALL_BUT_DGL,
}

_RANDOM_DRAWS = {
    "random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle", "gauss",
    "normalvariate", "lognormvariate", "betavariate", "expovariate", "gammavariate", "triangular",
    "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits", "randbytes",
}
# numpy.random attributes that are not draws from the global RandomState
_NUMPY_NON_DRAWS = {
    "seed", "default_rng", "RandomState", "Generator", "SeedSequence", "get_state", "set_state",
    "BitGenerator", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64",
}
_TORCH_DRAWS = {
    "torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like",
    "torch.randn_like", "torch.randint_like", "torch.bernoulli", "torch.multinomial",
    "torch.normal", "torch.poisson",
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout",
    "torch.nn.functional.feature_alpha_dropout", "torch.nn.functional.gumbel_softmax",
    "torch.nn.functional.rrelu",
    "torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d", "torch.nn.Dropout3d",
    "torch.nn.AlphaDropout", "torch.nn.FeatureAlphaDropout", "torch.nn.RReLU",
    "torch.utils.data.random_split", "torch.utils.data.RandomSampler",
    "torch.utils.data.SubsetRandomSampler", "torch.utils.data.WeightedRandomSampler",
}
# layers whose constructor initialises weights from torch's generator
_TORCH_INIT_LAYERS = {
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "RNN", "LSTM", "GRU",
    "MultiheadAttention", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer",
}
_TORCH_NON_RANDOM_INIT = {"calculate_gain", "constant_", "zeros_", "ones_", "eye_", "dirac_"}
_TENSOR_DRAW_METHODS = {
    "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_",
    "log_normal_",
}
_SHUFFLING_LOADERS = {
    "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
    "dgl.dataloading.GraphDataLoader", "dgl.dataloading.DataLoader",
}
_DGL_DRAW_PREFIXES = (
    "dgl.sampling.", "dgl.random.choice", "dgl.rand_graph", "dgl.rand_bipartite",
    "dgl.sample_neighbors", "dgl.random_walk", "dgl.node2vec_random_walk",
    "dgl.dataloading.NeighborSampler", "dgl.dataloading.MultiLayerNeighborSampler",
    "dgl.dataloading.LaborSampler", "dgl.dataloading.SAINTSampler",
    "dgl.dataloading.ShaDowKHopSampler", "dgl.dataloading.negative_sampler.",
)
# DGL transforms that sample with torch (`torch.distributions.Bernoulli`, `randint`, a shuffle
# through the torch backend): torch's generator, not DGL's, decides what they drop or add
_DGL_TORCH_TRANSFORMS = {f"{module}.{name}" for module in ("dgl", "dgl.transforms")
                         for name in ("DropEdge", "DropNode", "FeatMask", "NodeShuffle", "AddEdge")}


@dataclass
class Draw:
    """A call that draws from a global RNG (``unseedable``: a fresh generator no seed reaches)."""

    family: str
    what: str
    unseedable: bool = False


def seeded_by(func: str) -> tuple[str, ...]:
    """The RNGs a call to the qualified ``func`` seeds (empty: none)."""
    return SEEDERS.get(func.removesuffix("()"), ())


def _on_cuda(event: Event) -> bool:
    device = event.kwargs.get("device", "")
    return "cuda" in device


def draw_of(event: Event) -> Optional[Draw]:
    """Which global RNG a call event draws from, or None.

    Calls given their own ``generator=`` draw from a private generator and are not global draws.
    """
    if event.kind != "call" or "generator" in event.kwargs:
        return None
    func = event.func.removesuffix("()")
    root, _, rest = func.partition(".")
    name = func.rsplit(".", 1)[-1]
    if root == "random" and rest in _RANDOM_DRAWS:
        return Draw(RANDOM, func)
    if func.startswith("numpy.random."):
        attr = func[len("numpy.random.") :]
        if attr == "default_rng" and not event.args and "seed" not in event.kwargs:
            return Draw(NUMPY, "numpy.random.default_rng() without a seed", unseedable=True)
        if "." not in attr and attr not in _NUMPY_NON_DRAWS:
            return Draw(NUMPY, func)
        return None
    if func in _TORCH_DRAWS:
        return Draw(CUDA if _on_cuda(event) else TORCH, func)
    if func.startswith("torch.nn.init.") and name not in _TORCH_NON_RANDOM_INIT:
        return Draw(TORCH, f"{func} (weight initialisation)")
    if func.startswith("torch.nn.") and name in _TORCH_INIT_LAYERS:
        return Draw(TORCH, f"{func} (weight initialisation)")
    if func.startswith("dgl.nn.") and name.endswith("Conv"):
        return Draw(TORCH, f"{func} (weight initialisation)")
    if func in _SHUFFLING_LOADERS and event.kwargs.get("shuffle") == "True":
        return Draw(TORCH, f"{name}(shuffle=True) without a seeded generator")
    if func in _DGL_TORCH_TRANSFORMS:
        return Draw(TORCH, func)
    if func.startswith(_DGL_DRAW_PREFIXES) and not name.startswith("_"):
        return Draw(DGL, func)
    if event.method in _TENSOR_DRAW_METHODS and event.receiver and root not in ("numpy", "random"):
        return Draw(TORCH, f"Tensor.{event.method}")
    return None


_NEIGHBOUR_SAMPLERS = ("dgl.dataloading.NeighborSampler", "dgl.dataloading.MultiLayerNeighborSampler")
_FIXED_FANOUTS = {"-1", "0"}  # every neighbour, no neighbour: no choice to draw
_FIXED_DICT = re.compile(r"\{[^{}:]+:\s*(-1|0)\s+for\s.*\}", re.S)  # `{etype: -1 for etype in g.etypes}`
MAX_FANOUT_DEPTH = 3


def takes_every_neighbour(fn: FunctionInfo, event: Event) -> bool:
    """``event`` builds a DGL neighbour sampler whose every fanout is -1 or 0: literal lists
    (``[-1, -1]``, ``[-1] * k``) or names ``fn`` binds only to such values, per edge type too
    (``fanout = {r: 0 for r in etypes}`` then ``fanout[r] = -1``)."""
    if event.kind != "call" or event.func.removesuffix("()") not in _NEIGHBOUR_SAMPLERS:
        return False
    return _fixed_fanouts(fn, fn.position(event), event.argument("fanouts"), 0)


def _fixed_fanouts(fn: FunctionInfo, index: int, text: str, depth: int) -> bool:
    value = normalise(text)
    if value in _FIXED_FANOUTS or _FIXED_DICT.fullmatch(text.strip()):
        return True
    if depth >= MAX_FANOUT_DEPTH or not value:
        return False
    listed = re.fullmatch(r"\[(.*)\](\*[\w.]+)?|\{(.*)\}", value)
    if listed:
        items = top_level_items(listed.group(1) if listed.group(3) is None else listed.group(3))
        if listed.group(3) is not None:  # a dict literal: its values
            items = [i.split(":", 1)[1] if ":" in i else "?" for i in items]
        return all(_fixed_fanouts(fn, index, i, depth + 1) for i in items if i)
    if not re.fullmatch(r"\w+", value):
        return False
    binds = [e for e in fn.events[:index] if e.kind in ("assign", "augassign")
             and value in e.targets and not e.text.startswith(("for ", "async for "))]
    return bool(binds) and all(
        e.kind == "assign" and re.match(rf"{value}\s*(\[[^=]*\])?\s*=[^=]", e.text) is not None
        and _fixed_fanouts(fn, index, e.text.split("=", 1)[1], depth + 1) for e in binds)


@dataclass
class SeedCall:
    function: FunctionInfo
    event: Event
    families: tuple[str, ...]
    reached: bool  # an entry point (a module body) reaches the function holding the call


@dataclass
class Seeding:
    calls: list[SeedCall] = field(default_factory=list)
    # program (its entry file, auditor/static/programs.py) -> the functions it runs
    reach: dict[str, set[str]] = field(default_factory=dict)
    # answers by program: asked once per draw and program that runs it (a library imported by
    # every script of a tree: draws x programs x seeding calls, cubic in the tree)
    _from: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)
    _within: dict[frozenset[str], frozenset[str]] = field(default_factory=dict, repr=False,
                                                          compare=False)
    _runs_in: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    def seeded_from(self, entry: str) -> frozenset[str]:
        """RNGs seeded by the calls one program runs."""
        if entry not in self._from:
            reached = self.reach.get(entry, set())
            self._from[entry] = frozenset(f for c in self.calls if c.function.qualname in reached
                                          for f in c.families)
        return self._from[entry]

    def seeded_on_call(self, project: Project, qualname: str) -> set[str]:
        """RNGs seeded by the function ``qualname`` itself or a function its calls reach."""
        reached = {qualname, *project.reachable_from(qualname)}
        return {f for c in self.calls if c.function.qualname in reached for f in c.families}

    def running(self, qualname: str) -> list[str]:
        """The programs that run the function ``qualname``."""
        return [entry for entry, reached in self.reach.items() if qualname in reached]

    @property
    def seeded(self) -> set[str]:
        """RNGs seeded by a call that actually runs (reached from an entry point)."""
        return {f for c in self.calls if c.reached for f in c.families}

    def run_with(self, project: Project, path: str) -> list[SeedCall]:
        """The seeding calls that the programs running the file at ``path`` reach (the module
        bodies of what they import included): another script's seeding is not among them."""
        reached = set().union(set(), *(runs(project, p.roots) for p in project.programs_with(path)))
        return [c for c in self.calls if c.function.qualname in reached]

    def unreached_for(self, family: str) -> list[SeedCall]:
        """Seeding calls of ``family`` sitting in functions that nothing calls."""
        return [c for c in self.calls if not c.reached and family in c.families]

    def passes_by(self, project: Project, entry: str, fn: FunctionInfo) -> bool:
        """The program ``entry`` runs functions of ``fn``'s file (not just its module body) and
        never ``fn``: its calls into that file are followed, and they lead elsewhere; what it
        seeds says nothing about ``fn``'s draws."""
        reached = self.reach.get(entry, set())
        if fn.qualname in reached:
            return False
        if entry not in self._runs_in:
            self._runs_in[entry] = frozenset(
                f.path for q in reached for f in [project.functions.get(q)]
                if f is not None and f.name != MODULE_SCOPE)
        return fn.path in self._runs_in[entry]

    def seeded_within(self, files: frozenset[str]) -> frozenset[str]:
        """RNGs seeded by a call in one of ``files`` (a program's), wherever it is called from:
        what a program's own code seeds, for code that no call of it reaches statically."""
        if files not in self._within:
            self._within[files] = frozenset(f for c in self.calls if c.function.path in files
                                            for f in c.families)
        return self._within[files]

    def defeated_at(self, project: Project, fn: FunctionInfo) -> set[str]:
        """The global seeds a fresh, unseeded generator built in ``fn`` defeats: those of the
        programs that run ``fn`` (or, when no call reaches it, of the programs importing it)."""
        entries = self.running(fn.qualname)
        if entries:
            return set().union(*(self.seeded_from(e) for e in entries))
        return set().union(*(self.seeded_from(p.entry) | self.seeded_within(p.files)
                             for p in project.programs_with(fn.path)))

    def call_for(self, family: str, entries: Optional[list[str]] = None,
                 files: Optional[frozenset[str]] = None) -> Optional[SeedCall]:
        """The first reached call seeding ``family`` (in one of the programs ``entries``, or in
        the ``files``, when given), or None."""
        reached = set().union(*(self.reach[e] for e in entries)) if entries else None
        return next((c for c in self.calls if family in c.families
                     and (c.function.path in files if files is not None else c.reached)
                     and (reached is None or c.function.qualname in reached)), None)

    def home(self, entries: list[str]) -> Optional[SeedCall]:
        """Where the programs ``entries`` seed their RNGs: the first call of the function whose
        calls seed the most of them (a ``seed_everything()`` helper), the place a missing seed
        belongs; None when they seed nothing."""
        reached = set().union(*(self.reach[e] for e in entries))
        calls = [c for c in self.calls if c.reached and c.function.qualname in reached]
        by_function: dict[str, list[SeedCall]] = {}
        for c in calls:
            by_function.setdefault(c.function.qualname, []).append(c)
        if not by_function:
            return None
        best = max(sorted(by_function), key=lambda q: (
            len({f for c in by_function[q] for f in c.families}), len(by_function[q])))
        return min(by_function[best], key=lambda c: (c.event.span.line, c.event.span.column))

    def where(self, family: str, entries: Optional[list[str]] = None,
              files: Optional[frozenset[str]] = None) -> str:
        """``utils.py:seed_everything`` (the function of :meth:`call_for`), or ''."""
        call = self.call_for(family, entries, files)
        return call.function.display if call is not None else ""


def project_seeding(project: Project) -> Seeding:
    """Every call that seeds a global RNG, following seeding helpers (``set_seed()``) across files:
    a seeding call counts as run when a program reaches its function through the call graph.
    Programs are the tree's entry points with their imports, and each file no entry point
    imports, on its own (library code whose module body still runs when imported)."""
    reach: dict[str, set[str]] = {}
    for program in project.programs():
        key = f"{program.entry}:{program.roots[0]}" if program.entry in reach else program.entry
        reach[key] = runs(project, program.roots)
    running = {p for program in project.programs() for p in program.files}
    for path, facts in list(project.files.items()):
        if path not in running:
            reach[path] = runs(project, [f"{facts.module}.{MODULE_SCOPE}"])
    reached: set[str] = set().union(*reach.values()) if reach else set()
    out = Seeding(reach=reach)
    for fn, event in project.events("call"):
        families = seeded_by(event.func)
        if families:
            out.calls.append(SeedCall(fn, event, families, fn.qualname in reached))
    return out
