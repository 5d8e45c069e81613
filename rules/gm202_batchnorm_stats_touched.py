"""GM202 batchnorm-stats-touched: BatchNorm running statistics written, reset, frozen or copied
outside the normal forward; BatchNorm over the few nodes of a single graph."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.config_truth import never_runs, setting_at_fault, switched_on
from auditor.static.context import dotted
from auditor.static import dataflow as df
from auditor.static.dataflow import constructed_class, function_of, statement_of
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo, Span
from auditor.static.named_objects import configured_nodes
from auditor.static.project import Project
from auditor.static.texts import top_level_items
from auditor.static.training import Origin, Training

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

BUFFERS = {"running_mean", "running_var", "num_batches_tracked"}
INPLACE = {"copy_", "zero_", "fill_", "mul_", "add_", "sub_", "div_", "normal_", "uniform_"}
BATCHNORMS = {
    f"torch.nn.{n}" for n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm",
                              "LazyBatchNorm1d")
}
# a configuration node's `_target_` naming a BatchNorm class (`torch.nn.BatchNorm1d`)
BATCHNORM_TARGET = re.compile(r"(^|\.)(Sync)?BatchNorm[123]?d?$")
BN_NAME = re.compile(r"(^|[._])(bn\d*|batch_?norm\w*|norms?\d*)($|[.\[_\d])", re.I)
BN_TEST = ("BatchNorm", "_NormBase")
LOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
           "dgl.dataloading.GraphDataLoader"}
SMALL_GRAPH_NODES = 64  # below this many nodes per forward, batch statistics are noise


@dataclass
class BatchNormBuilt:
    span: Span


@dataclass
class EvalOnBatchNorm:
    """``m.eval()`` under a test that it is a BatchNorm layer: decided with the project (a
    switch no configured run turns on never runs it)."""

    span: Span
    receiver: str


@dataclass
class SingleGraphBatch:
    span: Span
    what: str


def _is_literal(node: cst.BaseExpression, *values: float) -> bool:
    try:
        text = node.value if isinstance(node, (cst.Integer, cst.Float)) else None
        return text is not None and float(text) in values
    except ValueError:
        return False


def _kwarg(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword and a.keyword.value == name), None)


_BN_MODEL = ("import torch\nfrom torch import nn\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
             "        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.norm = nn.BatchNorm1d(8)\n"
             "    def forward(self, x):\n        return self.norm(self.lin(x))\n")


# a registry of many model classes, one with BatchNorm; a trainer that builds whichever the
# configuration names (the registry alone does not say which)
# a loop that calls a monitoring helper every 10 steps (`{before}`: what it does first)
_MONITOR = (
    "def monitor(model, val):\n{before}"
    "    spreads = [model(x).std() for x in val]\n"
    "    model.train()\n"
    "    return spreads\n"
    "def fit(loader, val):\n"
    "    model = Enc()\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "    for i, x in enumerate(loader):\n"
    "        loss = model(x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        if i % 10 == 0:\n"
    "            monitor(model, val)\n"
)
_REGISTRY = ("MODELS = {}\ndef register(name):\n    def deco(cls):\n        MODELS[name] = cls\n"
             "        return cls\n    return deco\ndef get_class(name):\n    return MODELS[name]\n")
_REGISTERED = "import torch.nn as nn\nfrom registry import register\n" + "".join(
    f"@register('m{i}')\nclass M{i}(nn.Module):\n    def __init__(self):\n"
    f"        super().__init__()\n        self.lin = {layer}\n"
    "    @classmethod\n    def from_config(cls, cfg):\n        return cls()\n"
    "    def forward(self, x):\n        return self.lin(x)\n"
    for i, layer in enumerate(["nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))"]
                              + ["nn.Linear(4, 4)"] * 16))
_REGISTRY_TRAINER = (
    "import torch\nimport models\nfrom registry import get_class\n"
    "class Trainer:\n    def __init__(self, cfg):\n"
    "        self.model = get_class(cfg['model']).from_config(cfg)\n"
    "        self.opt = torch.optim.Adam(self.model.parameters())\n"
    "    def fit(self, probe, loader, epochs):\n        for _ in range(epochs):\n"
    "            self.model.train()\n            with torch.no_grad():\n"
    "                scores = self.model(probe)\n            for x in loader:\n"
    "                loss = self.model(x).pow(2).mean()\n                self.opt.zero_grad()\n"
    "                loss.backward()\n                self.opt.step()\n")


# an EMA update of a teacher copied from the trained model, its buffers copied by `{write}`
_EMA_UPDATE = (
    "import copy\n"
    "def ema_update(teacher, student, decay):\n"
    "    for pt, ps in zip(teacher.parameters(), student.parameters()):\n"
    "        pt.data.mul_(decay).add_(ps.data, alpha=1 - decay)\n"
    "    for bt, bs in zip(teacher.buffers(), student.buffers()):\n"
    "        {write}\n"
    "def main(loader):\n"
    "    model = Enc()\n"
    "    teacher = copy.deepcopy(model)\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "    for x in loader:\n"
    "        loss = model(x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        ema_update(teacher, model, 0.99)\n"
)

# a momentum teacher whose update averages the parameters alone; `{use}`: what is done with it after
_EMA_NO_BUFFERS = (
    "import copy\n"
    "def ema_update(teacher, student, decay):\n"
    "    for pt, ps in zip(teacher.parameters(), student.parameters()):\n"
    "        pt.data.mul_(decay).add_(ps.data, alpha=1 - decay)\n"
    "def main(loader):\n"
    "    model = Enc()\n"
    "    teacher = copy.deepcopy(model)\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "    for x in loader:\n"
    "        loss = (model(x) - teacher(x).detach()).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        ema_update(teacher, model, 0.99)\n"
    "{use}"
)


class BatchNormStatsTouched(Rule):
    code = "GM202"
    name = "batchnorm-stats-touched"
    severity = Severity.ERROR
    summary = "BatchNorm running statistics written, reset, frozen or copied outside the forward"
    prefilter = ("running_", "track_running_stats", "BatchNorm", "momentum", "_NormBase",
                 "batch_size=1", "GraphDataLoader", "collate_fn=dgl", "load_state_dict")
    doc = """
## What it does
Finds code that changes a BatchNorm layer's running statistics other than by its own forward:

* assigning or modifying in place `running_mean`, `running_var` or `num_batches_tracked` of a
  layer (`bn.running_mean = other.running_mean`, `bn.running_var.fill_(1)`);
