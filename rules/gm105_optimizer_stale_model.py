"""GM105 optimizer-stale-model: the optimizer holds the parameters of another model instance
than the one trained."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.dataflow import held_container
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.training import (Action, Origin, OptimizerBuild, Training, TrainingLoop,
                                     is_optimizer_class)



# a notebook's cells (the examples): weight-decay groups from a helper, a ModuleDict called by
# its entries, a forward helper shared by the training step and an evaluation of another
# instance; `{rebuild}` may build the model again after the optimizer
_NOTEBOOK_CELLS = (
    "import torch\nfrom torch import nn\n"
    "def build():\n"
    "    return nn.ModuleDict({'enc': nn.Linear(4, 4), 'drop': nn.Dropout(0.1)})\n"
    "def groups(m, wd):\n"
    "    decay = [p for n, p in m.named_parameters() if p.ndim > 1]\n"
    "    rest = [p for n, p in m.named_parameters() if p.ndim <= 1]\n"
    "    return [{'params': decay, 'weight_decay': wd}, {'params': rest, 'weight_decay': 0.0}]\n"
    "def fwd(m, x):\n"
    "    return m['drop'](m['enc'](x))\n"
    "def step(m, o, x):\n"
    "    o.zero_grad()\n"
    "    loss = fwd(m, x).pow(2).mean()\n"
    "    loss.backward()\n"
    "    o.step()\n"
    "@torch.no_grad()\n"
    "def evaluate(m, x):\n"
    "    return fwd(m, x).mean()\n"
    "model = build()\n"
    "opt = torch.optim.AdamW(groups(model, 0.1))\n"
    "{rebuild}"
    "for i in range(3):\n"
    "    step(model, opt, torch.randn(2, 4))\n"
    "other = build()\n"
    "print(evaluate(other, torch.randn(2, 4)))\n"
)

# a LightningModule that builds its model again in the hook `{hook}` (the examples)
_LIT_REBUILD = (
    "import pytorch_lightning as pl\nimport torch\nfrom torch import nn\n"
    "def build():\n"
    "    return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n"
    "class Lit(pl.LightningModule):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.model = build()\n"
    "    def {hook}(self, *args):\n"
    "        torch.manual_seed(0)\n"
    "        self.model = build()\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        return self.model(batch).pow(2).mean()\n"
    "    def configure_optimizers(self):\n"
    "        return {{'optimizer': torch.optim.Adam(self.model.parameters(), lr=1e-3)}}\n"
)

# a Trainer keeping the model it is given and stepping the optimizer it is given (the examples)
_KEEPING_TRAINER = (
    "class Trainer:\n"
    "    def __init__(self, model, optimizer):\n"
    "        self.model = model\n"
    "        self.optimizer = optimizer\n"
    "    def step(self, x):\n"
    "        loss = self.model(x).sum()\n"
    "        self.optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)


# a loop's base class whose constructor builds the model, the optimizer and runs a hook; a mixin
# composed beside it rebuilds the model in the hook; `{order}`: the constructor's calls
_REBUILT_IN_HOOK = (
    "import torch\nfrom torch import nn\n"
    "class LoopBase:\n"
    "    def __init__(self):\n"
    "{order}"
    "    def configure_model(self):\n"
    "        pass\n"
    "    def build_model(self):\n"
    "        return nn.Linear(4, 4)\n"
    "    def build_optimizer(self):\n"
    "        return torch.optim.Adam(self.model.parameters())\n"
    "    def fit(self, loader):\n"
    "        for x in loader:\n"
    "            loss = self.loss(x)\n"
    "            self.optimizer.zero_grad()\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
    "class SeededInit:\n"
    "    def configure_model(self):\n"
    "        torch.manual_seed(0)\n"
    "        self.model = self.build_model()\n"
    "        super().configure_model()\n"
    "class Trainer(SeededInit, LoopBase):\n"
    "    def loss(self, x):\n"
    "        return self.model(x).pow(2).mean()\n"
    "def main(loader):\n"
    "    Trainer().fit(loader)\n"
)
_BUILD, _OPTIM, _HOOK = ("        self.model = self.build_model()\n", "        self.optimizer = self.build_optimizer()\n",
                         "        self.configure_model()\n")


class OptimizerStaleModel(Rule):
    code = "GM105"
    name = "optimizer-stale-model"
    severity = Severity.ERROR
    summary = "optimizer built over another model instance than the one trained"
    prefilter = ("optim", ".backward(", "deepcopy")
    doc = """
