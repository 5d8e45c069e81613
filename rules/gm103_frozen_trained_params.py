"""GM103 frozen-trained-params: ``requires_grad=False`` on parameters the optimizer is meant to
train."""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static import dataflow as df
from auditor.static.facts import FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.training import UNTRAINED_NAME, OptimizerBuild, Origin, Training
from auditor.static.conditions import normalise, tests_of
from auditor.static.config_truth import decided, never_runs, setting_at_fault, switched_on
from auditor.static.paths import trains_after
from auditor.static.config_values import values_of
from auditor.static.values import config_default

PARAMETER_CLASSES = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")
# a setting whose name says it freezes (`freeze_encoder`, `frozen_backbone`, `fix_encoder`)
def _value(project: Project, fn: FunctionInfo, line: int, text: str) -> Optional[tuple[bool, str]]:
    """A requires_grad flag as written, with why it is known: a literal, a configuration read
    whose key nothing in the tree sets (``cfg.get("train_encoder", False)``: every run gets the
    default), or one whose every configured value on the program is the same flag (``not
    cfg.freeze_encoder`` with ``freeze_encoder`` set true); negated by ``not``."""
    if text.startswith("not "):
        inner = _value(project, fn, line, text[4:].strip())
        return None if inner is None else (not inner[0], inner[1])
    if text in ("True", "False"):
        return text == "True", ""
    value = config_default(project, text)
    if isinstance(value, bool):
        return value, "nothing in the tree sets that key"
    found = values_of(project, fn, text, line)
    if len({v.value for v in found}) == 1 and isinstance(found[0].value, bool):
        return found[0].value, f"{found[0].source.what} is {found[0].value} ({found[0].source.where})"
    return None


def _freezes(project: Project, fn: FunctionInfo) -> Iterator[tuple[int, str, bool, str]]:
    """(event index, module/parameter chain, frozen?, the flag when it is a configuration read)
    for each requires_grad switch in ``fn``."""
    for i, e in enumerate(fn.events):
        if e.kind == "call" and e.method == "requires_grad_":
            text = (e.args[:1] or [e.kwargs.get("requires_grad", "True")])[0]
            if text.endswith("(...)"):  # a call as the argument: its own event spells it out
                inner = next((x for x in fn.events[i + 1:] if x.kind == "call"
                              and x.span.line == e.span.line and text.startswith(x.func)), None)
                text = f"{inner.func}({', '.join(inner.args)})" if inner is not None else text
            flag = _value(project, fn, e.span.line, text)
            if flag is not None:
                yield i, _through_loop(fn, i, e.receiver), not flag[0], _read(text, flag[1])
        elif e.kind == "assign" and len(e.targets) == 1 and e.targets[0].endswith(".requires_grad"):
            text = e.text.split("=", 1)[-1].strip()
            flag = _value(project, fn, e.span.line, text)
            if flag is not None:
                yield i, _through_loop(fn, i, e.targets[0].rsplit(".", 1)[0]), not flag[0], \
                    _read(text, flag[1])
        elif e.kind == "call" and e.func in PARAMETER_CLASSES and \
                e.kwargs.get("requires_grad") == "False" and _fresh(fn, i):
            # bound to a name, or registered on a module by name
            # (`m.register_parameter("mask_token", nn.Parameter(..., requires_grad=False))`)
            registered = next((f"{x.receiver}.{df.registered_name(x)}" for x in fn.events[:i]
                               if df.registered_name(x) and e.span.within(x.span)), "")
            if len(e.targets) == 1 or registered:
                yield i, e.targets[0] if len(e.targets) == 1 else registered, True, ""


# a tensor made to be learned from: a frozen Parameter built from one is a placeholder left
# frozen (a mask token); one built from data (`torch.tensor(centers)`) is a constant by design
FRESH_INITS = ("torch.zeros", "torch.ones", "torch.empty", "torch.randn", "torch.rand",
               "torch.full", "torch.Tensor", "torch.FloatTensor")


