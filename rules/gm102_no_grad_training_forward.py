"""GM102 no-grad-training-forward: gradients switched off around the forward being trained."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static import dataflow as df
from auditor.static.facts import FunctionInfo, Span
from auditor.static.paths import bindings
from auditor.static.project import Project
from auditor.static.training import UNTRAINED_NAME, Training


# a masked autoencoder whose re-mask helper runs with gradients on or off
_REMASK = (
    "import torch\nfrom torch import nn\n"
    "class MAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.enc, self.dec = nn.Linear(4, 4), nn.Linear(4, 4)\n"
    "    {deco}\n"
    "    def remask(self, h, mask):\n"
    "        h = h.clone()\n"
    "        h[mask] = 0.0\n"
    "        return h\n"
    "    def forward(self, x, mask):\n"
    "        h = self.enc(x)\n"
    "        h = self.remask(h, mask)\n"
    "        return self.dec(h)\n"
    "def train(model, opt, data):\n"
    "    for x, mask in data:\n"
    "        out = model(x, mask)\n"
    "        loss = (out - x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "def main(data):\n"
    "    model = MAE()\n"
    "    train(model, torch.optim.Adam(model.parameters()), data)\n"
)


class NoGradTrainingForward(Rule):
    code = "GM102"
    name = "no-grad-training-forward"
    severity = Severity.ERROR
    summary = "`no_grad` / `inference_mode` / `set_grad_enabled(False)` around the training forward"
    # the grad switch and the backward may sit in different files: both kinds are needed
    prefilter = ("no_grad", "inference_mode", "set_grad_enabled", ".backward(")
    doc = """
## What it does
Finds a `with torch.no_grad():`, `with torch.inference_mode():` or
`with torch.set_grad_enabled(False):` block, or a `@torch.no_grad()` / `@torch.inference_mode()`
decorator, around a module call whose output flows into the loss that `.backward()` is called on
— in the training step itself or in any function or method it calls, in any file. The rule
follows the loss back through assignments, calls and return values (the model's `forward`,
helper methods such as `encode` or `reconstruct`). A block is reported at the last forward in
it whose output the loss reads (the value that leaves the block: the statement to move out),
a decorator at the decorator. A decorated helper that runs no module is reported too when it
is handed a module's output and gives it back to the next module (a re-mask helper between the
encoder and the decoder): what it returns has no graph, so nothing before it trains.

Grad-free code that does not feed the backpropagated loss — evaluation, metrics, logging,
EMA/teacher targets computed by a module that is not trained (`teacher`, `ema`, `target`, or
one frozen with `requires_grad_(False)`) — is not reported. A variable mode such as
`torch.set_grad_enabled(phase == "train")` is not reported either.

## Why is this bad?
Under `no_grad` the module's output has no autograd history: the parameters used inside the
block get no gradient and never move. In a GraphMAE this typically hits the encoder (an
`embed()` helper decorated with `@torch.no_grad()` "because it is also used for inference"):
the decoder still trains, so the loss goes down, but it learns to reconstruct from a frozen
random encoding and the masked nodes' points come out scattered. When the whole forward is
inside the block, `backward()` fails — and the usual "fix" (`loss.requires_grad_(True)`)
silences the error while training nothing.

## Example
```python
import torch
import torch.nn.functional as F
from torch import nn


class GraphMAE(nn.Module):
    @torch.no_grad()          # meant for inference, also used by forward()
    def embed(self, g, x):
        return self.encoder(g, x)

    def forward(self, g, x):
        return F.mse_loss(self.decoder(g, self.embed(g, x)), x)


model = GraphMAE()
optimizer = torch.optim.Adam(model.parameters())
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Use instead
```python
import torch
import torch.nn.functional as F
from torch import nn


class GraphMAE(nn.Module):
    def embed(self, g, x):
        return self.encoder(g, x)

    def forward(self, g, x):
        return F.mse_loss(self.decoder(g, self.embed(g, x)), x)


model = GraphMAE()
optimizer = torch.optim.Adam(model.parameters())
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
with torch.no_grad():   # at inference time
    z = model.embed(g, x)