## What it does
For every training loop, follows two objects back to where they were created, across
assignments, `self.` attributes, function parameters and return values in any file:

- the optimizer that `step()`s, and the module(s) whose `.parameters()` it was given;
- the model whose forward produces the backpropagated loss.

It reports when the trained model was created by another statement than the optimizer's model:
re-created (`model = GraphMAE(...)` after the optimizer), deep-copied (`copy.deepcopy(model)`, for
example in a `Trainer.__init__`), or when the optimizer got the parameters of a throwaway
instance (`Adam(GraphMAE(cfg).parameters())`). It also reports replacing a submodule or parameter
(`model.decoder = nn.Linear(...)`, `model.mask_token = nn.Parameter(...)`) after the optimizer was
built. Calls that return the same module (`.to(device)`, `.cuda()`, `DistributedDataParallel(model)`,
`torch.compile(model)`) keep the parameters and are not reported.

## Why is this bad?
The optimizer updates tensors the training forward never uses, so the trained model's parameters
stay at their initialisation (their gradients just accumulate). In a GraphMAE the encoder,
decoder and mask token all stay random: the reconstruction is noise shaped by the architecture,
while a replaced submodule leaves only that part untrained — for example a decoder head
re-initialised after the optimizer was built decodes the masked nodes from random weights.

## Example
```python
import torch
from torch import nn


class GraphMAE(nn.Module):
    ...


model = GraphMAE(in_dim)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
model = GraphMAE(in_dim).to(device)   # re-created: the optimizer holds the old parameters
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Use instead
```python
import torch
from torch import nn


class GraphMAE(nn.Module):
    ...


model = GraphMAE(in_dim).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Fix safety
No automatic fix: build the optimizer after the model is final (moved, wrapped, loaded).