def _fresh(fn: FunctionInfo, i: int) -> bool:
    """The Parameter call at event ``i`` wraps a freshly initialised tensor."""
    e = fn.events[i]
    arg = (e.args[:1] or [e.kwargs.get("data", "")])[0]
    if not arg.endswith(")"):
        return False  # a name: a tensor made elsewhere
    # the argument's own call event (the first call inside this one), its function as imports
    # resolve it (`th.zeros`)
    inside = [x for x in fn.events[i + 1:] if x.kind == "call"
              and (e.span.line, e.span.column) < (x.span.line, x.span.column)
              and (x.span.end_line, x.span.end_column) <= (e.span.end_line, e.span.end_column)]
    first = min(inside, key=lambda x: (x.span.line, x.span.column), default=None)
    return first is not None and first.func in FRESH_INITS


def _same_make(frozen: Origin, given: Origin) -> bool:
    """Two origins that may be one object: one construction, and the factory calls that returned
    the frozen one (none when frozen inside the factory itself: every object it makes) among
    those that returned the given one."""
    return (frozen.kind, frozen.cls, frozen.fn, frozen.index) == \
        (given.kind, given.cls, given.fn, given.index) and \
        given.via[len(given.via) - len(frozen.via):] == frozen.via


def _read(text: str, why: str) -> str:
    """The flag as the message shows it: a configuration read and what decides it."""
    return f"`{text}`: {why}" if why else ""


def _through_loop(fn: FunctionInfo, i: int, chain: str) -> str:
    """``p`` in ``for p in model.encoder.parameters():`` -> ``model.encoder``."""
    if "." in chain:
        return chain
    for j in range(i - 1, -1, -1):
        e = fn.events[j]
        if e.kind == "assign" and chain in e.targets:
            for u in e.uses:
                if u.endswith((".parameters", ".named_parameters")):
                    return u.rsplit(".", 1)[0]
            return chain
    return chain


# a LightningModule wrapping the model whose own constructor freezes a parameter; the wrapper's
# optimizer is given the model's parameters (or, in the valid twin, its encoder's only)
_WRAPPED = (
    "import torch\nimport torch.nn as nn\nimport pytorch_lightning as pl\n"
    "class MAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = nn.Linear(8, 8)\n"
    "        self.mask_token = nn.Parameter(torch.zeros(1, 8))\n"
    "        self.mask_token.requires_grad_(False)\n"
    "    def forward(self, x):\n"
    "        return self.encoder(x + self.mask_token)\n"
    "class Lit(pl.LightningModule):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.model = MAE()\n"
    "    def training_step(self, batch, i):\n"
    "        return self.model(batch).pow(2).mean()\n"
    "    def configure_optimizers(self):\n"
    "        return torch.optim.Adam(self.model.parameters(), lr=1e-3)\n"
)


# a trainer that freezes the encoder unless its configuration says to train it (the examples)
_TRAINER_FROM_CONFIG = (
    "class Trainer:\n"
    "    def __init__(self, model, optimizer, cfg):\n"
    "        self.model, self.optimizer = model, optimizer\n"
    "        for p in model.encoder.parameters():\n"
    "            p.requires_grad_(cfg.get(\"train_encoder\", False))\n"
)


# a freeze switched by a configuration flag for a later stage, read while building the optimizer
_FREEZE_SWITCH = (
    "import torch\n"
    "from config import DEFAULTS\n"
    "def make(model, cfg):\n"
    "    model.encoder.requires_grad_(not cfg['probe']['freeze_encoder'])\n"
    "    return torch.optim.Adam(model.parameters(), lr=cfg['lr'])\n"
    "def main(model, loader):\n"
    "    opt = make(model, DEFAULTS)\n"
    "    for g in loader:\n"
    "        opt.zero_grad()\n"
    "        model(g).backward()\n"
    "        opt.step()\n"
)