* `reset_running_stats()` on a layer, assignments to `track_running_stats` or to the `momentum`
  of a BatchNorm layer (a receiver named like one, or inside an
  `isinstance(m, nn.BatchNorm*)` test), `bn.eval()` on a BatchNorm inside such a test (frozen
  statistics), and `bn.load_state_dict(...)` on one (statistics from another model);
* `nn.BatchNorm*d(..., momentum=0)` (statistics frozen at their initial 0/1) or
  `momentum=None` (a cumulative average over the whole run), and, as warnings,
  `track_running_stats=False` (batch statistics at evaluation too) and a loader that feeds the
  model one graph at a time (`batch_size=1`, or a `GraphDataLoader` without `batch_size`) in a
  project whose model has a `BatchNorm`: the statistics are then those of one part's few nodes;
* in a project whose model has a `BatchNorm`, a forward run in the training loop (in the loop,
  or in a helper, hook or callback it calls) while the
  model is still in train mode, whose output no backward reads: with gradients off
  (`torch.no_grad()`, `inference_mode()`), or after the step's backward (metrics on the
  training batch, an embedding logged by the trainer's step method): every such forward moves
  the running statistics once more, with a batch training never saw;
* a moving average of a model's parameters into a copy (an EMA model, a momentum teacher)
  that never copies the buffers, when the source holds a BatchNorm and the copy is used with
  its running statistics (put in eval mode, or its state dict taken to be saved or kept): they
  stay those of the moment it was copied. A BYOL-style teacher run in train mode normalises by
  the batch and is left alone. Likewise torch's `AveragedModel` built without
  `use_buffers=True` around such a model, used the same way, in a project that never calls
  `update_bn`.

A module's own implementation (`self.running_mean = ...` in a custom normalisation layer) is not
reported.

## Why is this bad?
GraphMAE's GAT encoder normalises every layer's node embeddings with BatchNorm. During training it
uses the batch's statistics and updates the running ones; at evaluation it uses the running ones.
Touching them outside the forward desynchronises the two: reset or frozen statistics (mean 0,
var 1) while the embeddings have a very different scale, or statistics copied from another model,
make every evaluation-time reconstruction come out shifted and scaled — scattered points — while
the training loss, computed with batch statistics, looks perfectly normal. With one small graph per
batch, the "batch" statistics are those of a dozen nodes: they differ wildly between parts and
from the running averages used later.

## Example
```python
for m in model.modules():
    if isinstance(m, nn.BatchNorm1d):
        m.reset_running_stats()
        m.momentum = 0.0
```

## Use instead
```python
# let the forward pass maintain the statistics; batch several graphs per step
loader = GraphDataLoader(train_set, batch_size=8, shuffle=True)
```