```

## Fix safety
No automatic fix: removing the block changes memory use, and the author may have meant a
frozen encoder (then say so with `requires_grad_(False)` and an optimizer over the trainable
parameters only).

## References
- https://pytorch.org/docs/stable/generated/torch.no_grad.html
- https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
"""

    VALID = [
        # frozen embeddings from a pretrained model's `@torch.no_grad()` method, computed once, a
        # probe's head trained on them by its own optimizer
        Valid(_REMASK.format(deco="@staticmethod").replace("def remask(self, h", "def remask(h").replace(
            "    def forward(self, x, mask):\n",
            "    @torch.no_grad()\n    def embed(self, x):\n        return self.enc(x)\n"
            "    def forward(self, x, mask):\n") + (
            "def probe(model, x, y):\n"
            "    z = model.embed(x)\n"
            "    head = nn.Linear(4, 2)\n"
            "    opt = torch.optim.Adam(head.parameters())\n"
            "    for _ in range(100):\n"
            "        opt.zero_grad()\n"
            "        torch.nn.functional.cross_entropy(head(z), y).backward()\n"
            "        opt.step()\n"
        )),
        Valid(_REMASK.format(deco="@staticmethod").replace("def remask(self, h", "def remask(h")),
        # evaluation under no_grad: its output never reaches a backward
        Valid(
            "import torch\n"
            "def train(model, opt, loader):\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    with torch.no_grad():\n"
            "        val = model(g)\n"
            "    return val.item()\n"
        ),
        # a teacher / EMA target computed without gradients
        Valid(
            "import torch\n"
            "def step(student, teacher, opt, g, x):\n"
            "    with torch.no_grad():\n"
            "        target = teacher(g, x)\n"
            "    loss = ((student(g, x) - target) ** 2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # no_grad around mask sampling (no parameters inside)
        Valid(
            "import torch\n"
            "def step(model, opt, g, x):\n"
            "    with torch.no_grad():\n"
            "        mask = torch.rand(x.shape[0]) < 0.5\n"
            "    loss = model(g, x, mask)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # the train/eval switch: a variable mode
        Valid(
            "import torch\n"
            "def run(model, opt, g, train):\n"
            "    with torch.set_grad_enabled(train):\n"
            "        loss = model(g)\n"
            "    if train:\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # enable_grad inside no_grad re-enables gradients
        Valid(
            "import torch\n"
            "def step(model, opt, g):\n"
            "    with torch.no_grad():\n"
            "        with torch.enable_grad():\n"
            "            loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a decorated inference helper that training does not use
        Valid({
            "model.py": (
                "import torch\nfrom torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(4, 4)\n"
                "        self.decoder = nn.Linear(4, 4)\n"
                "    @torch.no_grad()\n"
                "    def embed(self, x):\n"
                "        return self.encoder(x)\n"
                "    def forward(self, x):\n"
                "        return self.decoder(self.encoder(x)).pow(2).mean()\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\n"
                "model = MAE()\n"
                "opt = torch.optim.Adam(model.parameters())\n"
                "for x in data:\n"
                "    loss = model(x)\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n"
                "z = model.embed(x)\n"
            ),
        }),
        # a linear probe: the reloaded encoder runs under no_grad and no optimizer steps it;
        # the probe's own optimizer holds the classifier alone
        Valid(
            "import torch\nfrom torch import nn\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n"
            "        return self.lin(x)\n"
            "def probe(x, y):\n"
            "    encoder = Encoder()\n"
            "    encoder.load_state_dict(torch.load('encoder.pt', weights_only=True))\n"
            "    with torch.no_grad():\n"
            "        emb = encoder(x)\n"
            "    clf = nn.Linear(4, 2)\n"
            "    opt = torch.optim.Adam(clf.parameters())\n"
            "    for _ in range(10):\n"
            "        loss = nn.functional.cross_entropy(clf(emb), y)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    ]
    INVALID = [
        # the loss computed with gradients off (the forward itself outside the block)
        Invalid(
            "import torch\n"
            "def train(model, criterion, opt, loader):\n"
            "    for g, y in loader:\n"
            "        pred = model(g)\n"
            "        with torch.no_grad():\n"
            "            loss = criterion(pred, y).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=5, message_contains="no gradient",
        ),
        Invalid(
            "import torch\n"
            "def step(model, opt, g):\n"
            "    with torch.no_grad():\n"
            "        loss = model(g)\n"
            "    loss.requires_grad_(True)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=3, column=10,
        ),
        Invalid(
            "import torch\n"
            "def step(model, opt, g, x):\n"
            "    with torch.set_grad_enabled(False):\n"
            "        h = model.encoder(g, x)\n"
            "    loss = model.decoder(g, h).pow(2).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=4,
        ),
        # decorator on a method the model's forward calls, across files
        Invalid({
            "model.py": (
                "import torch\nfrom torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(4, 4)\n"
                "        self.decoder = nn.Linear(4, 4)\n"
                "    @torch.no_grad()\n"
                "    def embed(self, x):\n"
                "        return self.encoder(x)\n"
                "    def forward(self, x):\n"
                "        return self.decoder(self.embed(x)).pow(2).mean()\n"
            ),
            "engine.py": (
                "class Trainer:\n"
                "    def __init__(self, model, optimizer):\n"
                "        self.model = model\n"
                "        self.optimizer = optimizer\n"
                "    def step(self, x):\n"
                "        loss = self.model(x)\n"
                "        self.optimizer.zero_grad()\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\nfrom engine import Trainer\n"
                "model = MAE()\n"
                "trainer = Trainer(model, torch.optim.Adam(model.parameters()))\n"
                "for x in data:\n"
                "    trainer.step(x)\n"
            ),
        }, path="model.py", line=8, message_contains="embed"),
        # inference_mode inside the model's own forward
        Invalid({
            "model.py": (
                "import torch\nfrom torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(4, 4)\n"
                "        self.decoder = nn.Linear(4, 4)\n"
                "    def forward(self, x):\n"
                "        with torch.inference_mode():\n"
                "            h = self.encoder(x)\n"
                "        return self.decoder(h.clone()).pow(2).mean()\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\n"
                "model = MAE()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x in data:\n"
                "    loss = model(x)\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n"
            ),
        }, path="model.py", line=10),
        # the loss module returns the loss beside its parts as numbers: the loss itself still
        # carries the model's gradient
        Invalid(
            "import torch\nfrom torch import nn\n"
            "class Loss(nn.Module):\n"
            "    def forward(self, pred, target):\n"
            "        parts = {'mse': ((pred - target) ** 2).mean()}\n"
            "        total = sum(parts.values())\n"
            "        return total, {k: v.item() for k, v in parts.items()}\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder = nn.Linear(4, 4)\n"
            "        self.decoder = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            h = self.encoder(x)\n"
            "        return self.decoder(h)\n"
            "model = MAE()\n"
            "loss_fn = Loss()\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for x in data:\n"
            "    pred = model(x)\n"
            "    loss, logs = loss_fn(pred, x)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=15,
        ),
        # the model made by a registry lookup and the class's own classmethod constructor
        Invalid({
            "registry.py": (
                "MODELS = {}\n"
                "def register(name):\n"
                "    def deco(cls):\n"
                "        MODELS[name] = cls\n"
                "        return cls\n"
                "    return deco\n"
                "def get_class(name):\n"
                "    return MODELS[name]\n"
                "def build(cfg):\n"
                "    return get_class(cfg['model']).from_config(cfg)\n"
            ),
            "models.py": (
                "import torch\nfrom torch import nn\nfrom registry import register\n"
                "@register('mae')\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(dim, dim)\n"
                "        self.decoder = nn.Linear(dim, dim)\n"
                "    @classmethod\n"
                "    def from_config(cls, cfg):\n"
                "        return cls(cfg['dim'])\n"
                "    def forward(self, x):\n"
                "        with torch.no_grad():\n"
                "            h = self.encoder(x)\n"
                "        return self.decoder(h)\n"
            ),
            "train.py": (
                "import torch\nimport models\nfrom registry import build\n"
                "class Trainer:\n"
                "    def __init__(self, model):\n"
                "        self.model = model\n"
                "        self.opt = torch.optim.Adam(model.parameters())\n"
                "    def step(self, x):\n"
                "        pred = self.model(x)\n"
                "        loss = (pred - x).pow(2).mean()\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
                "        self.opt.step()\n"
                "def main(cfg, data):\n"
                "    model = build(cfg)\n"
                "    trainer = Trainer(model)\n"
                "    for x in data:\n"
                "        trainer.step(x)\n"
            ),
        }, path="models.py", line=15),
        # the model class imported from the package that re-exports it (`from .sub import *`)
        Invalid({
            "mypkg/__init__.py": "from .sub import *\n",
            "mypkg/sub/__init__.py": "from .net import Net\n__all__ = ['Net']\n",
            "mypkg/sub/net.py": (
                "import torch\nfrom torch import nn\n"
                "class Net(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.emb, self.lin = nn.Embedding(4, 4), nn.Linear(4, 4)\n"
                "    def forward(self, x):\n"
                "        with torch.no_grad():\n"
                "            e = self.emb(x)\n"
                "        return self.lin(e)\n"
            ),
            "main.py": (
                "import torch\nfrom mypkg import Net\n"
                "def train(model, loader, opt):\n"
                "    for x, y in loader:\n"
                "        loss = torch.nn.functional.mse_loss(model(x), y)\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "def main(loader):\n"
                "    model = Net().to('cpu')\n"
                "    train(model, loader, torch.optim.Adam(model.parameters()))\n"
            ),
        }, path="mypkg/sub/net.py", line=9),
        # the model reached as a field of the training state the loop passes around (a
        # NamedTuple built from it): its encoder runs under no_grad in the step
        Invalid(
            "from typing import NamedTuple\n"
            "\n"
            "import torch\n"
            "import torch.nn.functional as F\n"
            "\n"
            "\n"
            "def loss_fn(outputs, x):\n"
            '    rec = F.mse_loss(outputs["recon"], x)\n'
            "    total = 1.0 * rec\n"
            '    return total, {"recon": rec.item()}\n'
            "\n"
            "\n"
            "class State(NamedTuple):\n"
            "    model: torch.nn.Module\n"
            "    optimizer: torch.optim.Optimizer\n"
            "\n"
            "\n"
            "def train_step(state, x):\n"
            "    model, opt = state.model, state.optimizer\n"
            "    with torch.no_grad():\n"
            "        h = model.encode(x)\n"
            '    outputs = {"recon": model.decode(h)}\n'
            "    loss, parts = loss_fn(outputs, x)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "\n"
            "\n"
            "class AE(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = torch.nn.Linear(4, 4)\n"
            "        self.dec = torch.nn.Linear(4, 4)\n"
            "\n"
            "    def encode(self, x):\n"
            "        return self.enc(x)\n"
            "\n"
            "    def decode(self, h):\n"
            "        return self.dec(h)\n"
            "\n"
            "\n"
            "def main(x):\n"
            "    model = AE()\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    state = State(model, opt)\n"
            "    for _ in range(10):\n"
            "        train_step(state, x)\n"
            "\n"
            "\n"
            'if __name__ == "__main__":\n'
            "    main(torch.randn(8, 4))\n",
            line=21, message_contains="model.encode",
        ),
        # a template method: the base class's loop calls the hook a subclass overrides, and the
        # override runs its forward under no_grad
        Invalid({
            "base.py": (
                "class BaseTrainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model, self.opt = model, opt\n"
                "    def training_step(self, batch):\n"
                "        raise NotImplementedError\n"
                "    def fit(self, loader):\n"
                "        for batch in loader:\n"
                "            loss = self.training_step(batch)\n"
                "            self.opt.zero_grad()\n"
                "            loss.backward()\n"
                "            self.opt.step()\n"
            ),
            "trainer.py": (
                "import torch\nfrom base import BaseTrainer\n"
                "class MAETrainer(BaseTrainer):\n"
                "    @torch.no_grad()\n"
                "    def training_step(self, batch):\n"
                "        return self.model(batch).pow(2).mean()\n"
            ),
        }, path="trainer.py", line=4),
        # the trained model reached through a chain of plain renames: each is another name for
        # one value, no step deeper in the search for where it was made
        Invalid(
            "import torch\nfrom torch import nn\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.body = nn.Linear(4, 4)\n"
            "        self.head = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n"
            "        return self.head(self.body(x))\n"
            "def train(data):\n"
            "    net = Net()\n"
            "    opt = torch.optim.Adam(net.parameters())\n"
            + "".join(f"    a{k} = {'net' if k == 1 else f'a{k - 1}'}\n" for k in range(1, 8)) +
            "    for x in data:\n"
            "        with torch.no_grad():\n"
            "            h = a7.body(x)\n"
            "        loss = a7.head(h).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=22,
        ),
        # a no_grad helper that only writes the mask token (a parameter a factory registered)
        # into the input: the token never trains
        Invalid(
            "import torch\nfrom torch import nn\n"
            "def build():\n"
            "    m = nn.ModuleDict({'enc': nn.Linear(4, 4)})\n"
            "    m.register_parameter('mask_token', nn.Parameter(torch.zeros(1, 4)))\n"
            "    return m\n"
            "@torch.no_grad()\ndef mask_input(m, x, mask):\n"
            "    x_in = x.clone()\n"
            "    x_in[mask] += m.mask_token\n"
            "    return x_in\n"
            "model = build()\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x, mask in batches:\n"
            "    loss = model['enc'](mask_input(model, x, mask))[mask].pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=7, message_contains="mask_input"),
        # the re-mask helper decorated no_grad: the decoder is handed the encoder's output without
        # its graph
        Invalid(_REMASK.format(deco="@torch.no_grad()"), line=7, message_contains="self.enc(...)"),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        t = Training.of(project)
        reported: set[tuple[str, int, int]] = set()
        for fn, i in t.backward_sites():
            where = f"{fn.path}:{fn.events[i].span.line}"
            # the backpropagated value itself computed with gradients off: nothing reaches any
            # parameter, whatever the statement calls
            made = next((j for j in range(i - 1, -1, -1) if fn.events[j].kind in ("assign", "augassign")
                         and fn.events[i].receiver in fn.events[j].targets), None)
            off = t.grad_off(fn, made) if made is not None else None
            if off is not None:
                span = fn.events[off].span
                reported.add((fn.path, span.line, span.column))
                yield cls.make_finding(
                    fn.path, span,
                    f"`{fn.events[off].func}(...)` disables gradients where `{fn.events[i].receiver}` "
                    f"is computed, and it is backpropagated at {where}: it carries no gradient to any "
                    f"parameter",
                    fix="compute the loss outside the grad-disabling block")
            blocks: dict[tuple[str, int], list] = {}  # grad-disabling block -> forwards in it
            for sfn, j in t.loss_slice(fn, i):
                if j < 0:
                    k = t.grad_off_decorator(sfn)
                    if k is None:
                        continue
                    # it runs a module, or reads a module's parameter (`x + m.mask_token`), or
                    # is handed a module's output that it returns into the next module
                    runs = [m for m, e in enumerate(sfn.events)
                            if t.module_call(sfn, m) and not UNTRAINED_NAME.search(e.func)]
                    if runs and not any(t.steps_module_of(sfn, sfn.events[m], fn, i) for m in runs):
                        continue  # frozen embeddings for a probe: its optimizer holds the head alone
                    given = None if runs or any(df.is_parameter(project, sfn, u) for e in sfn.events
                                                for u in e.uses) else _handed_graph(project, sfn)
                    if given == "":
                        continue
                    span = t.decorator_span(sfn, k)
                    if (sfn.path, span.line, span.column) in reported:
                        continue
                    reported.add((sfn.path, span.line, span.column))
                    what = f"`@{sfn.decorators[k]}` on `{sfn.name}`"
                    if given is None:
                        yield cls._finding(sfn.path, span, what, sfn.name, where)
                        continue
                    yield cls.make_finding(
                        sfn.path, span,
                        f"{what} returns {given} without its graph, and the result is fed to the "
                        f"next module on the way to the loss backpropagated at {where}: every module "
                        f"before it gets no gradient from this loss",
                        fix="remove the decorator: zeroing or copying rows needs no gradient-free "
                            "mode, and autograd handles the in-place write on a clone")
                    continue
                off = t.grad_off(sfn, j)
                if off is None or not t.module_call(sfn, j) or UNTRAINED_NAME.search(sfn.events[j].func):
                    continue
                called = sfn.events[j].func.removesuffix("()")
                if re.fullmatch(r"[\w.]+", called) and t.never_trained(sfn, called, j):
                    continue  # a module no optimizer steps (a probe's frozen encoder)
                blocks.setdefault((sfn.qualname, off), [sfn, off, []])[2].append(j)
            for sfn, off, forwards in blocks.values():
                block = sfn.events[off].span
                if (sfn.path, block.line, block.column) in reported:
                    continue
                reported.add((sfn.path, block.line, block.column))
                # the last forward of the block on the loss's path: the value that leaves the
                # block for the loss (the earlier ones feed it), the statement to move out
                last = max(sfn.events[j].span.line for j in forwards)
                j = min(j for j in forwards if sfn.events[j].span.line == last)  # the outer call
                yield cls._finding(sfn.path, sfn.events[j].span,
                                   f"`{sfn.events[off].func}(...)` at line {block.line}",
                                   sfn.events[j].func, where)

    @classmethod
    def _finding(cls, path: str, span: Span, what: str, callee: str, where: str) -> Finding:
        return cls.make_finding(
            path, span,
            f"{what} disables gradients around `{callee}`, whose output feeds the loss "
            f"backpropagated at {where}: the parameters it uses get no gradient and never train",
            fix="remove the grad-disabling block from the training path (keep it only for "
                "inference), or freeze the module explicitly with requires_grad_(False)",
        )

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the grad-disabling line never ran"])
        for step in evidence.steps:
            reach = evidence.param_reachability(step)
            if step.grad_enabled_at_forward is False or step.inference_mode_at_forward:
                return Verdict(Status.CONFIRMED,
                               [f"the training forward of step {step.index} ran with gradients "
                                f"disabled"])
            if reach is not None and reach.unreached:
                return Verdict(Status.CONFIRMED, [reach.summary()])
        if evidence.steps:
            return Verdict(Status.REFUTED, ["every parameter used in the forward and meant to train was reachable "
                                            "from the loss"])
        return None


def _handed_graph(project: Project, fn: FunctionInfo) -> str:
    """What ``fn``, run with gradients off, is handed that carries a module's gradient and gives
    back for another module to take (a re-mask helper between the encoder and the decoder):
    ``"the output of <module> (<where>)"``, or "" when no call site does so (a target built from
    a teacher's output goes to the loss, not into a module)."""
    returned = {p for p in fn.params if p not in ("self", "cls") and any(
        s.kind == "return" and df.mentions(s.text, p) for s in df.statements(fn))}
    for caller, call in df.callers_of(project, fn.qualname)[:20]:
        stmt = df.statement_of(caller, call)
        args = [a for p, a in bindings(call, fn) if p in returned]
        if stmt is None:
            continue
        # an argument that is itself a module's call (`remask(self.enc(x), m)`), or names that
        # derive from one
        inner = [c for c in stmt.calls if df.callee_text(c) + "(...)" in args
                 and df.contains(call.span, c.span) and df.is_module_output(project, caller, c)]
        names = [u for u in stmt.uses if any(df.mentions(a, u) for a in args)]
        origin = df.Origin(caller, inner[0], df.callee_text(inner[0]) + "(...)") if inner else \
            df.derives_from_module(project, caller, names, stmt.index) if names else None
        if origin is None:
            continue
        flow = df.flows_from(project, caller, call)
        for step in flow.steps:
            if any(c is not call and df.is_module_output(project, step.fn, c) and (
                    df.contains(c.span, call.span) or any(
                        df.mentions(a, h) for a in [*c.args, *c.kwargs.values()] for h in step.hit))
                   for c in step.stmt.calls):
                return f"the output of `{origin.what}` ({origin.where})"
    return ""