## References
- https://pytorch.org/docs/stable/optim.html#constructing-it
"""

    VALID = [
        Valid(_REBUILT_IN_HOOK.format(order=_BUILD + _HOOK + _OPTIM)),
        # rebuilt in `setup`, which Lightning runs before `configure_optimizers`
        Valid(_LIT_REBUILD.format(hook="setup")),
        # a linear probe trained on embeddings the encoder returns detached: the probe's own
        # optimizer is the right one, the encoder is not trained by that loss
        Valid(
            "import torch\n"
            "from torch import nn\n"
            "\n"
            "\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            "\n"
            "    def forward(self, x):\n"
            "        return self.lin(x)\n"
            "\n"
            "    def get_embedding(self, x):\n"
            "        out = self.lin(x)\n"
            "        return out.detach()\n"
            "\n"
            "\n"
            "def main(loader, x, y):\n"
            "    model = Encoder()\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    for batch in loader:\n"
            "        loss = model(batch).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    emb = model.get_embedding(x)\n"
            "    probe = Encoder()\n"
            "    opt2 = torch.optim.Adam(probe.parameters())\n"
            "    for _ in range(10):\n"
            "        loss2 = nn.functional.cross_entropy(probe(emb), y)\n"
            "        opt2.zero_grad()\n"
            "        loss2.backward()\n"
            "        opt2.step()\n"
        ),
        # .to() returns the same module: the optimizer's parameters are the trained ones
        Valid(
            "import torch\nfrom torch import nn\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "model = model.to('cpu')\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n"
        ),
        # a deep copy kept for EMA / best weights is not trained
        Valid(
            "import copy\nimport torch\nfrom torch import nn\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "best = copy.deepcopy(model)\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n"
        ),
        # re-created, then a new optimizer built over the new instance
        Valid(
            "import torch\nfrom torch import nn\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "model = nn.Linear(4, 8)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n"
        ),
        # DDP wrapping after the optimizer shares the parameters
        Valid(
            "import torch\nfrom torch import nn\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "model = DDP(model)\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n"
        ),
        # the same registry-built optimizer, over the model the Trainer keeps as given
        Valid({
            "registry.py": (
                "TABLES = {}\n"
                "def register(name):\n"
                "    def deco(obj):\n"
                "        TABLES[name] = obj\n"
                "        return obj\n"
                "    return deco\n"
                "def build(name, *args, **kwargs):\n"
                "    return TABLES[name](*args, **kwargs)\n"
                "@register('adam')\n"
                "def adam(params, lr):\n"
                "    import torch\n"
                "    return torch.optim.Adam(params, lr=lr)\n"
            ),
            "engine.py": _KEEPING_TRAINER,
            "train.py": (
                "from torch import nn\nfrom registry import build\nfrom engine import Trainer\n"
                "model = nn.Linear(4, 4)\n"
                "trainer = Trainer(model, build('adam', model.parameters(), lr=0.1))\n"
                "for x in data:\n"
                "    trainer.step(x)\n"
            ),
        }),
        # Trainer storing the model it was given, across files
        Valid({
            "engine.py": _KEEPING_TRAINER,
            "train.py": (
                "import torch\nfrom torch import nn\nfrom engine import Trainer\n"
                "model = nn.Linear(4, 4).to('cpu')\n"
                "trainer = Trainer(model, torch.optim.Adam(model.parameters()))\n"
                "for x in data:\n"
                "    trainer.step(x)\n"
            ),
        }),
        # a linear probe on embeddings detached in the same statement: the encoder is not
        # trained by the probe's loss
        Valid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Linear(6, 16)\n"
            "    def forward(self, x):\n"
            "        return self.enc(x)\n"
            "model = Net()\n"
            "head = nn.Linear(16, 2)\n"
            "opt = torch.optim.SGD(head.parameters(), lr=0.1)\n"
            "for x, y in loader:\n"
            "    emb = model.enc(x).detach()\n"
            "    loss = F.cross_entropy(head(emb), y)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a parameter-free scoring module made after the optimizer: nothing of it to train
        Valid(
            "import torch\nfrom torch import nn\n"
            "class Score(nn.Module):\n"
            "    def forward(self, a, b):\n"
            "        return (a * b).sum(-1)\n"
            "def run(model, loader):\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    pred = Score()\n"
            "    for g, a, b in loader:\n"
            "        x = model(g)\n"
            "        loss = -pred(x[a], x[b]).sigmoid().log().mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # each round copies the model and builds its optimizer over the copy
        Valid(
            "import copy\nimport torch\n"
            "def rounds(model, loader):\n"
            "    for r in range(3):\n"
            "        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "        for g, y in loader:\n"
            "            loss = (model(g) - y).pow(2).mean()\n"
            "            opt.zero_grad()\n"
            "            loss.backward()\n"
            "            opt.step()\n"
            "        model = copy.deepcopy(model)\n"
        ),
        # a notebook's cells without a rebuild: the instance built after the optimizer is only
        # evaluated, through the forward helper the training step also calls
        Valid(_NOTEBOOK_CELLS.replace("{rebuild}", "")),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "model = nn.Linear(4, 4)\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n",
            line=5, column=9,
        ),
        # the optimizer over a throwaway instance
        Invalid(
            "import torch\nfrom torch import nn\n"
            "model = nn.Linear(4, 4)\n"
            "opt = torch.optim.Adam(nn.Linear(4, 4).parameters())\n"
            "for x in data:\n"
            "    opt.zero_grad()\n"
            "    model(x).sum().backward()\n"
            "    opt.step()\n",
            line=4,
        ),
        # a Trainer that deep-copies the model it is given, across files
        Invalid({
            "engine.py": "import copy\n" + _KEEPING_TRAINER.replace(
                "(self, model, optimizer):\n        self.model = model",
                "(self, model, optimizer, device):\n        self.model = copy.deepcopy(model).to(device)"),
            "train.py": (
                "import torch\nfrom model import Net\nfrom engine import Trainer\n"
                "model = Net()\n"
                "optimizer = torch.optim.Adam(model.parameters())\n"
                "trainer = Trainer(model, optimizer, 'cpu')\n"
                "for x in data:\n"
                "    trainer.step(x)\n"
            ),
            "model.py": "from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                        "        super().__init__()\n        self.lin = nn.Linear(4, 4)\n",
        }, path="engine.py", line=4, message_contains="copy"),
        # a submodule replaced after the optimizer was built
        Invalid(
            "import torch\nfrom torch import nn\n"
            "def main(model, loader):\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    model.head = nn.Linear(16, 3)\n"
            "    for g in loader:\n"
            "        opt.zero_grad()\n"
            "        model(g).sum().backward()\n"
            "        opt.step()\n",
            line=5,
        ),
        # the optimizer built by a registry's entry, through a lookup that hands the model's
        # parameters on with `*args` (the registry also holds a loss), and a Trainer that
        # deep-copies the model
        Invalid({
            "registry.py": (
                "TABLES = {}\n"
                "def register(kind, name):\n"
                "    def deco(obj):\n"
                "        TABLES.setdefault(kind, {})[name] = obj\n"
                "        return obj\n"
                "    return deco\n"
                "def lookup(kind, name):\n"
                "    return TABLES[kind][name]\n"
                "def build(kind, name, *args, **kwargs):\n"
                "    return lookup(kind, name)(*args, **kwargs)\n"
            ),
            "parts.py": (
                "import torch\nfrom registry import register\n"
                "@register('optimizer', 'adam')\n"
                "def adam(params, lr):\n"
                "    return torch.optim.Adam(params, lr=lr)\n"
                "@register('loss', 'mse')\n"
                "def mse(a, b):\n"
                "    return (a - b).pow(2).mean()\n"
            ),
            "engine.py": "import copy\n" + _KEEPING_TRAINER.replace("self.model = model", "self.model = copy.deepcopy(model)"),
            "train.py": (
                "import parts\nfrom torch import nn\nfrom registry import build\nfrom engine import Trainer\n"
                "def make_optimizer(params, cfg):\n"
                "    return build('optimizer', cfg.name, params, lr=cfg.lr)\n"
                "def main(cfg, data):\n"
                "    model = nn.Linear(4, 4)\n"
                "    trainer = Trainer(model, make_optimizer(model.parameters(), cfg))\n"
                "    for x in data:\n"
                "        trainer.step(x)\n"
                "if __name__ == '__main__':\n"
                "    main(load_config(), load_data())\n"
            ),
        }, path="engine.py", line=4, message_contains="deep copy"),
        # a model given as a parameter (its class unknown here) deep-copied after its optimizer
        Invalid(
            "import copy\nimport torch\n"
            "def finetune(model, loader):\n"
            "    opt = torch.optim.AdamW(model.parameters())\n"
            "    model = copy.deepcopy(model)\n"
            "    for g, y in loader:\n"
            "        loss = (model(g) - y).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=5, message_contains="deep copy",
        ),
        # the step is a closure a factory returns, handed to an engine that calls it: the model
        # it trains is the one rebuilt after the optimizer was made over the first
        Invalid(
            "import torch\n"
            "class Engine:\n"
            "    def __init__(self, process_fn):\n"
            "        self.process_fn = process_fn\n"
            "    def run(self, data, steps):\n"
            "        for _ in range(steps):\n"
            "            self.process_fn(self, data)\n"
            "def make_train_step(model, optimizer):\n"
            "    def train_step(engine, x):\n"
            "        optimizer.zero_grad()\n"
            "        loss = model(x).pow(2).mean()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "    return train_step\n"
            "def main(x):\n"
            "    model = torch.nn.Linear(4, 4)\n"
            "    optimizer = torch.optim.Adam(model.parameters())\n"
            "    model = torch.nn.Linear(4, 4)\n"
            "    trainer = Engine(make_train_step(model, optimizer))\n"
            "    trainer.run(x, 10)\n"
            "if __name__ == '__main__':\n"
            "    main(torch.randn(8, 4))\n",
            line=18, message_contains="new instance",
        ),
        # a LightningModule rebuilding its model in `on_train_start`, which Lightning runs after
        # `configure_optimizers` built the optimizer over the first one
        Invalid(_LIT_REBUILD.format(hook="on_train_start"), line=12, message_contains="a new instance made here"),
        # a notebook's cells: weight-decay groups from a helper, a ModuleDict called by its
        # entries, the model rebuilt after the optimizer (reported there, line 21)
        Invalid(_NOTEBOOK_CELLS.replace("{rebuild}", "model = build()\n"), line=21,
                message_contains="new instance"),
        # the optimizer built before the hook a mixin uses to rebuild the model: it holds the
        # first model's parameters
        Invalid(_REBUILT_IN_HOOK.format(order=_BUILD + _OPTIM + _HOOK), line=6),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        t = Training.of(project)
        return [*cls._stale_instances(t), *cls._replaced_parts(t)]

    @classmethod
    def _optimizer_builds(cls, t: Training, fn: FunctionInfo, i: int, receiver: str
                          ) -> list[tuple[OptimizerBuild, Origin]]:
        """The optimizer constructions a ``step()`` receiver was built by, each with its
        origin (which says through which helper call it came, if any)."""
        builds = {(b.fn.qualname, b.index): b for b in t.optimizers()}
        out = []
        for o in t.origins(fn, receiver, i):
            if o.kind != "new" or not is_optimizer_class(o.cls):
                return []  # an optimizer we cannot follow: no verdict
            build = builds.get((o.fn, o.index))
            if build is None or not (build.modules or build.made or build.handed or build.collected):
                return []
            out.append((build, o))
        return out

    @classmethod
    def _stale_instances(cls, t: Training) -> Iterable[Finding]:
        for loop in t.training_loops():
            for step in loop.of("step"):
                # the backward whose gradients this step applies: the one in the same function
                # (a loop that calls a linear-probe helper holds the helper's own step too)
                backs = [b for b in loop.of("backward") if b.fn is step.fn] or loop.of("backward")
                trained = cls._trained(t, backs)
                for build, made in cls._optimizer_builds(t, step.fn, step.index, step.receiver):
                    # an instance made after the optimizer, by the code that built it, cannot
                    # be among its parameters, whatever the optimizer was given (a function
                    # parameter we cannot follow, say)
                    ordered = {id(o): cls._made_by_a_later_call(t, o, made, loop) for o in trained}
                    later = [o for o in trained if cls._made_after(t, o, made) or ordered[id(o)]]
                    # (a later call in the loop's own function: the rebuild is the defect's line)
                    yield from (cls._stale(t, o, build, made, later=True, hook=None if (
                        h := ordered[id(o)]) is None or h in loop.fn.events else h) for o in later)
                    given = t.param_origins(build, made.via[-1] if made.via else None)
                    if not given or not all(o.known for o in given):
                        continue
                    # judged per program: the instances one program makes, trains and optimizes
                    # (a shared training loop also runs with other scripts' models)
                    stale: list[Origin] = []
                    for program in t.project.programs_with(step.fn.path):
                        if build.fn.path not in program.files:
                            continue
                        mine = [o for o in given if _made_in(t, o, program.files)]
                        stale += [o for o in trained if _made_in(t, o, program.files)
                                  and o not in mine and o not in later and o not in stale]
                    for o in stale:
                        yield cls._stale(t, o, build, made)

    @staticmethod
    def _made_after(t: Training, o: Origin, made: Origin) -> bool:
        """``o`` was made in the optimizer's own function, after it, outside any loop that
        also builds the optimizer (a loop would build the next optimizer over it)."""
        if o.site[0] != made.site[0] or o.site[1] <= made.site[1]:
            return False
        fn = t.project.function(made.site[0])
        if fn is None:
            return False
        build_loops = set(fn.events[made.site[1]].loop_ids)
        return not build_loops & set(fn.events[o.site[1]].loop_ids)

    @staticmethod
    def _made_by_a_later_call(t: Training, o: Origin, made: Origin, loop: TrainingLoop) -> Optional[Event]:
        """``o`` was made by a function that the training loop's own function calls after the
        call that builds the optimizer, before the loop: a LightningModule's ``on_train_start``
        rebuilding ``self.model`` after ``configure_optimizers``, a trainer's ``fit`` calling
        ``self.build_optimizer()`` then ``self.reset_model()``; or by a constructor that builds
        the optimizer then runs a hook that rebuilds the model. The later call, or None."""
        if o.site[0] == made.site[0]:
            return None
        fn = loop.fn
        start = min((k for k, e in enumerate(fn.events) if loop.loop_id in e.loop_ids), default=len(fn.events))
        # the loop's function before the loop; and the function whose call built the optimizer
        # (a constructor: `self.optimizer = self.build_optimizer()`, then `self.configure_model()`)
        frames = [(fn, start)]
        outer = t.project.function(made.via[0][0]) if made.via else None
        if outer is not None and outer is not fn:
            frames.append((outer, len(outer.events)))
        for frame, stop in frames:
            building: Optional[int] = None
            for k, e in enumerate(frame.events[:stop]):
                if e.kind != "call":
                    continue
                for target in t.project.resolve_call(e, frame):
                    reached = {target, *t.project.reachable_from(target)}
                    if building is None and made.fn in reached:
                        building = k
                    elif building is not None and o.site[0] in reached and made.fn not in reached:
                        return e
        return None

    @staticmethod
    def _trained(t: Training, backs: list[Action]) -> list[Origin]:
        """The module instances whose outputs reach these backwards with their autograd
        history: a linear probe on detached / no_grad embeddings does not train the encoder."""
        trained: list[Origin] = []
        for back in backs:
            found = t.loss_slice(back.fn, back.index, live=True)
            # the slice's calls into each function: a helper's parameter holds what these
            # calls pass, not what its other callers do (an evaluation of another instance
            # through the same forward helper)
            entries: dict[str, list[tuple[str, int]]] = {}
            for cfn, k in found:
                if 0 <= k < len(cfn.events) and cfn.events[k].kind == "call":
                    for q in t.resolve(cfn, cfn.events[k]):
                        entries.setdefault(q, []).append((cfn.qualname, k))
            for sfn, j in found:
                # calls inside a module are its submodules; those of the training code a module
                # runs on itself (a LightningModule's `training_step`) are not
                # (one instance: the backward's class, a base or a subclass of it)
                own = bool(sfn.class_name and back.fn.class_name) and sfn.name not in ("forward", "__call__") \
                    and (sfn.class_name == back.fn.class_name
                         or back.fn.class_name in t.project.lineage(sfn.class_name)
                         or sfn.class_name in t.project.lineage(back.fn.class_name))
                if j < 0 or (sfn.class_name and t.is_module_class(sfn.class_name) and not own):
                    continue
                if t.module_call(sfn, j) and t.grad_off(sfn, j) is None:
                    # a deep copy of what we cannot follow is still a module: it is called here
                    e = sfn.events[j]
                    # the module called, or the one whose method is called (`self.model.encode`)
                    names = [e.func, *([e.receiver] if own and e.method and e.receiver != "self" else [])]
                    # a module a container module holds (`m["encoder"](g, x)`): part of it
                    names += held_container(e.func)
                    sites = entries.get(sfn.qualname) if sfn is not back.fn else None
                    made = [o for name in names for site in sites for o in t.origins_in(sfn, name, j, site)] \
                        if sites else [o for name in names for o in t.origins(sfn, name, j)]
                    trained += [o for o in made if o.known and (t.is_module_class(o.cls) or o.kind == "copy")
                                and not t.holds_no_parameters(o.cls)]
        return list(dict.fromkeys(trained))

    @classmethod
    def _stale(cls, t: Training, trained: Origin, build: OptimizerBuild, made: Origin,
               later: bool = False, hook: Optional[Event] = None) -> Finding:
        """``later``: the trained model is made after the optimizer, by a later call; ``hook``:
        that call, when a `self` method run after the optimizer's own call site (the order
        there is the defect: the optimizer is built before the hook that rebuilds the model)."""
        optimizer = f"{build.fn.path}:{build.event.span.line}"
        outer = t.project.function(made.site[0]) if made.via else None
        if hook is not None and outer is not None and made.site_span is not None \
                and hook in outer.events and hook.func.startswith("self."):
            model_fn = t.project.function(trained.site[0])
            where = f"{model_fn.path}:{trained.site_span.line}" if model_fn and trained.site_span else "?"
            return cls.make_finding(
                outer.path, made.site_span,
                f"the optimizer is built here, before `{hook.text}` (line {hook.span.line}), which "
                f"makes the model trained anew ({where}): the optimizer holds the parameters of the "
                f"first model, and the trained parameters never update",
                fix=f"build the optimizer after `{hook.text}`")
        # the model's and the optimizer's statements in the caller's own code: a model made
        # after the optimizer in the same function, or by a later call, is the defect's line
        site_fn = t.project.function(trained.site[0])
        later = later or trained.site[0] == made.site[0] and trained.site[1] > made.site[1]
        span = trained.site_span
        if trained.kind == "copy" and trained.span is not None:
            # a copy a helper makes of what it is handed (`prepare(model)` deep-copying it): the
            # copy is the defect's line, not the call that handed the model over
            site_fn, span = t.project.function(trained.fn), trained.span
        if site_fn is not None and span is not None and (trained.kind == "copy" or later):
            what = "a deep copy" if trained.kind == "copy" else "a new instance"
            return cls.make_finding(
                site_fn.path, span,
                f"the trained model is {what} made here, but the optimizer built at {optimizer} "
                f"holds the parameters of the original: the trained parameters never update",
                fix="build the optimizer over the model that is trained, after it is final",
            )
        return cls.make_finding(
            build.fn.path, build.event.span,
            f"this optimizer holds the parameters of another instance than the model trained "
            f"(created at {site_fn.path if site_fn else '?'}:"
            f"{span.line if span else '?'}): the trained parameters never update",
            fix="pass the trained model's `.parameters()` to the optimizer",
        )

    @classmethod
    def _replaced_parts(cls, t: Training) -> Iterable[Finding]:
        for build in t.optimizers():
            fn = build.fn
            for module in build.modules:
                for j in range(build.index + 1, len(fn.events)):
                    e = fn.events[j]
                    if e.kind != "assign" or not any(x.startswith(module + ".") for x in e.targets):
                        continue
                    if not any(o.known and (t.is_module_class(o.cls) or o.cls.endswith("Parameter"))
                               for o in t.origins(fn, e.targets[0], j + 1)):
                        continue
                    if not any(module in later.uses or any(u.startswith(module + ".")
                                                           for u in later.uses)
                               for later in fn.events[j + 1:]):
                        continue
                    span: Span = e.span
                    yield cls.make_finding(
                        fn.path, span,
                        f"`{e.targets[0]}` is replaced by a new module/parameter after the "
                        f"optimizer was built at line {build.event.span.line}: the optimizer "
                        f"still holds the old one and the new one never trains",
                        fix="replace submodules before building the optimizer (or add the new "
                            "parameters with optimizer.add_param_group)",
                    )

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        for opt in evidence.optimizers:
            if opt.missing_model_params:
                names = ", ".join(opt.missing_model_params[:4])
                return Verdict(Status.CONFIRMED,
                               [f"{len(opt.missing_model_params)} parameters used in the forward "
                                f"are in no optimizer group ({names})"])
        if evidence.optimizers:
            return Verdict(Status.REFUTED, ["every parameter of the trained model is optimised"])
        return None


def _made_in(t: Training, origin: Origin, files: frozenset[str]) -> bool:
    """The instance is made by a statement of a file of the program (its outermost factory
    call, else its constructor)."""
    fn = t.project.function(origin.site[0])
    return fn is not None and fn.path in files