# a freeze for later stages, under a test of the stage the configuration file names; the file is
# found from the script's own path (the examples)
_STAGE_FREEZE = (
    "from pathlib import Path\nimport torch\nimport yaml\nfrom torch import nn\n"
    "CONFIG = Path(__file__).resolve().parents[1] / 'configs' / 'train.yaml'\n"
    "with open(str(CONFIG)) as fh:\n"
    "    cfg = yaml.safe_load(fh)\n"
    "model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n"
    "if cfg['stage'] != 'pretrain':\n"
    "    model[0].requires_grad_(False)\n"
    "opt = torch.optim.Adam(model.parameters(), lr=cfg['lr'])\n"
)


# a freeze where the model is built, under a configuration switch, and an optimizer given the
# trainable subset only (the examples: the switch's default, a warm start)
_BUILT_FROZEN = (
    "import torch\nfrom torch import nn\n"
    "DEFAULTS = {'pretrain': True, 'lr': 0.01}\n"
    "class MAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = nn.Linear(8, 8)\n"
    "        self.decoder = nn.Linear(8, 8)\n"
    "    def forward(self, x):\n"
    "        return self.decoder(self.encoder(x))\n"
    "def build(cfg):\n"
    "    model = MAE()\n"
    "    if cfg['pretrain']:\n"
    "        model.encoder.requires_grad_(False)\n"
    "    return model\n"
    "def main(loader):\n"
    "    model = build(DEFAULTS)\n"
    "    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)\n"
    "    for x in loader:\n"
    "        loss = (model(x) - x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)


class FrozenTrainedParams(Rule):
    code = "GM103"
    name = "frozen-trained-params"
    severity = Severity.ERROR
    summary = "`requires_grad=False` on parameters of the model the optimizer trains"
    prefilter = ("requires_grad", "optim")  # the freeze and the optimizer, maybe in two files
    doc = """
## What it does
Finds `requires_grad_(False)`, `p.requires_grad = False` (also in a loop over
`module.parameters()`, in a helper in another file) and `nn.Parameter(..., requires_grad=False)`
on a module or parameter of a model whose optimizer was given *all* of that model's parameters
(`Adam(model.parameters())`). The frozen object and the optimizer's model are matched by where they
were created, across assignments, attributes, parameters and files.

Not reported: freezing a separate module the optimizer does not hold (a teacher, an EMA copy, a
pretrained feature extractor built as its own instance); an optimizer given an explicit trainable
subset (`filter(lambda p: p.requires_grad, ...)`, `model.decoder.parameters()`) — the documented
linear-probe / partial fine-tuning set-up; attributes named like teachers or EMA targets; and a
freeze undone later in the same function (`requires_grad_(True)`).

One subset case is reported: a part of the model frozen where the model is built (its
constructor, or the factory that builds it), on every configured run (no test, or one the
configuration decides true), while no weights are ever loaded into a model of that make that
trains afterwards. A linear probe freezes a *pretrained* encoder; this one keeps its random
initialisation, and the subset optimizer trains the rest around it.

## Why is this bad?
The optimizer lists the parameters, so the pipeline looks like it trains the whole model, but
frozen parameters get no gradient and stay at their initial (or pretrained) values. This is
typically a freeze left on from a fine-tuning recipe: a GraphMAE whose encoder is frozen keeps
random embeddings, the decoder alone learns, the loss still goes down, and the reconstructed
points are scattered. A mask token created with `requires_grad=False` stays zero and the model
cannot tell masked nodes from genuine zero features.

## Example
```python
for p in model.encoder.parameters():     # from the fine-tuning recipe
    p.requires_grad = False
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
```

## Use instead
```python
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
# or, for a deliberate linear probe, hand the optimizer the trainable subset only:
optimizer = torch.optim.Adam((p for p in model.parameters() if p.requires_grad), lr=1e-3)
```

## Fix safety
No automatic fix: whether the freeze is intended is the author's decision.

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.requires_grad_.html
- https://pytorch.org/tutorials/beginner/finetuning_torchvision_models_tutorial.html
"""

    VALID = [
        # a freeze for a later stage under a test the YAML the script finds beside itself decides
        Valid({"src/lit.py": _STAGE_FREEZE, "configs/train.yaml": "stage: pretrain\nlr: 0.001\n"}),
        # constants kept as frozen Parameters, built from data (RBF centres, feature statistics),
        # here and when reset: nothing meant to train is frozen
        Valid({
            "rbf.py": (
                "import numpy as np\nimport torch\nfrom torch import nn\n"
                "class RBF(nn.Module):\n"
                "    def __init__(self, low=0., high=30., gap=0.1):\n"
                "        super().__init__()\n"
                "        centers = np.linspace(low, high, int((high - low) / gap))\n"
                "        self.centers = nn.Parameter(torch.tensor(centers).float(), requires_grad=False)\n"
                "        self.fc = nn.Linear(len(centers), 8)\n"
                "    def reset_parameters(self):\n"
                "        self.centers = nn.Parameter(self.centers.clone().detach(), requires_grad=False)\n"
            ),
            "train.py": (
                "import torch\nfrom rbf import RBF\n"
                "model = RBF()\n"
                "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
            ),
        }),
        Valid(_WRAPPED.replace("self.model.parameters()", "self.model.encoder.parameters()")),
        # a configuration read whose key the tree's configuration sets
        Valid({
            "trainer.py": _TRAINER_FROM_CONFIG,
            "train.py": (
                "import torch\nfrom torch import nn\nfrom trainer import Trainer\n"
                "model = nn.Module()\nmodel.encoder = nn.Linear(4, 4)\n"
                "optimizer = torch.optim.Adam(model.parameters())\n"
                "cfg = {\"lr\": 0.001, \"train_encoder\": True}\n"
                "trainer = Trainer(model, optimizer, cfg)\n"
            ),
        }),
        # teacher built as its own instance and frozen; the optimizer holds the student only
        Valid(
            "import copy\nimport torch\nfrom torch import nn\n"
            "student = nn.Linear(4, 4)\n"
            "teacher = copy.deepcopy(student)\n"
            "teacher.requires_grad_(False)\n"
            "opt = torch.optim.Adam(student.parameters())\n"
        ),
        # linear probe: the optimizer gets the trainable subset only
        Valid(
            "import torch\n"
            "def probe(model):\n"
            "    for p in model.encoder.parameters():\n"
            "        p.requires_grad = False\n"
            "    return torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()))\n"
        ),
        Valid(
            "import torch\n"
            "def probe(model):\n"
            "    model.encoder.requires_grad_(False)\n"
            "    return torch.optim.Adam(model.head.parameters())\n"
        ),
        # unfrozen again before training
        Valid(
            "import torch\n"
            "def main(model):\n"
            "    model.encoder.requires_grad_(False)\n"
            "    model.encoder.requires_grad_(True)\n"
            "    return torch.optim.Adam(model.parameters())\n"
        ),
        # a plain tensor (not a parameter), and an EMA attribute inside the model
        Valid({
            "model.py": (
                "import copy\nimport torch\nfrom torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(4, 4)\n"
                "        self.ema_encoder = copy.deepcopy(self.encoder)\n"
                "        for p in self.ema_encoder.parameters():\n"
                "            p.requires_grad = False\n"
                "        self.noise = torch.zeros(4, requires_grad=False)\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\n"
                "model = MAE()\n"
                "opt = torch.optim.Adam(model.parameters())\n"
            ),
        }),
        # the same switch, set so that the encoder trains
        Valid({
            "config.py": "DEFAULTS = {'probe': {'freeze_encoder': False}, 'lr': 0.01}\n",
            "train.py": _FREEZE_SWITCH,
        }),
        # the stage test with a comment after it, and written over two lines
        Valid({"src/lit.py": _STAGE_FREEZE.replace(
            "!= 'pretrain':\n", "!= 'pretrain':  # '#' stages train all\n"),
            "configs/train.yaml": "stage: pretrain\nlr: 0.001\n"}),
        Valid({"src/lit.py": _STAGE_FREEZE.replace("if cfg['stage'] != 'pretrain':\n",
                                                   "if (cfg['stage']\n        != 'pretrain'):\n"),
               "configs/train.yaml": "stage: pretrain\nlr: 0.001\n"}),
        # a part frozen where the model is built, with a subset optimizer: the switch is off by
        # default, or pretrained weights are loaded before training (a linear probe)
        Valid(_BUILT_FROZEN.replace("'pretrain': True", "'pretrain': False")),
        Valid(_BUILT_FROZEN.replace("    model = build(DEFAULTS)\n", "    model = build(DEFAULTS)\n"
                                    "    model.load_state_dict(torch.load('pre.pt'))\n")),
        # frozen in the model's own constructor, the whole model loaded before training
        Valid(_BUILT_FROZEN.replace("        self.decoder = nn.Linear(8, 8)\n",
                                    "        self.decoder = nn.Linear(8, 8)\n"
                                    "        self.encoder.requires_grad_(False)\n")
              .replace("    if cfg['pretrain']:\n        model.encoder.requires_grad_(False)\n", "")
              .replace("    model = build(DEFAULTS)\n", "    model = build(DEFAULTS)\n"
                       "    model.load_state_dict(torch.load('pre.pt'))\n")),
    ]
    INVALID = [
        Invalid(_WRAPPED, line=9),
        # a configuration read whose key nothing sets: every run takes the default, False
        Invalid({
            "trainer.py": _TRAINER_FROM_CONFIG,
            "train.py": (
                "import torch\nfrom torch import nn\nfrom trainer import Trainer\n"
                "model = nn.Module()\nmodel.encoder = nn.Linear(4, 4)\n"
                "optimizer = torch.optim.Adam(model.parameters())\n"
                "cfg = {\"lr\": 0.001}\n"
                "trainer = Trainer(model, optimizer, cfg)\n"
            ),
        }, path="trainer.py", line=5, message_contains="nothing in the tree sets"),
        Invalid(
            "import torch\n"
            "def main(model):\n"
            "    for p in model.encoder.parameters():\n"
            "        p.requires_grad = False\n"
            "    return torch.optim.Adam(model.parameters())\n",
            line=4, column=9,
        ),
        # a freeze helper in another file, called on the trained model's encoder
        Invalid({
            "utils.py": (
                "def freeze(module):\n"
                "    for p in module.parameters():\n"
                "        p.requires_grad = False\n"
            ),
            "train.py": (
                "import torch\nfrom torch import nn\nfrom utils import freeze\n"
                "model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n"
                "freeze(model)\n"
                "opt = torch.optim.Adam(model.parameters())\n"
            ),
        }, path="utils.py", line=3),
        # a callback fired by the name of its hook (`getattr(cb, hook)(self)`) freezes the
        # encoder of the model whose parameters a helper's optimizer was handed
        Invalid({
            "callbacks.py": (
                "class Probe:\n"
                "    def on_epoch_start(self, trainer):\n"
                "        pass\n"
                "    def on_epoch_end(self, trainer):\n"
                "        trainer.model.encoder.requires_grad_(False)\n"
            ),
            "train.py": (
                "import torch\nfrom torch import nn\nfrom callbacks import Probe\n"
                "def make_optimizer(params):\n"
                "    return torch.optim.Adam(params, lr=1e-3)\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt, callbacks):\n"
                "        self.model, self.opt, self.callbacks = model, opt, callbacks\n"
                "    def emit(self, hook):\n"
                "        for cb in self.callbacks:\n"
                "            getattr(cb, hook)(self)\n"
                "    def fit(self, data):\n"
                "        for epoch in range(3):\n"
                "            self.emit('on_epoch_start')\n"
                "            for x in data:\n"
                "                loss = self.model(x).sum()\n"
                "                self.opt.zero_grad()\n"
                "                loss.backward()\n"
                "                self.opt.step()\n"
                "            self.emit('on_epoch_end')\n"
                "model = nn.Sequential()\n"
                "model.encoder = nn.Linear(4, 4)\n"
                "Trainer(model, make_optimizer(model.parameters()), [Probe()]).fit([torch.ones(4)])\n"
            ),
        }, path="callbacks.py", line=5),
        # a mask token created frozen inside the model class
        Invalid({
            "model.py": (
                "import torch\nfrom torch import nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.enc_mask_token = nn.Parameter(torch.zeros(1, dim), requires_grad=False)\n"
                "        self.encoder = nn.Linear(dim, dim)\n"
            ),
            "train.py": (
                "import torch\nfrom model import MAE\n"
                "model = MAE(8).to('cpu')\n"
                "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
            ),
        }, path="model.py", line=6),
        Invalid(
            "import torch\nfrom torch import nn\n"
            "model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))\n"
            "model[0].requires_grad_(False)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            line=4,
        ),
        # a later stage's switch read while building the stage that trains the encoder
        Invalid({
            "config.py": "DEFAULTS = {'probe': {'freeze_encoder': True}, 'lr': 0.01}\n",
            "train.py": _FREEZE_SWITCH,
        }, path="train.py", line=4, message_contains="is True (config.py:1)"),
        # the same freeze where the configuration names a later stage
        Invalid({"src/lit.py": _STAGE_FREEZE, "configs/train.yaml": "stage: finetune\nlr: 0.001\n"},
                path="src/lit.py", line=10),
        # frozen where it is built, on every run the defaults configure: it keeps its
        # initialisation, the subset optimizer trains the rest
        Invalid(_BUILT_FROZEN, line=14, message_contains="keeps its random initialisation"),
        # the same freeze in the model's own constructor, nothing loaded
        Invalid(_BUILT_FROZEN.replace("        self.decoder = nn.Linear(8, 8)\n",
                                      "        self.decoder = nn.Linear(8, 8)\n"
                                      "        self.encoder.requires_grad_(False)\n")
                .replace("    if cfg['pretrain']:\n        model.encoder.requires_grad_(False)\n", ""),
                line=9, message_contains="keeps its random initialisation"),
        # the mask token registered frozen by the factory; the optimizer takes every parameter
        Invalid(
            "import torch\nfrom torch import nn\n"
            "def build():\n"
            "    m = nn.ModuleDict({'enc': nn.Linear(4, 4)})\n"
            "    m.register_parameter('mask_token', nn.Parameter(torch.zeros(1, 4), requires_grad=False))\n"
            "    return m\n"
            "def mask_input(m, x, mask):\n"
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
            line=5, message_contains="mask_token"),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        t = Training.of(project)
        every = [b for b in t.optimizers() if b.modules or b.made or b.handed or b.collected]
        builds = [b for b in every if not b.filtered]
        subsets = [b for b in every if b.filtered]
        if not every:
            return
        for fn in list(project.functions.values()):
            switches = list(_freezes(project, fn))
            for i, chain, frozen, read in switches:
                if not frozen or UNTRAINED_NAME.search(chain):
                    continue
                if any(not f and j > i and (c == chain or chain.startswith(c + "."))
                       for j, c, f, _ in switches):
                    continue  # unfrozen again
                build = next((b for b in builds if cls._covers(t, b, fn, i, chain)), None)
                if build is None:
                    found = cls._frozen_untrained(t, fn, i, chain, read, subsets)
                    if found is not None:
                        yield found
                    continue
                if never_runs(project, fn, fn.events[i]):
                    continue  # no configured run reaches the freeze
                event = fn.events[i]
                optimizer = f"{build.fn.path}:{build.event.span.line}"
                setting = switched_on(project, fn, event)
                if setting is not None and setting_at_fault(fn, *setting):
                    test, source = setting  # the freeze is a switch; the setting turns it on
                    yield cls.make_finding(
                        source.path, Span(source.line, 1, source.line, 1),
                        f"this setting turns `{normalise(test)}` on for every configured run "
                        f"({source.what}), so `{chain}` is frozen at {fn.path}:{event.span.line} "
                        f"while the optimizer built at {optimizer} is given all of the model's "
                        f"parameters: the frozen ones never train",
                        fix="set it to off where the model should train the frozen part",
                    )
                    continue
                if setting is not None:
                    test, source = setting
                    read = ", ".join(filter(None, [read, f"`{normalise(test)}` holds on every "
                                                         f"configured run: {source.what}, {source.where}"]))
                yield cls.make_finding(
                    fn.path, event.span,
                    f"`{chain}` is frozen (requires_grad=False"
                    + (f", {read}" if read else "")
                    + f") but the optimizer built at {optimizer} is given all of the model's "
                    f"parameters: the frozen ones never train",
                    fix="remove the freeze, or give the optimizer only the parameters meant to "
                        "train (and document the partial fine-tuning)",
                )

    @classmethod
    def _frozen_untrained(cls, t: Training, fn: FunctionInfo, i: int, chain: str, read: str,
                          subsets: list[OptimizerBuild]) -> Optional[Finding]:
        """A freeze where the model is built, on every configured run, of a part the project
        builds itself, while no weights are ever loaded into a model of that make that trains
        afterwards: the optimizer given the trainable subset trains the rest, and the frozen
        part keeps its random initialisation (a linear probe freezes a *pretrained* encoder)."""
        project = t.project
        build = next((b for b in subsets if cls._covers(t, b, fn, i, chain)), None)
        if build is None:
            return None
        root = re.sub(r"\[.*$", "", chain.split(".")[0])
        made = [o for o in t.origins(fn, root, i) if o.known]
        if root == "self":
            if fn.name != "__init__":
                return None
        elif not made or any(o.fn != fn.qualname for o in made):
            return None  # frozen after the model came from elsewhere: maybe trained or loaded
        parts = t.origins(fn, chain, i)
        if not all(o.known and (o.cls in project.classes or o.cls.startswith("torch.nn."))
                   for o in parts):
            return None  # a library's (maybe pretrained) model, or a part not followed
        event = fn.events[i]
        truths = [decided(project, fn, test, event.span.line) for test in tests_of(event)]
        if not all(truth is not None and truth[0] for truth in truths):
            return None  # a switch some run may turn off
        if cls._warm_started(t, made, {o.cls for o in made} | ({fn.class_name} if root == "self" else set())):
            return None
        why = "; ".join(f"`{normalise(test)}` holds on every run: {truth[1].what}, {truth[1].where}"
                        for test, truth in zip(tests_of(event), truths) if truth[1] is not None)
        return cls.make_finding(
            fn.path, event.span,
            f"`{chain}` is frozen where the model is built (requires_grad=False"
            + (f", {read}" if read else "") + (f"; {why}" if why else "")
            + ") and no weights are loaded into it before training: the optimizer built at "
            f"{build.fn.path}:{build.event.span.line} takes the trainable parameters only, so "
            f"`{chain}` keeps its random initialisation for the whole run",
            fix="train it (remove the freeze, or check its condition), or load its pretrained "
                "weights before freezing it")

    @staticmethod
    def _warm_started(t: Training, made: list[Origin], classes: set[str]) -> bool:
        """Are weights loaded into a model made where ``made`` says, or into an object of (or
        holding) one of ``classes``, which trains afterwards?"""
        for fn, event in t.project.events("call"):
            if event.method != "load_state_dict" or not event.receiver:
                continue
            i = fn.events.index(event)
            loaded = t.origins(fn, re.sub(r"\[.*$", "", event.receiver.split(".")[0]), i)
            # a load into an object not followed may be into this one
            maybe = any(not o.known for o in loaded) or \
                any(_same_make(m, o) for m in made for o in loaded) or \
                any(t.contains_class(o.cls, c) for o in loaded for c in classes)
            if maybe and trains_after(t.project, fn, i, event.receiver) is not None:
                return True
        return False

    @classmethod
    def _covers(cls, t: Training, build: OptimizerBuild, fn: FunctionInfo, i: int,
                chain: str) -> bool:
        """The optimizer holds every parameter of an object that ``chain`` (at ``fn``'s event
        ``i``) is, or is part of."""
        root, _, path = chain.partition(".")
        for module in build.modules:
            if build.fn is fn and (chain == module or chain.startswith(module + ".")):
                return True
            m_root, _, m_path = module.partition(".")
            under = not m_path or path == m_path or path.startswith(m_path + ".")
            if under and root == "self" and m_root == "self" and \
                    cls._same_instance(t.project, fn, build.fn):
                # built in one method of the class over `self.model.parameters()`, frozen in
                # another (`__init__` / `configure_optimizers` of a LightningModule)
                return not re.search(r"copy", cls._made_by(t, fn, chain))
            if root == "self" and fn.class_name:
                # frozen in its own class's method: the optimizer holds an object of that class,
                # or one that builds it (`model.parameters()`, a wrapper's
                # `self.model.parameters()` where the model is the freezing class)
                given = [o for o in t.origins(build.fn, m_root if under else module, build.index)
                         if o.known]
                if any(t.contains_class(o.cls, fn.class_name) for o in given):
                    return not re.search(r"copy", cls._made_by(t, fn, chain))
                continue
            if not under:
                continue
            given = [o for o in t.origins(build.fn, m_root, build.index) if o.known]
            frozen = [o for o in t.origins(fn, re.sub(r"\[.*$", "", root), i) if o.known]
            if m_path == "" and any(_same_make(f, g) for f in frozen for g in given):
                return True
        # `make_optimizer(model.parameters())`: the modules the helper's callers hand it; the
        # modules whose parameters a helper collected into groups (`param_groups(model, wd)`)
        given = [o for o in t.handed_origins(build) if o.known]
        given += [o for where, module, k in build.collected for o in t.origins(where, module, k) if o.known]
        if given and root == "self" and fn.class_name:
            return any(t.contains_class(o.cls, fn.class_name) for o in given) \
                and not re.search(r"copy", cls._made_by(t, fn, chain))
        # the object ``chain`` is part of, at any depth (`trainer.model` of `trainer.model.encoder`)
        parts = re.sub(r"\[.*$", "", chain).split(".")
        frozen = [o for n in range(1, len(parts) + 1) for o in t.origins(fn, ".".join(parts[:n]), i)
                  if o.known] if given else []
        return any(_same_make(f, g) for f in frozen for g in given)

    @staticmethod
    def _same_instance(project: Project, a: FunctionInfo, b: FunctionInfo) -> bool:
        """Methods whose ``self`` may be one object: of one class, or of a class and its base."""
        return bool(a.class_name and b.class_name) and (
            a.class_name in project.lineage(b.class_name) or b.class_name in project.lineage(a.class_name))

    @staticmethod
    def _made_by(t: Training, fn: FunctionInfo, chain: str) -> str:
        return " ".join(o.kind for o in t.origins(fn, chain, len(fn.events)))

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the freeze never ran"])
        for step in evidence.steps:
            # frozen before any step trained them: they keep what they held; a part an earlier
            # stage trained, frozen for a later one, is frozen on purpose
            earlier = evidence.trained_before(step)
            frozen = [p for p in step.params_frozen if p not in earlier]
            if frozen:
                names = ", ".join(frozen[:4])
                unchanged = [p for p in frozen if not step.param_change.get(p)]
                return Verdict(Status.CONFIRMED,
                               [f"{len(frozen)} parameters of the trained model had "
                                f"requires_grad=False at step {step.index} ({names}); "
                                f"{len(unchanged)} of them never changed"])
        if evidence.steps:
            return Verdict(Status.REFUTED, ["no parameter of the trained model was frozen before "
                                            "an earlier step trained it"])
        return None