## Fix safety
No automatic fix: whether the statistics were meant to be frozen (fine-tuning) has to be decided
by a person, and the reference script must then do the same.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html
- Ioffe & Szegedy, Batch Normalization, ICML 2015.
"""

    VALID = [
        # the model may be any of seventeen registered classes: none of them is known to be it
        # (one has BatchNorm; the extra gradient-free forward says nothing about the others)
        Valid({"registry.py": _REGISTRY, "models.py": _REGISTERED, "train.py": _REGISTRY_TRAINER}),
        # a method of the model that only moves the EMA target's weights: no forward
        Valid(
            "import torch\nfrom torch import nn\n"
            "class BYOL(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.online = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "        self.target = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "    def update_target(self, mm):\n"
            "        for q, k in zip(self.online.parameters(), self.target.parameters()):\n"
            "            k.data.mul_(mm).add_(q.data, alpha=1 - mm)\n"
            "    def forward(self, x):\n"
            "        return self.online(x) - self.target(x).detach()\n"
            "def train(model, opt, x):\n"
            "    model.train()\n"
            "    loss = model(x).pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    model.update_target(0.99)\n"
            "    return loss.item()\n"
            "def main():\n"
            "    model = BYOL()\n"
            "    opt = torch.optim.SGD(model.online.parameters(), lr=0.1)\n"
            "    for x in [torch.randn(8, 4)]:\n"
            "        train(model, opt, x)\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
        ),
        # after the backward: a gradient clip over the parameters and an EMA weight update run
        # no forward
        Valid(
            "import torch\nfrom torch import nn\n"
            "class Online(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "        self.target = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "    def update_target(self, m):\n"
            "        for p, q in zip(self.enc.parameters(), self.target.parameters()):\n"
            "            q.data.mul_(m).add_(p.data, alpha=1 - m)\n"
            "    def forward(self, x):\n"
            "        return (self.enc(x) - self.target(x).detach()).pow(2).mean()\n"
            "model = Online()\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x in loader:\n"
            "    loss = model(x)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 3)\n"
            "    opt.step()\n"
            "    model.update_target(0.99)\n"
        ),
        # a normalisation layer's own methods maintain its own buffers
        Valid(
            "import torch\nfrom torch import nn\n"
            "class MyNorm(nn.Module):\n"
            "    def reset_running_stats(self):\n"
            "        self.running_mean.zero_()\n        self.num_batches_tracked.zero_()\n"
            "    def forward(self, x):\n"
            "        self.num_batches_tracked.add_(1)\n        return x - self.running_mean\n"
        ),
        # the layer's own implementation updates its buffers
        Valid(
            "import torch\nfrom torch import nn\n\nclass MyNorm(nn.Module):\n"
            "    def __init__(self, d):\n        super().__init__()\n"
            "        self.running_mean = torch.zeros(d)\n        self.momentum = 0.1\n\n"
            "    def forward(self, x):\n        m = x.mean(0)\n"
            "        self.running_mean = 0.9 * self.running_mean + 0.1 * m.detach()\n"
            "        return x - self.running_mean\n"
        ),
        # optimizer momentum is not BatchNorm momentum
        Valid("import torch\nopt = torch.optim.SGD(params, lr=0.1)\nopt.momentum = 0.9\n"),
        Valid("import torch.nn as nn\nbn = nn.BatchNorm1d(128, momentum=0.1)\n"),
        # reading the statistics is fine
        Valid("def log_bn(bn):\n    print(bn.running_mean.mean().item(), bn.running_var.mean().item())\n"),
        # one graph per batch in an inference script: no running statistics move
        Valid({
            "model.py": "from torch import nn\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.norm = nn.BatchNorm1d(64)\n",
            "reconstruct.py": "import torch\nfrom torch.utils.data import DataLoader\nimport dgl\n"
            "loader = DataLoader(ds, batch_size=1, collate_fn=dgl.batch)\nmodel.eval()\n"
            "with torch.no_grad():\n    for g in loader:\n        print(model(g))\n",
            "train.py": "from torch.utils.data import DataLoader\nimport dgl\n"
            "loader = DataLoader(ds, batch_size=8, shuffle=True, collate_fn=dgl.batch)\n"
            "for g in loader:\n    loss = model(g)\n    loss.backward()\n    opt.step()\n",
        }),
        # several graphs per batch
        Valid({
            "model.py": "from torch import nn\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.norm = nn.BatchNorm1d(64)\n",
            "train.py": "from dgl.dataloading import GraphDataLoader\n"
            "loader = GraphDataLoader(ds, batch_size=8, shuffle=True)\n",
        }),
        # an extra no-grad forward after `.eval()`; a no-grad target forward the loss reads
        Valid(_BN_MODEL + (
            "def train(model, opt, loader):\n    for x in loader:\n        model.train()\n"
            "        loss = model(x).pow(2).mean()\n        opt.zero_grad()\n        loss.backward()\n"
            "        opt.step()\n        model.eval()\n        with torch.no_grad():\n"
            "            model(x)\n")),
        Valid(_BN_MODEL + (
            "def train(model, target, opt, loader):\n    for x in loader:\n"
            "        with torch.no_grad():\n            t = target(x)\n"
            "        loss = (model(x) - t).pow(2).mean()\n        opt.zero_grad()\n"
            "        loss.backward()\n        opt.step()\n")),
        # a linear probe's head (no BatchNorm inside) run again under no_grad
        Valid(_BN_MODEL + (
            "def probe(feats, labels):\n    head = nn.Linear(8, 2)\n"
            "    opt = torch.optim.Adam(head.parameters())\n    for _ in range(100):\n"
            "        loss = nn.functional.cross_entropy(head(feats), labels)\n"
            "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
            "        with torch.no_grad():\n            acc = head(feats).argmax(-1)\n")),
        # a BYOL-style teacher run in train mode: it normalises by the batch, its running
        # statistics are never read
        Valid(_BN_MODEL + _EMA_NO_BUFFERS.format(use="")),
        # a copy kept in eval mode that nothing runs or saves
        Valid(_BN_MODEL + _EMA_NO_BUFFERS.format(use="").replace(
            "copy.deepcopy(model)", "copy.deepcopy(model).eval()").replace(
            "(model(x) - teacher(x).detach())", "model(x)")),
        # the EMA teacher takes the trained model's buffers
        Valid(
            _BN_MODEL + _EMA_UPDATE.format(write="bt.copy_(bs)")
        ),
        # the same helper, switching the model to eval mode first
        Valid(_BN_MODEL + _MONITOR.format(before="    model.eval()\n")),
        # an EMA teacher's update walks both models' parameters under no_grad in the loop: no
        # forward runs there
        Valid(
            "import copy\nimport torch\nfrom torch import nn\n"
            "model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "teacher = copy.deepcopy(model).requires_grad_(False)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x in data:\n"
            "    loss = model(x).pow(2).mean() + teacher(x).sum().detach()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    with torch.no_grad():\n"
            "        for t, s in zip(teacher.parameters(), model.parameters()):\n"
            "            t.mul_(0.99).add_(s, alpha=0.01)\n"
            "        for tb, sb in zip(teacher.buffers(), model.buffers()):\n"
            "            tb.copy_(sb)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "from torch import nn\n\ndef freeze_bn(model):\n    for m in model.modules():\n"
            "        if isinstance(m, nn.BatchNorm1d):\n            m.reset_running_stats()\n"
            "            m.momentum = 0.0\n",
            line=6, column=13,
        ),
        Invalid(
            "from torch import nn\n\ndef freeze_bn(model):\n    for m in model.modules():\n"
            "        if isinstance(m, nn.modules.batchnorm._BatchNorm):\n            m.momentum = 0.0\n",
            line=6,
        ),
        Invalid("def sync(dst, src):\n    dst.bn.running_mean = src.bn.running_mean.clone()\n", line=2),
        Invalid("def fix(enc):\n    enc.norms[0].running_var.fill_(1.0)\n", line=2),
        Invalid("def tweak(model):\n    model.encoder.bn1.track_running_stats = False\n", line=2),
        Invalid("import torch.nn as nn\nbn = nn.BatchNorm1d(128, momentum=0.0)\n", line=2),
        # a cumulative average: the early, untrained activations weigh as much as the last ones
        Invalid("import torch.nn as nn\nbn = nn.BatchNorm1d(128, momentum=None)\n", line=2),
        Invalid(
            "from torch import nn\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.bn = nn.BatchNorm1d(64, track_running_stats=False)\n",
            line=6,
        ),
        Invalid(
            "def transplant(model, teacher):\n"
            "    model.encoder.norm.load_state_dict(teacher.encoder.norm.state_dict())\n",
            line=2,
        ),
        # a second forward of the training batch, gradients off, still in train mode
        Invalid(_BN_MODEL + (
            "def train(model, opt, loader):\n    for x in loader:\n"
            "        loss = model(x).pow(2).mean()\n        opt.zero_grad()\n        loss.backward()\n"
            "        opt.step()\n        with torch.no_grad():\n            acc = model(x).argmax(-1)\n"
            "enc = Enc()\ntrain(enc, torch.optim.Adam(enc.parameters()), batches)\n"),
            line=18, message_contains="extra forward"),
        # the BatchNorm class comes from a norm factory; the extra forward is in a Trainer method
        Invalid({
            "norms.py": "from torch import nn\n\ndef create_norm(name):\n"
            "    return nn.BatchNorm1d if name == 'batchnorm' else nn.Identity\n",
            "model.py": "from torch import nn\nfrom norms import create_norm\n\nclass GAT(nn.Module):\n"
            "    def __init__(self, norm):\n        super().__init__()\n"
            "        self.lin = nn.Linear(8, 8)\n        self.norm = create_norm(norm)(8)\n"
            "    def forward(self, g, x):\n        return self.norm(self.lin(x)).pow(2).mean()\n",
            "train.py": "import torch\nfrom model import GAT\nfrom engine import Trainer\n"
            "model = GAT('batchnorm')\n"
            "Trainer(model, torch.optim.Adam(model.parameters())).fit(loader)\n",
            "engine.py": "import torch\n\nclass Trainer:\n    def __init__(self, model, opt):\n"
            "        self.model = model\n        self.opt = opt\n    def fit(self, loader):\n"
            "        for g, x in loader:\n            loss = self.model(g, x)\n"
            "            self.opt.zero_grad()\n            loss.backward()\n            self.opt.step()\n"
            "            with torch.no_grad():\n                self.model(g, x)\n",
        }, path="engine.py", line=14, message_contains="extra forward"),
        # BatchNorm in the model, one graph per batch in the training script
        Invalid(
            {
                "model.py": "from torch import nn\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.norm = nn.BatchNorm1d(64)\n",
                "train.py": "from torch.utils.data import DataLoader\nimport dgl\n"
                "loader = DataLoader(ds, batch_size=1, shuffle=True, collate_fn=dgl.batch)\n"
                "for g in loader:\n    loss = model(g)\n    loss.backward()\n    opt.step()\n",
            },
            line=3, path="train.py", message_contains="one graph",
        ),
        # the encoder comes from a factory (one branch per kind) and keeps its layers in a list;
        # the layers' BatchNorm comes from a norm factory: an extra no-grad forward still moves it
        Invalid(
            {
                "layers.py": "from torch import nn\n\ndef make_norm(name):\n"
                "    return nn.BatchNorm1d if name == 'bn' else nn.Identity\n\n"
                "class Layer(nn.Module):\n    def __init__(self, d, norm):\n"
                "        super().__init__()\n        self.lin = nn.Linear(d, d)\n"
                "        self.norm = make_norm(norm)(d)\n"
                "    def forward(self, x):\n        return self.norm(self.lin(x))\n\n"
                "class Encoder(nn.Module):\n    def __init__(self, d, norm):\n"
                "        super().__init__()\n        self.layers = nn.ModuleList()\n"
                "        for _ in range(2):\n            self.layers.append(Layer(d, norm))\n"
                "    def forward(self, x):\n        for layer in self.layers:\n"
                "            x = layer(x)\n        return x\n\n"
                "def setup(kind, d, norm):\n    if kind == 'enc':\n        mod = Encoder(d, norm)\n"
                "    else:\n        mod = nn.Linear(d, d)\n    return mod\n\n"
                "class Model(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
                "        self.encoder = setup('enc', d, 'bn')\n"
                "    def forward(self, x):\n        return self.encoder(x).pow(2).mean()\n",
                "train.py": "import torch\nfrom layers import Model\n\n"
                "model = Model(8)\nopt = torch.optim.Adam(model.parameters())\n"
                "for x in loader:\n    model.train()\n    loss = model(x)\n    opt.zero_grad()\n"
                "    loss.backward()\n    opt.step()\n    with torch.no_grad():\n        model(x)\n",
            },
            line=13, path="train.py", message_contains="extra forward",
        ),
        # the trainer's step method logs an embedding of the batch after the update
        Invalid({
            "model.py": (
                "from torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.enc = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
                "    def embed(self, x):\n"
                "        return self.enc(x)\n"
                "    def forward(self, x):\n"
                "        return (self.enc(x) - x).pow(2).mean()\n"
            ),
            "trainer.py": (
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model = model\n"
                "        self.opt = opt\n"
                "    def training_step(self, x):\n"
                "        model = self.model\n"
                "        loss = model(x)\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
                "        self.opt.step()\n"
                "        self.emb_std = model.embed(x).std().item()\n"
                "        return loss.item()\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\nfrom trainer import Trainer\n"
                "model = MAE()\n"
                "trainer = Trainer(model, torch.optim.Adam(model.parameters()))\n"
                "for x in loader:\n"
                "    trainer.training_step(x)\n"
            ),
        }, path="trainer.py", line=11, message_contains="after the step's backward"),
        # an EMA update that copies the buffers the wrong way: into the trained model
        Invalid(
            _BN_MODEL + _EMA_UPDATE.format(write="bs.copy_(bt)"),
            line=16, message_contains="buffers of `student`",
        ),
        # a monitoring helper the loop calls every 10 steps, after the backward, in train mode
        Invalid(_BN_MODEL + _MONITOR.format(before=""), line=12, message_contains="after the step's backward"),
        # the EMA copy written the wrong way round, into the student's buffers read through a
        # property; the optimizer is given weight-decay groups a helper collects from the model
        Invalid(
            "import copy\nimport torch\nfrom torch import nn\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
            "    def forward(self, x):\n"
            "        return self.encoder(x)\n"
            "def param_groups(modules, wd):\n"
            "    decay, plain = [], []\n"
            "    for module in modules:\n"
            "        for name, p in module.named_parameters():\n"
            "            (decay if p.ndim > 1 else plain).append(p)\n"
            "    return [{'params': decay, 'weight_decay': wd}, {'params': plain, 'weight_decay': 0.0}]\n"
            "class State:\n"
            "    def __init__(self, model):\n"
            "        self._model = model\n"
            "        self.teacher = copy.deepcopy(model.encoder)\n"
            "    @property\n"
            "    def encoder(self):\n"
            "        return self._model.encoder\n"
            "    @torch.no_grad()\n"
            "    def update_teacher(self):\n"
            "        for tb, sb in zip(self.teacher.buffers(), self.encoder.buffers()):\n"
            "            sb.copy_(tb)\n"
            "def main(data):\n"
            "    model = Net()\n"
            "    state = State(model)\n"
            "    opt = torch.optim.AdamW(param_groups([model], 1e-4))\n"
            "    for x in data:\n"
            "        loss = model(x).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        state.update_teacher()\n",
            line=26, message_contains="a model the optimizer trains",
        ),
        # torch's AveragedModel without `use_buffers=True`, its state saved as the published weights
        Invalid(_BN_MODEL + "from torch.optim.swa_utils import AveragedModel\n" + _EMA_NO_BUFFERS.format(
            use="    torch.save(teacher.state_dict(), 'ema.pt')\n").replace(
            "copy.deepcopy(model)", "AveragedModel(model)").replace(
            "ema_update(teacher, model, 0.99)", "teacher.update_parameters(model)"),
                line=18, message_contains="use_buffers=True"),
        # the same teacher's parameters averaged and saved as the published weights: its
        # BatchNorm statistics are still those of the copy
        Invalid(_BN_MODEL + _EMA_NO_BUFFERS.format(use="    torch.save(teacher.state_dict(), 'ema.pt')\n"),
                line=14, message_contains="never copies the buffers"),
        # a teacher made in eval mode: its targets are normalised with the copy's statistics
        Invalid(_BN_MODEL + _EMA_NO_BUFFERS.format(use="").replace(
            "copy.deepcopy(model)", "copy.deepcopy(model).eval()"), line=14, message_contains="eval mode"),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bn_tests: list[bool] = []  # enclosing `if` tests: is it an isinstance BatchNorm test?

    def visit_If(self, node: cst.If) -> None:
        self.bn_tests.append(any(t in self.ctx.code(node.test, 200) for t in BN_TEST))

    def leave_If(self, original_node: cst.If) -> None:
        self.bn_tests.pop()

    def _looks_bn(self, receiver: str) -> bool:
        return any(self.bn_tests) or bool(BN_NAME.search(receiver))

    # -- writes --------------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_write(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_write(node.target)

    def _check_write(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Subscript):  # bn.running_mean[:] = ...
            target = target.value
        if not isinstance(target, cst.Attribute):
            return
        receiver = dotted(target.value) or self.ctx.code(target.value, 60)
        attr = target.attr.value
        if receiver == "self":
            return  # the layer's own implementation
        if attr in BUFFERS:
            self.report(target, f"`{receiver}.{attr}` is overwritten outside the layer's forward: "
                        "evaluation normalises with these statistics, not those training produced",
                        fix="let the forward maintain the running statistics; if they must come "
                        "from another model, load the whole state_dict consistently in both scripts")
        elif attr == "track_running_stats":
            self.report(target, f"`{receiver}.track_running_stats` changed after construction: "
                        "the running statistics stop updating (or are used half-initialised)",
                        fix="keep the default `track_running_stats=True`")
        elif attr == "momentum" and self._looks_bn(receiver):
            self.report(target, f"BatchNorm momentum of `{receiver}` changed outside its "
                        "construction: the running statistics are frozen or re-weighted",
                        fix="leave BatchNorm momentum at its default (0.1)")

    # -- BatchNorm classes handed around (`return nn.BatchNorm1d` in a norm factory) ------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._batchnorm_reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._batchnorm_reference(node)

    def _batchnorm_reference(self, node: cst.BaseExpression) -> None:
        if not self.ctx.in_import and self.ctx.qualify(node) in BATCHNORMS:
            self.fact(BatchNormBuilt(self.ctx.span(node)))

    # -- calls ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.ctx.qualify(func)
        if qualified in BATCHNORMS:
            self._check_constructor(node, qualified)
            self.fact(BatchNormBuilt(self.ctx.span(node)))
            return
        if qualified in LOADERS:
            self._check_loader(node, qualified)
            return
        if not isinstance(func, cst.Attribute):
            return
        receiver = dotted(func.value) or self.ctx.code(func.value, 60)
        method = func.attr.value
        last = receiver.rsplit(".", 1)[-1]
        if receiver == "self" or (receiver.count(".") == 1 and receiver.startswith("self.")
                                  and last in BUFFERS):
            return  # the layer's own buffers (`self.num_batches_tracked.add_(1)`)
        if method == "reset_running_stats":
            self.report(node, f"`{receiver}.reset_running_stats()` throws away the statistics "
                        "training accumulated: evaluation normalises with mean 0 / var 1",
                        fix="do not reset BatchNorm statistics of a trained model")
        elif method in INPLACE and last in BUFFERS:
            self.report(node, f"`{receiver}.{method}(...)` modifies BatchNorm statistics in "
                        "place outside the forward",
                        fix="let the forward maintain the running statistics")
        elif method == "eval" and any(self.bn_tests):
            self.fact(EvalOnBatchNorm(self.ctx.span(node), receiver))
        elif method == "load_state_dict" and BN_NAME.search(receiver):
            self.report(node, f"`{receiver}.load_state_dict(...)` loads BatchNorm statistics "
                        "from another model into this layer alone",
                        fix="load the whole model's state_dict, in both scripts, or none")

    def _check_constructor(self, node: cst.Call, qualified: str) -> None:
        name = qualified.rsplit(".", 1)[-1]
        momentum = _kwarg(node, "momentum")
        if momentum is not None and _is_literal(momentum, 0.0):
            self.report(node, f"`{name}(momentum=0)` never updates its running statistics: "
                        "evaluation uses mean 0 / var 1 whatever the embeddings' scale",
                        fix="use the default momentum (0.1)")
        elif isinstance(momentum, cst.Name) and momentum.value == "None":
            self.report(node, f"`{name}(momentum=None)` keeps a cumulative average over the "
                        "whole run: the statistics used at evaluation are dominated by the "
                        "untrained encoder's early activations",
                        fix="use the default momentum (0.1), the running average the reference keeps")
        track = _kwarg(node, "track_running_stats")
        if isinstance(track, cst.Name) and track.value == "False":
            finding = self.make_finding(
                self.ctx.path, self.ctx.span(node),
                f"`{name}(track_running_stats=False)` normalises with batch statistics at "
                "evaluation too: a part's reconstruction depends on what it is batched with",
                fix="keep running statistics (the default) unless the reference does the same")
            finding.severity = Severity.WARNING
            self.findings.append(finding)

    def _check_loader(self, node: cst.Call, qualified: str) -> None:
        size = _kwarg(node, "batch_size")
        graphs = qualified.endswith("GraphDataLoader") or any(
            a.keyword and a.keyword.value == "collate_fn" and "dgl" in self.ctx.code(a.value)
            for a in node.args)
        if (size is not None and _is_literal(size, 1)) or (size is None and graphs):
            self.fact(SingleGraphBatch(self.ctx.span(node), self.ctx.code(node, 80)))

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        out = []
        for file, frozen in _facts(project, EvalOnBatchNorm):
            fn = function_of(project, file.path, frozen.span.line)
            event = next((e for e in fn.events if e.kind == "call" and e.method == "eval"
                          and e.span.line == frozen.span.line), None) if fn is not None else None
            if event is not None and never_runs(project, fn, event):
                continue  # a freeze behind a switch that no configured run turns on
            found = cls.make_finding(
                file.path, frozen.span,
                f"`{frozen.receiver}.eval()` on a BatchNorm layer freezes its running statistics "
                "(and uses them during training)",
                fix="train BatchNorm layers in train mode, as the reference does")
            setting = switched_on(project, fn, event) if event is not None else None
            if setting is not None and setting_at_fault(fn, *setting):
                test, source = setting  # the freeze is a switch; the setting turns it on
                found = dataclasses.replace(
                    found, path=source.path, line=source.line, column=1, end_line=source.line,
                    end_column=1, fix="set it to off: train BatchNorm layers in train mode",
                    message=f"this setting turns `{test}` on for every configured run "
                            f"({source.what}): at {found.path}:{found.line}, {found.message}")
            out.append(found)
        out += cls._configured_momentum(project)
        if not any(True for _ in _facts(project, BatchNormBuilt)):
            return out
        training = Training.of(project)
        for _, fn, i in training.extra_forwards():
            call = fn.events[i]
            if not holds_batchnorm(project, fn, i):
                continue  # a module without BatchNorm (a linear probe's head), or one not known
            how = "with gradients off" if training.grad_off(fn, i) is not None \
                else "after the step's backward"
            out.append(cls.make_finding(
                fn.path, call.span,
                f"`{call.func}(...)` runs in train mode {how}, inside the training loop, and no "
                "backward reads its output: this extra forward updates the BatchNorm running "
                "statistics with a batch the training step never used",
                fix="call `.eval()` before an extra forward (and `.train()` after it), or reuse "
                    "the training forward's output"))
        for fn, i, module in _buffer_writes(project):
            if training.may_be_trained(fn, module, i) and holds_batchnorm(project, fn, i, module):
                event = fn.events[i]
                out.append(cls.make_finding(
                    fn.path, event.span,
                    f"`{event.text}` overwrites in place the buffers of `{module}`, a model the "
                    "optimizer trains, outside its forward: its BatchNorm running statistics are "
                    "replaced by another model's",
                    fix="copy in the other direction (into the EMA/target copy), or leave the "
                        "trained model's buffers to its own forward"))
        for fn, i, averaged, source in _averaged_without_buffers(project):
            used = _evaluated(project, training, fn, averaged, i) \
                if holds_batchnorm(project, fn, i, source) else None
            if used is not None:
                out.append(cls.make_finding(
                    fn.path, fn.events[i].span,
                    f"this moving average of `{source}`'s parameters into `{averaged}` never copies the "
                    f"buffers: `{averaged}`'s BatchNorm running statistics stay those it was made with, "
                    f"and {used}",
                    fix=f"copy the buffers too: `for b, s in zip({averaged}.buffers(), {source}.buffers()): "
                        "b.copy_(s)`"))
        for fn, i, used in _averaged_models_without_buffers(project, training):
            call = fn.events[i]
            out.append(cls.make_finding(
                fn.path, call.span,
                f"`{call.func.rsplit('.', 1)[-1]}` of `{call.args[0]}` without `use_buffers=True` averages the "
                f"parameters only: its BatchNorm running statistics are not those of the averaged "
                f"weights, and {used}",
                fix="pass `use_buffers=True`, or run `torch.optim.swa_utils.update_bn(loader, model)` "
                    "on the averaged model before using it"))
        trained_in = {loop.fn.qualname for loop in training.training_loops()}
        for file, loader in _facts(project, SingleGraphBatch):
            if not _feeds_training(project, file.path, loader.span.line, trained_in):
                continue  # an inference or evaluation script: no statistics are updated
            finding = cls.make_finding(
                file.path, loader.span,
                f"`{loader.what}` feeds one graph per step to a model with BatchNorm: the batch "
                "statistics are those of one part's few nodes, far from the running statistics "
                "used at evaluation",
                fix="batch several graphs per step (batch_size >= 8), or use LayerNorm/GraphNorm")
            finding.severity = Severity.WARNING
            out.append(finding)
        return out

    @classmethod
    def _configured_momentum(cls, project: Project) -> list[Finding]:
        """A BatchNorm built from a configuration node (``{_target_: torch.nn.BatchNorm1d,
        momentum: null}``) whose momentum is 0 or None on some configured run: reported where
        that value is written."""
        out: list[Finding] = []
        reported: set[tuple[str, int]] = set()
        for target, node in configured_nodes(project):
            if not BATCHNORM_TARGET.search(target):
                continue
            for value in node.entries.get("momentum", []):
                where = (value.source.path, value.source.line)
                if value.value not in (None, 0, 0.0) or isinstance(value.value, bool) or where in reported:
                    continue
                reported.add(where)
                what = "0: its running statistics never update" if value.value is not None else \
                    "None: its running statistics are a cumulative average of every batch since the start"
                out.append(cls.make_finding(
                    value.source.path, Span(value.source.line, 1, value.source.line, 1),
                    f"the `{target}` built from this configuration ({value.source.what}) gets momentum "
                    f"{what}, and evaluation normalises with them",
                    fix="leave BatchNorm momentum at its default (0.1)"))
        return out

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """From what the probe saw of the BatchNorm buffers: a reset or buffer change recorded
        at the finding's line; otherwise, once the line ran, the effect its kind of write has
        (running statistics that training forwards cannot update, eval-mode BatchNorm during
        training, buffers changed between forwards, statistics loaded at that line). For
        one-graph batches, the node counts entering the model."""
        if not evidence:
            return None
        if "one graph per step" in finding.message:
            sizes = [g.num_nodes for g in evidence.graphs if g.where == "forward" and g.num_nodes]
            if not sizes:
                return Verdict(Status.UNEXERCISED, ["no graph entered the model"])
            if max(sizes) < SMALL_GRAPH_NODES:
                return Verdict(Status.CONFIRMED, [
                    f"BatchNorm normalised over {min(sizes)}..{max(sizes)} nodes per forward"])
            return Verdict(Status.REFUTED, [f"graphs of up to {max(sizes)} nodes per forward"])
        events = [e for e in evidence.batchnorm
                  if e.path == finding.path and finding.line <= e.line <= finding.end_line]
        if events:
            return Verdict(Status.CONFIRMED, [_describe(e) for e in events[:4]])
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        if "load_state_dict" in finding.message:
            loads = evidence.loads_at(finding.path, finding.line, finding.end_line)
            if loads:
                return Verdict(Status.CONFIRMED, [f"load_state_dict into {loads[0].module} at this "
                                                  "line replaced its running statistics"])
            return None
        effect = _effect_of(finding.message)
        seen = [e for e in evidence.batchnorm if e.kind in EFFECT_KINDS.get(effect, {effect})]
        if seen:
            return Verdict(Status.CONFIRMED, [_describe(e) for e in seen[:4]])
        if effect and any(s.kind == "backward" for s in evidence.steps):
            return Verdict(Status.REFUTED, [
                f"the line ran and {len(evidence.steps)} training step(s) followed, but no "
                f"BatchNorm layer was {EFFECTS[effect]}"])
        return None


# `for bt, bs in zip(teacher.buffers(), student.buffers()):`, `for n, b in m.named_buffers():`
_BUFFER_LOOP = re.compile(r"for\s+(.+?)\s+in\s+(.+):\s*$")
_BUFFERS_OF = re.compile(r"([\w.]+)\.(buffers|named_buffers)\(\)")


def _loop_body(fn: FunctionInfo, k: int) -> Iterator[tuple[int, Event]]:
    """The events of the body of the loop whose header is event ``k`` of ``fn``."""
    inner = set(fn.events[k + 1].loop_ids) - set(fn.events[k].loop_ids)
    for i in range(k + 1, len(fn.events)):
        if not inner & set(fn.events[i].loop_ids):
            return
        yield i, fn.events[i]


def _buffer_writes(project: Project) -> Iterable[tuple[FunctionInfo, int, str]]:
    """In-place writes (``b.copy_(x)``, ``b.mul_(m)``) into the buffers a loop walks, with the
    module whose buffers they are: ``(fn, event index, module expression)``."""
    for fn in list(project.functions.values()):
        for k, header in enumerate(fn.events):
            match = _BUFFER_LOOP.match(header.text.split("\n", 1)[0]) \
                if header.kind == "assign" and header.text.startswith("for ") else None
            if match is None or k + 1 >= len(fn.events):
                continue
            walked = match.group(2).strip()
            walked = walked[4:-1] if walked.startswith("zip(") and walked.endswith(")") else walked
            sources = [_BUFFERS_OF.fullmatch(x.strip()) for x in top_level_items(walked)]
            if not sources or not all(sources):
                continue
            targets = [t.strip("() ") for t in top_level_items(match.group(1))]
            if len(targets) != len(sources):
                if len(sources) == 1 and sources[0].group(2) == "named_buffers" and len(targets) == 2:
                    targets = targets[1:]  # `for name, buf in m.named_buffers()`
                else:
                    continue
            held = {t: m.group(1) for t, m in zip(targets, sources)}
            for i, e in _loop_body(fn, k):
                written = e.receiver.removesuffix(".data")
                if e.kind == "call" and e.method in INPLACE and written in held:
                    yield fn, i, held[written]


# `for pe, pm in zip(ema.parameters(), model.parameters()):` (either order, named or not)
_PARAMETERS_OF = re.compile(r"([\w.]+)\.(parameters|named_parameters)\(\)")
_WALKS_BUFFERS = re.compile(r"\.(buffers|named_buffers|state_dict|load_state_dict)\(")
_AVERAGING = {"lerp_", "mul_", "add_", "copy_", "sub_"}


def _averaged_without_buffers(project: Project) -> Iterable[tuple[FunctionInfo, int, str, str]]:
    """Moving-average updates of one model's parameters from another's (an EMA teacher, a
    momentum encoder) in a function that never touches the buffers: ``(fn, index of the first
    write, averaged model, source model)``."""
    for fn in list(project.functions.values()):
        for k, header in enumerate(fn.events):
            first = header.text.split("\n", 1)[0]
            match = _BUFFER_LOOP.match(first) \
                if header.kind == "assign" and first.startswith("for ") and " in zip(" in first else None
            if match is None or k + 1 >= len(fn.events) \
                    or any(_WALKS_BUFFERS.search(e.text) for e in fn.events if e.kind == "call"):
                continue
            walked = match.group(2).strip()
            if not (walked.startswith("zip(") and walked.endswith(")")):
                continue
            sources = [_PARAMETERS_OF.fullmatch(x.strip()) for x in top_level_items(walked[4:-1])]
            targets = [t.strip("() ") for t in top_level_items(match.group(1))]
            if len(sources) != 2 or not all(sources) or len(targets) != 2 \
                    or any(s.group(2) == "named_parameters" for s in sources):
                continue
            held = {t: m.group(1) for t, m in zip(targets, sources)}
            for i, e in _loop_body(fn, k):
                written = e.receiver.removesuffix(".data") if e.kind == "call" and e.method in _AVERAGING \
                    else e.targets[0].removesuffix(".data") if e.kind == "assign" and len(e.targets) == 1 \
                    and e.targets[0].endswith(".data") else ""
                if written in held:
                    other = next(m for t, m in held.items() if t != written)
                    yield fn, i, held[written], other
                    break


# what a module is asked that runs no forward of it
_NO_FORWARD = {"parameters", "named_parameters", "buffers", "named_buffers", "modules", "children",
               "eval", "train", "requires_grad_", "state_dict", "load_state_dict", "to", "cpu",
               "cuda", "apply", "zero_grad", "register_buffer", "register_parameter"}


AVERAGED_MODELS = {"torch.optim.swa_utils.AveragedModel"}


def _averaged_models_without_buffers(project: Project, training: Training
                                     ) -> Iterable[tuple[FunctionInfo, int, str]]:
    """``AveragedModel(model, ...)`` built without ``use_buffers=True`` around a model with a
    BatchNorm, in a project that never recomputes the statistics (``update_bn``), the averaged
    model used with its statistics: ``(fn, index of the call, how it is used)``."""
    calls = [(fn, e) for fn, e in project.events("call")
             if e.func in AVERAGED_MODELS or e.func.endswith("swa_utils.update_bn")]
    if any(e.func.endswith("swa_utils.update_bn") for _, e in calls):
        return
    for fn, e in calls:
        if not e.args or e.kwargs.get("use_buffers") == "True" or len(e.targets) != 1:
            continue
        i = fn.events.index(e)
        if not holds_batchnorm(project, fn, i, e.args[0]):
            continue
        used = _evaluated(project, training, fn, e.targets[0], i + 1)
        if used is not None:
            yield fn, i, used


def _evaluated(project: Project, training: Training, fn: FunctionInfo, module: str, i: int) -> Optional[str]:
    """How the object ``module`` holds at event ``i`` of ``fn`` is used with its running
    statistics: its state dict taken (saved, kept as the published weights), or a forward of it
    run in eval mode; None otherwise (a BYOL teacher run in train mode normalises by the batch;
    a copy nothing reads)."""
    mine = [o for o in training.origins(fn, module, i) if o.known]
    made = [(project.functions[q], k) for o in mine for q, k in [(o.fn, o.index), *o.via]
            if q in project.functions and 0 <= k < len(project.functions[q].events)]
    # the names it is made under (`self.teacher = copy.deepcopy(m).eval()`, `ema = make_ema(m)`):
    # the calls to look at
    names = {t.rsplit(".", 1)[-1] for f, k in made for t in f.events[k].targets}
    if not names:
        return None
    evaluated = next((f"it is made in eval mode ({f.path}:{f.events[k].span.line})" for f, k in made
                      if ".eval()" in f.events[k].text), None)
    forward = None
    for other in list(project.functions.values()):
        for k, e in enumerate(other.events):
            called = df.callee_text(e) if e.kind == "call" else ""
            obj = e.receiver if e.method in _NO_FORWARD or e.method in ("eval", "train") else called
            if not obj or "(" in obj or obj.rsplit(".", 1)[-1] not in names:
                continue
            if not any(a.same_as(b) for a in mine for b in training.origins(other, obj, k) if b.known):
                continue
            if e.method == "state_dict":
                return f"its state dict is taken ({other.path}:{e.span.line})"
            if e.method in ("eval", "train"):
                evaluated = evaluated or (f"it is put in eval mode ({other.path}:{e.span.line})"
                                          if training.mode_switch(other, k) else None)
            elif e.method not in _NO_FORWARD:
                forward = forward or f"{other.path}:{e.span.line}"
    return f"{evaluated}, and run at {forward}" if evaluated and forward else None


def holds_batchnorm(project: Project, fn: FunctionInfo, i: int, module: str = "") -> bool:
    """The module called at event ``i`` of ``fn`` (or ``module`` there) holds a BatchNorm, by
    where it was made: its class, or a class it builds among its attributes, constructs one. A
    forward of it in train mode moves running statistics; False for a module without one (a
    linear probe's head) and for one whose making is not known."""
    training = Training.of(project)
    holders = _batchnorm_holders(project)
    e = fn.events[i]
    # the module called, or the one whose method is called (`pl_module.embed(g, x)`)
    names = [module] if module else [e.func, *([e.receiver] if e.method and e.receiver else [])]
    origins = [o for name in names for o in training.origins(fn, name, i) if o.known or o.kind == "self"]
    made = {o.cls for o in origins} | {c for o in origins if o.cls in CONTAINERS for c in _entries(project, o)}
    return any(_builds_batchnorm(project, training, cls, holders) for cls in made)


CONTAINERS = {f"torch.nn.{c}" for c in ("ModuleDict", "ModuleList", "Sequential")}


def _entries(project: Project, made: Origin) -> set[str]:
    """The project classes a container module is built holding (``nn.ModuleDict({"encoder":
    Enc(...), ...})``): those its making statement constructs."""
    fn = project.functions.get(made.fn)
    stmt = statement_of(fn, fn.events[made.index]) if fn is not None and 0 <= made.index < len(fn.events) else None
    return {c for call in (stmt.calls if stmt is not None else ()) for c in constructed_class(project, call)}


def _batchnorm_holders(project: Project) -> set[str]:
    """The functions that name a BatchNorm class, and those reading a module-level table that
    does (``NORMS = {"batchnorm": lambda d: nn.BatchNorm1d(d)}``, then ``NORMS[norm](d)``)."""
    holders: set[str] = set()
    tables: set[str] = set()
    for file, bn in _facts(project, BatchNormBuilt):
        f = function_of(project, file.path, bn.span.line)
        if f is None:
            continue
        holders.add(f.qualname)
        if f.name == MODULE_SCOPE:
            tables |= {t for e in f.events if e.kind == "assign"
                       and e.span.line <= bn.span.line <= e.span.end_line for t in e.targets}
    if tables:
        holders |= {q for q, f in list(project.functions.items())
                    if f.name != MODULE_SCOPE and any(u in tables for e in f.events for u in e.uses)}
    return holders


def _builds_batchnorm(project: Project, training: Training, cls: str, holders: set[str]) -> bool:
    """The module class, or one it builds among its attributes, constructs a BatchNorm in one of
    its methods or through a function they call (a norm factory); ``holders``: the functions
    where a BatchNorm class is named."""
    if cls in BATCHNORMS:
        return True
    inner = [c for c in list(project.classes) if training.contains_class(cls, c)]
    return any(q in holders or holders & set(project.callees(q))
               for q, f in list(project.functions.items()) if f.class_name in inner)


def _feeds_training(project: Project, path: str, line: int, trained_in: set[str]) -> bool:
    """The loader is made where training runs: in a function with a training loop, one it calls,
    or one that (transitively) calls it, or something those call."""
    fn = function_of(project, path, line)
    if fn is None:
        return False
    related = {fn.qualname, *project.ancestors(fn.qualname)}
    return any(q in trained_in for r in related for q in {r, *project.reachable_from(r)})


# the runtime effect of each kind of static finding (BatchNormEvent.kind), by its message
EFFECTS = {"stalled": "left unable to update its running statistics (or averaging them over the "
                      "whole run) in a training forward",
           "frozen": "in eval mode during a training forward",
           "modified": "changed outside its own forward",
           "reset": "reset"}


# a changed momentum shows either way: running statistics that cannot move, or that average
# over the whole run (momentum=None)
EFFECT_KINDS = {"stalled": {"stalled", "cumulative"}}


def _effect_of(message: str) -> Optional[str]:
    if "momentum" in message or "track_running_stats" in message:
        return "stalled"
    if "freezes its running" in message:
        return "frozen"
    if "reset_running_stats" in message:
        return "reset"
    if "overwritten" in message or "in place" in message:
        return "modified"
    return None


def _describe(e) -> str:
    what = {"stalled": f"running statistics not updated by training forwards ({e.detail})",
            "cumulative": f"running statistics are the cumulative average of every batch since "
                          f"the start ({e.detail}): early batches weigh as much as the latest",
            "frozen": "in eval mode during a training forward: running statistics frozen",
            "modified": f"{', '.join(e.buffers)} changed outside the forward",
            "reset": "running statistics reset"}.get(e.kind, e.kind)
    return f"{e.module or 'BatchNorm'}: {what} (after {e.step} step(s))"


def _facts(project: Project, kind: type):
    return ((f, v) for f, v in project.rule_facts(BatchNormStatsTouched.code) if isinstance(v, kind))
