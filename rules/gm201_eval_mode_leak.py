"""GM201 eval-mode-leak: ``.eval()`` on the trained model that reaches the next training step
without ``.train()`` in between."""

from __future__ import annotations

import re
from typing import Callable, Hashable, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.conditions import innermost
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo, Span
from auditor.static.paths import (TRAINED, PathSearch, Step, first_trained, forward_use, is_same_or_parent,
                                  training_visitor)
from auditor.static.project import Project
from auditor.static.training import Training, loop_header

RESTORED = "restored"


def _mode_false(event: Event) -> bool:
    """``m.train(False)`` / ``m.train(mode=False)``: an eval in disguise."""
    return event.args[:1] == ["False"] or event.kwargs.get("mode") == "False"


def eval_target(event: Event, imports: dict[str, str]) -> Optional[str]:
    """The module an event puts in eval mode (``model``, ``self``, ``self.encoder``), if any."""
    if event.kind != "call" or not event.receiver or not event.receiver.replace(".", "").replace(
            "_", "").isalnum():
        return None  # `get_model().eval()`, `models[0].eval()`: nothing to follow by name
    if event.receiver.split(".")[0] in imports:
        return None  # `pd.eval(...)`, `sympy.eval`: a module function, not nn.Module.eval
    if event.method == "eval" and not event.args and not event.kwargs:
        return event.receiver
    if event.method == "train" and _mode_false(event):
        return event.receiver
    return None


def visitor(start: FunctionInfo, index: int) -> Callable[[Step, Hashable], tuple[Optional[str], Hashable]]:
    """The walk's visitor from the `.eval()` at event ``index`` of ``start``."""
    def visit(step: Step, state: Hashable) -> tuple[Optional[str], Hashable]:
        if step.event.kind == "call" and step.event.method == "train" \
                and _restores_mode_read_after(step, start, index):
            return None, state  # `model.train(was_training)`: back to the eval the start set
        return _visit(step, state)
    return visit


def _restores_mode_read_after(step: Step, start: FunctionInfo, index: int) -> bool:
    """``m.train(was_training)`` where ``was_training = m.training`` was read on this path
    after the start's `.eval()` (an evaluation helper the leak calls): it puts back eval mode.
    Read before the start (the helper's own eval is the start), it restores the mode the
    helper was entered in."""
    event, fn = step.event, step.fn
    flag = event.args[0] if event.args else event.kwargs.get("mode", "")
    if not re.fullmatch(r"\w+", flag) or flag in ("True", "False"):
        return False
    read = next((j for j in range(step.index - 1, -1, -1) if fn.events[j].kind == "assign"
                 and fn.events[j].targets == [flag]), None)
    if read is None or not fn.events[read].text.rstrip().endswith(".training"):
        return False
    return not (fn is start and read < index)


def _functions_at(project: Project, where: str) -> list[FunctionInfo]:
    """The functions whose body holds ``path:line`` (a path's call site); the module's own
    code (a script's top-level loop, a notebook's cells) when a statement of it is there."""
    path, _, line = where.rpartition(":")
    return [fn for fn in list(project.functions.values()) if fn.path == path and (
        fn.span.line <= int(line) <= fn.span.end_line if fn.span is not None
        else fn.name == MODULE_SCOPE and any(e.span.line == int(line) for e in fn.events))]


def _short(fn: FunctionInfo) -> str:
    return f"{fn.class_name.rsplit('.', 1)[-1]}.{fn.name}" if fn.class_name else fn.name


def _trains(training: Training, fn: FunctionInfo) -> bool:
    """``fn`` puts an attribute of its instance in train mode (``self.model.train()``)."""
    return any(e.kind == "call" and e.receiver.startswith("self.") and training.mode_switch(fn, k) is False
               for k, e in enumerate(fn.events))


def _visit(step: Step, state: Hashable) -> tuple[Optional[str], Hashable]:
    """State: has the tracked model run forward (with gradients) since the `.eval()`, and under
    which condition of which function was `.train()` called on a path that may skip it?"""
    forwarded, restored_under = state if isinstance(state, tuple) else (state, None)
    event, tracked = step.event, step.tracked
    if restored_under is not None and restored_under[0] == step.fn.qualname \
            and restored_under[1] in event.conditions:
        # `if cond: model.train(); ...; loss.backward()`: what runs under the condition that
        # restored runs in train mode; the state goes on for the paths that skipped it (`else`)
        return None, state
    if event.kind == "call" and tracked and event.method == "train" and not _mode_false(event) \
            and (any(is_same_or_parent(event.receiver, name) for name in step.names)
                 or _walks_modules_of(step.fn, step.index, event.receiver, step.names)):
        if not step.conditional:
            return RESTORED, state
        return None, (forwarded, (step.fn.qualname, innermost(event)))
    verdict, forwarded = training_visitor(step, forwarded)
    return verdict, (forwarded, restored_under) if restored_under is not None else forwarded


def _walks_modules_of(fn: FunctionInfo, k: int, receiver: str, names: Iterable[str]) -> bool:
    """``receiver`` at event ``k`` of ``fn`` is each module of a tracked model in turn: bound by
    a loop over its ``.modules()`` (``for m, mode in modes.items(): m.train(mode)``, ``modes``
    made from ``model.modules()``), a restore of every submodule's own mode."""
    header = loop_header(fn, k, receiver)
    walked = header.text.split("\n", 1)[0].split(" in ", 1)[-1] if header is not None else ""
    base = re.match(r"\s*(\w+)", walked)
    made = next((e.text for e in reversed(fn.events[:k]) if e.kind == "assign" and base
                 and e.targets == [base.group(1)]), "") if base else ""
    return any(re.search(rf"\b{re.escape(name)}\.(?:named_)?modules\(\)", walked + " " + made)
               for name in names)


def _loop_start(fn: FunctionInfo, k: int, around: list[int]) -> Optional[tuple[FunctionInfo, int]]:
    """The header line of the outermost loop around event ``k`` of ``fn`` that is not one of
    the loops ``around`` (those the evaluation runs in): where a ``.train()`` before the
    training loop goes. None when the backward shares every loop with the evaluation."""
    loop = next((l for l in fn.events[k].loop_ids if l not in around), None)
    first = next((j for j, e in enumerate(fn.events) if loop in e.loop_ids), None) if loop is not None else None
    # a `for` header is the event just before its body's first (a `while` has none)
    header = fn.events[first - 1] if first else None
    return (fn, header.span.line) if header is not None and header.text.startswith("for ") else None


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


# a notebook's first cells: the model, its optimizer and an evaluation helper that leaves the
# model in eval mode (the examples add the training cells)
_CELLS = (
    "import torch\nfrom torch import nn\n"
    "model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))\n"
    "opt = torch.optim.Adam(model.parameters())\n"
    "@torch.no_grad()\n"
    "def evaluate(m, x):\n"
    "    m.eval()\n"
    "    return m(x).mean()\n"
)


# an early stopper saving the best model, put in eval mode only when it has a save path
STOPPER = (
    "import copy\nimport torch\n"
    "class EarlyStopping:\n"
    "    def __init__(self, patience=10, save_path=None):\n"
    "        self.patience = patience\n"
    "        self.best = None\n"
    "        self.save_path = save_path\n"
    "    def step(self, loss, model):\n"
    "        if self.best is None or loss < self.best:\n"
    "            self.best = loss\n"
    "            self.save(model)\n"
    "    def save(self, model):\n"
    "        if self.save_path is None:\n"
    "            self.best_model = copy.deepcopy(model)\n"
    "        else:\n"
    "            model.eval()\n"
    "            torch.save(model.state_dict(), self.save_path)\n"
    "def main():\n"
    "    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    stopper = EarlyStopping({args})\n"
    "    model.train()\n"
    "    for epoch in range(10):\n"
    "        loss = model(torch.randn(8, 4)).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        stopper.step(loss.item(), model)\n"
)


# an engine that fires the handlers registered on it after each step, a validation handler
# (restoring train mode or not), and the script that wires them
_ENGINE = (
    "class Engine:\n"
    "    def __init__(self, step):\n"
    "        self.step = step\n"
    "        self.handlers = []\n"
    "    def add_handler(self, handler):\n"
    "        self.handlers.append(handler)\n"
    "    def run(self, data):\n"
    "        for batch in data:\n"
    "            self.step(batch)\n"
    "            for handler in self.handlers:\n"
    "                handler(self)\n"
)
_HANDLER = (
    "class Validate:\n"
    "    def __init__(self, model, loader):\n"
    "        self.model, self.loader = model, loader\n"
    "    def __call__(self, engine):\n"
    "        self.model.eval()\n"
    "        for g in self.loader:\n"
    "            self.model(g)\n"
    "{restore}"
)
_FIRED = (
    "import torch\n"
    "from torch import nn\n"
    "from engine import Engine\n"
    "from handlers import Validate\n"
    "def main(loader):\n"
    "    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    def step(batch):\n"
    "        opt.zero_grad()\n"
    "        model(batch).pow(2).mean().backward()\n"
    "        opt.step()\n"
    "    engine = Engine(step)\n"
    "    engine.add_handler(Validate(model, loader))\n"
    "    model.train()\n"
    "    engine.run(loader)\n"
)


# a model whose `self.encoder` comes out of a factory (`make`), read by `use` in forward
_REGISTRY_MODEL = (
    "import torch\n"
    "from torch import nn\n"
    "TABLE = {{}}\n"
    "def register(name):\n"
    "    def deco(cls):\n"
    "        TABLE[name] = cls\n"
    "        return cls\n"
    "    return deco\n"
    "@register('mlp')\n"
    "class MLP(nn.Sequential):\n"
    "    def __init__(self, d):\n"
    "        super().__init__(nn.Linear(d, d), nn.Dropout(0.5))\n"
    "def build(kind, name, *args):\n"
    "    return TABLE[name](*args)\n"
    "def make_table(d):\n"
    "    return torch.zeros(d)\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(4, 4)\n"
    "        self.encoder = {make}\n"
    "    def forward(self, x):\n"
    "        return {use}\n"
    "def evaluate(model, x):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        return model(x)\n"
    "def fit(model, opt, loader, x):\n"
    "    model.train()\n"
    "    for epoch in range(3):\n"
    "        for b in loader:\n"
    "            loss = model(b).pow(2).mean()\n"
    "            opt.zero_grad()\n"
    "            loss.backward()\n"
    "            opt.step()\n"
    "        evaluate(model, x)\n"
    "model = Model()\n"
    "fit(model, torch.optim.Adam(model.parameters()), [torch.randn(2, 4)], torch.randn(2, 4))\n"
)



def _overridden_hook(start: str) -> dict[str, str]:
    """A template method's loop whose base hook puts the model in train mode each epoch, a
    subclass overriding that hook (``start``: its first line, calling ``super()`` or not), and a
    validation whose helper restores the mode it was entered in (the rule's examples)."""
    files = {
        "base.py": (
            "class BaseTrainer:\n"
            "    def __init__(self, model, opt):\n"
            "        self.model, self.opt = model, opt\n"
            "    def on_epoch_start(self):\n"
            "        self.model.train()\n"
            "    def validate(self, x):\n"
            "        pass\n"
            "    def fit(self, loader, x):\n"
            "        for epoch in range(3):\n"
            "            self.on_epoch_start()\n"
            "            for g in loader:\n"
            "                loss = self.model(g).mean()\n"
            "                self.opt.zero_grad()\n"
            "                loss.backward()\n"
            "                self.opt.step()\n"
            "            self.validate(x)\n"
        ),
        "trainer.py": (
            "import torch\nfrom base import BaseTrainer\n"
            "def score(model, x):\n"
            "    was_training = model.training\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        out = model(x)\n"
            "    model.train(was_training)\n"
            "    return out\n"
            "class Trainer(BaseTrainer):\n"
            "    def on_epoch_start(self):\n"
            "{start}"
            "        self.count = 0\n"
            "    def validate(self, x):\n"
            "        self.model.eval()\n"
            "        return score(self.model, x)\n"
        ),
        "run.py": (
            "import torch\nfrom torch import nn\nfrom trainer import Trainer\n"
            "model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
            "Trainer(model, torch.optim.Adam(model.parameters())).fit([torch.ones(4)], torch.ones(4))\n"
        ),
    }
    return {name: text.replace("{start}", start) for name, text in files.items()}

# a loop's base class whose epoch hook a mixin composed beside it overrides with an evaluation
# that saves the mode; `{restore}`: how it ends
_MIXIN_EVAL = (
    "import torch\nfrom torch import nn\n"
    "class LoopBase:\n"
    "    def __init__(self, model, opt, loader):\n"
    "        self.model, self.opt, self.loader = model, opt, loader\n"
    "    def on_epoch_end(self):\n"
    "        pass\n"
    "    def fit(self, epochs):\n"
    "        self.model.train()\n"
    "        for _ in range(epochs):\n"
    "            for x in self.loader:\n"
    "                loss = self.model(x).pow(2).mean()\n"
    "                self.opt.zero_grad()\n"
    "                loss.backward()\n"
    "                self.opt.step()\n"
    "            self.on_epoch_end()\n"
    "class EvalMixin:\n"
    "    @torch.no_grad()\n"
    "    def validate(self, model):\n"
    "        was_training = model.training\n"
    "        model.eval()\n"
    "        out = model(self.loader[0]).mean().item()\n"
    "{restore}"
    "        return out\n"
    "    def on_epoch_end(self):\n"
    "        self.validate(self.model)\n"
    "        super().on_epoch_end()\n"
    "class Trainer(EvalMixin, LoopBase):\n"
    "    pass\n"
    "def main(loader):\n"
    "    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))\n"
    "    Trainer(model, torch.optim.Adam(model.parameters()), loader).fit(3)\n"
)


class EvalModeLeak(Rule):
    code = "GM201"
    name = "eval-mode-leak"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "`.eval()` on the trained model reaches the next training step without `.train()`"
    prefilter = (".eval()", "train(False", "train(mode=False")
    runs_beside = True  # beside GM101, whose loss-path data flow it reuses
    doc = """
## What it does
Finds a `.eval()` (or `.train(False)`) on the model being trained, on `self` inside it, or on one
of its submodules, after which some path through the program (the rest of the loop, the helpers
it calls such as `evaluate(model)` or `Trainer.validate`, callbacks, across files) reaches the
next training backward with the model still in eval mode: no `.train()` / `.train(True)` on the
same model in between. It follows the model through calls (`evaluate(self.model)` -> `model`)
and constructors (`Trainer(model)` -> `self.model`). It stays silent when every path restores
training mode, when the module put in eval mode is never run forward with gradients before a
backward (a frozen teacher, an EMA copy) and when the eval happens after training ends.

Where it reports: at the `.eval()` when something in the program is meant to put the model back
in train mode and fails to (a restore on a path the leak skips, registered for the wrong event);
at the `.train()` when it runs once before the loop whose evaluations it should undo; and, when
nothing restores the mode at all, where the missing `.train()` belongs: the top of the function
through which the training loop runs its steps (`train_epoch`), or the training loop itself,
with the evaluation as a related location.

## Why is this bad?
In eval mode Dropout is off and BatchNorm normalises with its running statistics and stops
updating them. A GraphMAE trained in eval mode after the first validation keeps optimising, so
the loss curve looks normal, but its encoder now sees a different function than the one that
was trained so far (BatchNorm statistics frozen at the validation moment, no dropout
regularisation), and the decoder learns to reconstruct from that. What the metric does then is
not a given, and was measured: on the fixture pipeline (`fixtures/variants/gm201-bug`, the first
evaluation at step 160 leaves eval mode on), 480 of 640 training steps ran their backward with
`model.training` False and the held-out coordinate error came out at 0.411 against 0.446 for the
clean run, lower, since this small model gained from losing dropout. The run is no longer the
one it claims to be: it does not reproduce against a reference in train mode (`gm-audit diff`
names the `mode` stage), and BatchNorm statistics stay frozen at the validation moment.

## Example
```python
def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(model(g, g.ndata["feat"])[0].item() for g in loader)

for step, g in enumerate(loader):
    loss, _ = model(g, g.ndata["feat"])
    loss.backward(); opt.step(); opt.zero_grad()
    if step % 100 == 0:
        evaluate(model, val_loader)   # the model stays in eval mode from here on
```

## Use instead
```python
def evaluate(model, loader):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return sum(model(g, g.ndata["feat"])[0].item() for g in loader)
    finally:
        model.train(was_training)
```
or call `model.train()` at the top of every training iteration.

## Fix safety
Unsafe: inserting `model.train()` changes what the following code computes (Dropout and
BatchNorm behave differently); if some code between the eval and the next step relied on eval
mode (e.g. computing embeddings for a memory bank), it has to move before the `.train()`.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
- https://github.com/THUDM/GraphMAE (the reference training loop calls `model.train()` every epoch)
"""

    VALID = [
        Valid(_MIXIN_EVAL.format(restore="        model.train(was_training)\n")),
        # the same override calling the base's hook: train mode at every epoch's start
        Valid(_overridden_hook("        super().on_epoch_start()\n")),
        # a factory's tensor (never called as a module) says nothing of modes: the model holds
        # only a Linear, and its eval changes nothing
        Valid(_REGISTRY_MODEL.format(make="make_table(4)", use="self.lin(x) + self.encoder")),
        # validation restores training mode before the next step
        Valid(
            "import torch\n"
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        out = [model(g) for g in loader]\n"
            "    model.train()\n"
            "    return out\n"
            "def fit(model, opt, loader, val):\n"
            "    for step, g in enumerate(loader):\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        if step % 10 == 0:\n"
            "            evaluate(model, val)\n"
        ),
        # a frozen teacher in eval mode: never run forward with gradients
        Valid(
            "import torch\n"
            "def fit(model, teacher, opt, loader):\n"
            "    teacher.eval()\n"
            "    for g in loader:\n"
            "        with torch.no_grad():\n"
            "            target = teacher(g)\n"
            "        loss = model(g, target)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # eval only after training ends
        Valid(
            "def main(model, opt, loader):\n"
            "    model.train()\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    model.eval()\n"
            "    return model(loader.dataset[0])\n"
            "main(build(), make_opt(), make_loader())\n"
        ),
        # a Trainer validating once per epoch; every epoch starts with model.train()
        Valid({
            "engine.py":
                "import torch\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt, loader, val):\n"
                "        self.model = model\n"
                "        self.opt = opt\n"
                "        self.loader = loader\n"
                "        self.val = val\n"
                "    def train_one_epoch(self):\n"
                "        self.model.train()\n"
                "        for g in self.loader:\n"
                "            loss = self.model(g)\n"
                "            loss.backward()\n"
                "            self.opt.step()\n"
                "    def validate(self):\n"
                "        self.model.eval()\n"
                "        with torch.no_grad():\n"
                "            return [self.model(g) for g in self.val]\n"
                "    def fit(self, epochs):\n"
                "        for _ in range(epochs):\n"
                "            self.train_one_epoch()\n"
                "            self.validate()\n",
            "train.py":
                "from engine import Trainer\n"
                "trainer = Trainer(build(), opt, loader, val)\n"
                "trainer.fit(10)\n",
        }),
        # the saved mode is restored (`train(was_training)`)
        Valid(
            "import torch\n"
            "def probe(model, g):\n"
            "    was_training = model.training\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        emb = model.embed(g)\n"
            "    model.train(was_training)\n"
            "    return emb\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    probe(model, g)\n"
        ),
        # training mode restored under the condition that also guards the training step
        Valid(
            "import torch\n"
            "def step(model, opt, g, cfg):\n"
            "    if cfg.sampled:\n"
            "        model.train()\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "def fit(model, opt, loader, cfg):\n"
            "    for g in loader:\n"
            "        step(model, opt, g, cfg)\n"
            "        model.eval()\n"
            "        with torch.no_grad():\n"
            "            model(g)\n"
        ),
        # a trainer class with its own `train()` method: `self.model.train()` (and any other
        # module's `.train()`) is nn.Module.train, never a call of that method
        Valid({
            "flow.py":
            "import torch\n"
            "\n"
            "\n"
            "class Flow:\n"
            "    def __init__(self, model, opt, loader):\n"
            "        self.model = model\n"
            "        self.opt = opt\n"
            "        self.loader = loader\n"
            "\n"
            "    def train(self):\n"
            "        for g in self.loader:\n"
            "            self.model.train()\n"
            "            loss = self.model(g)\n"
            "            loss.backward()\n"
            "            self.opt.step()\n"
            "        return self.predict()\n"
            "\n"
            "    def predict(self):\n"
            "        self.model.eval()\n"
            "        with torch.no_grad():\n"
            "            return self.model(self.loader[0])\n",
            "aux.py":
            "def pretrain(m2v, opt, loader):\n"
            "    m2v.train()\n"
            "    for g in loader:\n"
            "        loss = m2v(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n",
        }),
        # an EMA copy kept in eval mode, updated without gradients
        Valid(
            "import copy\nimport torch\n"
            "ema = copy.deepcopy(model)\n"
            "ema.eval()\n"
            "@torch.no_grad()\n"
            "def update(ema, model):\n"
            "    for pe, p in zip(ema.parameters(), model.parameters()):\n"
            "        pe.mul_(0.99).add_(p, alpha=0.01)\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    update(ema, model)\n"
        ),
        # after training, the embeddings of the model in eval mode train a fresh linear probe:
        # the optimizer stepped after that backward holds only the probe's parameters
        Valid(
            "import torch\nfrom torch import nn\n"
            "class LogReg(nn.Module):\n"
            "    def __init__(self, d, c):\n"
            "        super().__init__()\n"
            "        self.fc = nn.Linear(d, c)\n"
            "    def forward(self, x):\n"
            "        return self.fc(x)\n"
            "def probe(embeds, labels):\n"
            "    log = LogReg(embeds.shape[1], 3)\n"
            "    opt = torch.optim.Adam(log.parameters())\n"
            "    for _ in range(100):\n"
            "        opt.zero_grad()\n"
            "        loss = nn.functional.cross_entropy(log(embeds), labels)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "def fit(model, opt, g, labels, epochs):\n"
            "    for _ in range(epochs):\n"
            "        probe(model.embed(g).detach(), labels)\n"
            "        model.train()\n"
            "        opt.zero_grad()\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    model.eval()\n"
            "    embeds = model.embed(g)\n"
            "    probe(embeds, labels)\n"
        ),
        # another object's module evaluated by a helper the flow calls; the optimizer the flow
        # steps holds its own modules only
        Valid({
            "flow.py":
                "import torch\n"
                "class Evaluator:\n"
                "    def __init__(self, model):\n"
                "        self.model = model\n"
                "    def score(self, g):\n"
                "        self.model.eval()\n"
                "        out = self.model(g)\n"
                "        return out\n"
                "class Flow:\n"
                "    def __init__(self, model, head, task, loader):\n"
                "        self.model = model\n"
                "        self.head = head\n"
                "        self.task = task\n"
                "        self.loader = loader\n"
                "        self.optimizer = torch.optim.Adam(\n"
                "            [{'params': self.model.parameters()}, {'params': self.head.parameters()}])\n"
                "    def fit(self):\n"
                "        for _ in range(10):\n"
                "            self.model.train()\n"
                "            for g in self.loader:\n"
                "                loss = self.head(self.model(g))\n"
                "                loss.backward()\n"
                "                self.optimizer.step()\n"
                "            self.task.score(g)\n",
        }),
        # a sub-module put in eval mode on purpose and trained on its own right after; it
        # builds no Dropout or BatchNorm, so its mode changes nothing
        Valid({
            "club.py":
                "import torch\nfrom torch import nn\n"
                "class CLUBSample(nn.Module):\n"
                "    def __init__(self, d):\n"
                "        super().__init__()\n"
                "        self.p_mu = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))\n"
                "    def forward(self, x, y):\n"
                "        return (self.p_mu(x) - y).pow(2).mean()\n"
                "class Model(nn.Module):\n"
                "    def __init__(self, d, k):\n"
                "        super().__init__()\n"
                "        self.enc = nn.Sequential(nn.Linear(d, d), nn.Dropout(0.2))\n"
                "        self.mi_discs = nn.ModuleList([CLUBSample(d) for _ in range(k)])\n"
                "    def forward(self, x):\n"
                "        h = self.enc(x)\n"
                "        return h.pow(2).mean() + self.mi_discs[0](h, h)\n",
            "train.py":
                "import torch\n"
                "def fit(model, opt, opt_mi, loader):\n"
                "    model.train()\n"
                "    for x in loader:\n"
                "        model.mi_discs.eval()\n"
                "        loss = model(x)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        model.mi_discs.train()\n"
                "        lld = model.mi_discs[0](x, x)\n"
                "        lld.backward()\n"
                "        opt_mi.step()\n",
        }),
        # the model derives from a base its package re-exports (`from .base import Base` in
        # models/__init__.py); it builds only Linear and Embedding layers: eval changes nothing
        Valid({
            "models/__init__.py": "from .base import Base\n",
            "models/base.py": "from torch import nn\nclass Base(nn.Module):\n    pass\n",
            "models/scorer.py":
                "from torch import nn\nfrom models import Base\n"
                "class Scorer(Base):\n"
                "    def __init__(self, n, d):\n"
                "        super().__init__()\n"
                "        self.emb = nn.Embedding(n, d)\n"
                "        self.out = nn.Linear(d, 1)\n"
                "    def forward(self, ids):\n"
                "        return self.out(self.emb(ids)).mean()\n",
            "train.py":
                "import torch\nfrom models.scorer import Scorer\n"
                "def keep_best(model, path):\n"
                "    model.eval()\n"
                "    torch.save(model.state_dict(), path)\n"
                "def main(loader):\n"
                "    model = Scorer(10, 4)\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for ids in loader:\n"
                "        loss = model(ids)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        keep_best(model, 'best.pt')\n"
                "if __name__ == '__main__':\n"
                "    main([])\n",
        }),
        # a method of the same name in a sibling experiment: another program, not this call
        Valid({
            "exp1/probe.py":
                "import torch\n"
                "class Probe:\n"
                "    def score(self, model, g):\n"
                "        model.eval()\n"
                "        out = model(g)\n"
                "        return out\n"
                "if __name__ == '__main__':\n"
                "    Probe().score(build(), load())\n",
            "exp2/train.py":
                "import torch\n"
                "def fit(model, opt, loader, probe):\n"
                "    for g in loader:\n"
                "        loss = model(g)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        probe.score(model, g)\n"
                "if __name__ == '__main__':\n"
                "    fit(build(), make_opt(), load(), make_probe())\n",
        }),
        # every seed trains a model built anew: the evaluated one is never trained again
        Valid(
            "import torch.nn as nn\n"
            "def pretrain(model, opt, data):\n"
            "    for x in data:\n"
            "        loss = model(x).sum()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    return model\n"
            "def main(seeds, data, make_opt):\n"
            "    for seed in seeds:\n"
            "        model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
            "        model = pretrain(model, make_opt(model), data)\n"
            "        model.eval()\n"
            "        print(model(data[0]))\n"
        ),
        # the early return skips `.train()` only when both loaders are None, and the caller
        # validates only when its predicate says the validation loader is not None
        Valid(
            "import torch\n"
            "from torch import nn\n"
            "class Trainer:\n"
            "    def __init__(self, evaluator):\n"
            "        self.evaluator = evaluator\n"
            "    def can_validate(self, val_loader):\n"
            "        if self.evaluator is None or val_loader is None:\n"
            "            return False\n"
            "        return True\n"
            "    def evaluate(self, model, val_loader, test_loader):\n"
            "        model.eval()\n"
            "        if val_loader is None and test_loader is None:\n"
            "            return None\n"
            "        with torch.no_grad():\n"
            "            score = [model(g) for g in val_loader]\n"
            "        model.train()\n"
            "        return score\n"
            "    def fit(self, model, opt, loader, val_loader, test_loader):\n"
            "        for epoch in range(10):\n"
            "            for g in loader:\n"
            "                loss = model(g).sum()\n"
            "                loss.backward()\n"
            "                opt.step()\n"
            "                opt.zero_grad()\n"
            "            if self.can_validate(val_loader):\n"
            "                self.evaluate(model, val_loader, test_loader)\n"
            "model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
            "Trainer(None).fit(model, torch.optim.Adam(model.parameters()), [], [], None)\n"
        ),
        # a helper's eval reached from a trainer whose model, looked up in a registry, can
        # only be the class that defines the method it calls (`encode`): it has no Dropout
        Valid({
            "models.py":
                "from torch import nn\n"
                "MODELS = {}\n"
                "def register(name):\n"
                "    def put(cls):\n"
                "        MODELS[name] = cls\n"
                "        return cls\n"
                "    return put\n"
                "def build_model(name):\n"
                "    return MODELS[name]\n"
                '@register("gat")\n'
                "class GAT(nn.Module):\n"
                "    @classmethod\n"
                "    def from_args(cls, args):\n"
                "        return cls(args.dim)\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.net = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(0.5))\n"
                "    def forward(self, x):\n"
                "        return self.net(x)\n"
                '@register("rules")\n'
                "class Rules(nn.Module):\n"
                "    @classmethod\n"
                "    def from_args(cls, args):\n"
                "        return cls(args.dim)\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.lin = nn.Linear(dim, dim)\n"
                "    def encode(self, x):\n"
                "        return self.lin(x)\n",
            "stopper.py":
                "import torch\n"
                "def save_best(model, path):\n"
                "    model.eval()\n"
                "    torch.save(model.state_dict(), path)\n",
            "train.py":
                "import torch\n"
                "from models import build_model\n"
                "from stopper import save_best\n"
                "class RulesTrainer:\n"
                "    def __init__(self, args):\n"
                "        self.model = build_model(args.model).from_args(args)\n"
                "        self.opt = torch.optim.Adam(self.model.parameters())\n"
                "    def train(self, loader):\n"
                "        for epoch in range(10):\n"
                "            for x in loader:\n"
                "                loss = self.model.encode(x).sum()\n"
                "                self.opt.zero_grad()\n"
                "                loss.backward()\n"
                "                self.opt.step()\n"
                '            save_best(self.model, "best.pt")\n',
        }),
        # the eval runs only with a save path; this stopper was built without one
        Valid(STOPPER.format(args="5")),
        # the handler puts the model back in train mode
        Valid({"engine.py": _ENGINE, "handlers.py": _HANDLER.format(restore="        self.model.train()\n"),
               "train.py": _FIRED}),
        # a context manager that saves each submodule's mode and puts every one back
        Valid(
            "import contextlib\nimport torch\n"
            "@contextlib.contextmanager\n"
            "def evaluating(model):\n"
            "    modes = {m: m.training for m in model.modules()}\n"
            "    model.eval()\n"
            "    try:\n"
            "        yield model\n"
            "    finally:\n"
            "        for m, mode in modes.items():\n"
            "            m.train(mode)\n"
            "def fit(model, opt, data):\n"
            "    model.train()\n"
            "    for step, x in enumerate(data):\n"
            "        loss = model(x).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        if step % 10 == 0:\n"
            "            with evaluating(model):\n"
            "                model(x)\n"
        ),
    ]
    INVALID = [
        # the same trainer calling only `forward`: the registry's model may be the one with
        # Dropout
        Invalid({
            "models.py":
                "from torch import nn\n"
                "MODELS = {}\n"
                "def register(name):\n"
                "    def put(cls):\n"
                "        MODELS[name] = cls\n"
                "        return cls\n"
                "    return put\n"
                "def build_model(name):\n"
                "    return MODELS[name]\n"
                '@register("gat")\n'
                "class GAT(nn.Module):\n"
                "    @classmethod\n"
                "    def from_args(cls, args):\n"
                "        return cls(args.dim)\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.net = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(0.5))\n"
                "    def forward(self, x):\n"
                "        return self.net(x)\n"
                '@register("rules")\n'
                "class Rules(nn.Module):\n"
                "    @classmethod\n"
                "    def from_args(cls, args):\n"
                "        return cls(args.dim)\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.lin = nn.Linear(dim, dim)\n"
                "    def encode(self, x):\n"
                "        return self.lin(x)\n",
            "stopper.py":
                "import torch\n"
                "def save_best(model, path):\n"
                "    model.eval()\n"
                "    torch.save(model.state_dict(), path)\n",
            "train.py":
                "import torch\n"
                "from models import build_model\n"
                "from stopper import save_best\n"
                "class RulesTrainer:\n"
                "    def __init__(self, args):\n"
                "        self.model = build_model(args.model).from_args(args)\n"
                "        self.opt = torch.optim.Adam(self.model.parameters())\n"
                "    def train(self, loader):\n"
                "        for epoch in range(10):\n"
                "            for x in loader:\n"
                "                loss = self.model(x).sum()\n"
                "                self.opt.zero_grad()\n"
                "                loss.backward()\n"
                "                self.opt.step()\n"
                '            save_best(self.model, "best.pt")\n',
        }, path="stopper.py", line=3),
        # the same early return, but the caller's predicate lets a None loader through
        Invalid(
            "import torch\n"
            "from torch import nn\n"
            "class Trainer:\n"
            "    def __init__(self, evaluator):\n"
            "        self.evaluator = evaluator\n"
            "    def can_validate(self, val_loader):\n"
            "        if self.evaluator is None:\n"
            "            return False\n"
            "        return True\n"
            "    def evaluate(self, model, val_loader, test_loader):\n"
            "        model.eval()\n"
            "        if val_loader is None and test_loader is None:\n"
            "            return None\n"
            "        with torch.no_grad():\n"
            "            score = [model(g) for g in val_loader]\n"
            "        model.train()\n"
            "        return score\n"
            "    def fit(self, model, opt, loader, val_loader, test_loader):\n"
            "        for epoch in range(10):\n"
            "            for g in loader:\n"
            "                loss = model(g).sum()\n"
            "                loss.backward()\n"
            "                opt.step()\n"
            "                opt.zero_grad()\n"
            "            if self.can_validate(val_loader):\n"
            "                self.evaluate(model, val_loader, test_loader)\n"
            "model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
            "Trainer(None).fit(model, torch.optim.Adam(model.parameters()), [], [], None)\n",
            line=11,
        ),
        # validation inside the loop, never restored
        Invalid(
            "import torch\n"
            "for step, g in enumerate(loader):\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    if step % 100 == 0:\n"
            "        model.eval()\n"
            "        with torch.no_grad():\n"
            "            val = model(val_g)\n",
            line=7, column=9, message_contains="backward",
        ),
        # a helper in another module puts the model in eval mode
        Invalid({
            "helpers.py":
                "import torch\n"
                "def evaluate(model, loader):\n"
                "    model.eval()\n"
                "    with torch.no_grad():\n"
                "        return [model(g) for g in loader]\n",
            "train.py":
                "from helpers import evaluate\n"
                "def main(model, opt, loader, val):\n"
                "    model.train()\n"
                "    for step, g in enumerate(loader):\n"
                "        loss = model(g)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        if step % 50 == 0:\n"
                "            evaluate(model, val)\n",
        }, line=3, path="train.py", message_contains="helpers.py:3"),
        # a Trainer whose validate() runs inside the batch loop
        Invalid({
            "engine.py":
                "import torch\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model = model\n"
                "        self.opt = opt\n"
                "    def validate(self, g):\n"
                "        self.model.eval()\n"
                "        with torch.no_grad():\n"
                "            return self.model(g)\n"
                "    def fit(self, loader):\n"
                "        self.model.train()\n"
                "        for i, g in enumerate(loader):\n"
                "            loss = self.model(g)\n"
                "            loss.backward()\n"
                "            self.opt.step()\n"
                "            if i % 10 == 0:\n"
                "                self.validate(g)\n",
        }, line=11, path="engine.py", message_contains="engine.py:7"),
        # `self.eval()` inside a model method called from the training loop
        Invalid({
            "model.py":
                "import torch\nfrom torch import nn\n"
                "class GraphMAE(nn.Module):\n"
                "    def embed(self, g):\n"
                "        self.eval()\n"
                "        with torch.no_grad():\n"
                "            return self.encoder(g)\n",
            "train.py":
                "def fit(model, opt, loader, log):\n"
                "    for g in loader:\n"
                "        loss = model(g)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        log.append(model.embed(g))\n",
        }, line=5, path="model.py"),
        # training mode restored on only one branch
        Invalid(
            "import torch\n"
            "def fit(model, opt, loader, cfg):\n"
            "    for g in loader:\n"
            "        model.train(False)\n"
            "        with torch.no_grad():\n"
            "            model(g)\n"
            "        if cfg.restore:\n"
            "            model.train()\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=4,
        ),
        # the sub-module put in eval mode holds a Dropout: its mode matters
        Invalid({
            "disc.py":
                "import torch\nfrom torch import nn\n"
                "class Disc(nn.Module):\n"
                "    def __init__(self, d):\n"
                "        super().__init__()\n"
                "        self.net = nn.Sequential(nn.Linear(d, d), nn.Dropout(0.5))\n"
                "    def forward(self, x):\n"
                "        return self.net(x).mean()\n"
                "class Model(nn.Module):\n"
                "    def __init__(self, d):\n"
                "        super().__init__()\n"
                "        self.disc = Disc(d)\n"
                "    def forward(self, x):\n"
                "        return self.disc(x)\n",
            "train.py":
                "import torch\n"
                "def fit(model, opt, loader):\n"
                "    model.train()\n"
                "    for x in loader:\n"
                "        model.disc.eval()\n"
                "        loss = model(x)\n"
                "        loss.backward()\n"
                "        opt.step()\n",
        }, line=5, path="train.py"),
        # eval at the top of each epoch; the model's last assignment is a `.to(device)`, which
        # says nothing of the layers it holds
        Invalid(
            "import torch\n"
            "def main(build, loader, device):\n"
            "    model = build()\n"
            "    model = model.to(device)\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    for epoch in range(3):\n"
            "        model.eval()\n"
            "        for g in loader:\n"
            "            loss = model(g)\n"
            "            opt.zero_grad()\n"
            "            loss.backward()\n"
            "            opt.step()\n",
            line=7,
        ),
        # a LightningModule's start hook puts the module (or the model it holds) in eval mode;
        # the optimizer holds every parameter of the module, `self.model`'s included
        *(Invalid(
            "import torch\n"
            "import pytorch_lightning as pl\n"
            "class Lit(pl.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))\n"
            "    def training_step(self, x, i):\n"
            "        return self.model(x).pow(2).mean()\n"
            "    def on_train_start(self):\n"
            f"        {target}.eval()\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.Adam(self.parameters())\n"
            "pl.Trainer(max_steps=5).fit(Lit(), [torch.randn(8, 4)])\n",
            line=10,
        ) for target in ("self", "self.model")),
        # one branch of the step restores train mode; the other trains in the mode the eval left
        Invalid(
            "import torch.nn as nn\n"
            "def train_step(model, opt, loader, fast):\n"
            "    if fast:\n"
            "        model.train()\n"
            "        for x in loader:\n"
            "            loss = model(x).sum()\n"
            "            loss.backward()\n"
            "            opt.step()\n"
            "        return\n"
            "    for x in loader:\n"
            "        loss = model(x).sum()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "def fit(opt, loader, fast):\n"
            "    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))\n"
            "    for epoch in range(10):\n"
            "        train_step(model, opt, loader, fast)\n"
            "        model.eval()\n"
            "        print(model(loader[0]))\n",
            line=18,
        ),
        # the stopper built with a save path: its eval() runs
        Invalid(STOPPER.format(args='5, save_path="best.pt"'), line=16),
        # the model reached through a training state passed around, unpacked in parallel by
        # the step (`model, opt = state.model, state.optimizer`): the evaluation helper's
        # eval() reaches the next step's backward
        Invalid(
            "from typing import NamedTuple\n"
            "import torch\n"
            "class State(NamedTuple):\n"
            "    model: torch.nn.Module\n"
            "    optimizer: torch.optim.Optimizer\n"
            "def train_step(state, x):\n"
            "    model, opt = state.model, state.optimizer\n"
            "    loss = model(x).pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    return state\n"
            "def eval_step(state, x):\n"
            "    model = state.model\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        return model(x).mean().item()\n"
            "def main(model, x):\n"
            "    state = State(model, torch.optim.Adam(model.parameters()))\n"
            "    for step in range(100):\n"
            "        state = train_step(state, x)\n"
            "        if step % 10 == 0:\n"
            "            eval_step(state, x)\n"
            "if __name__ == '__main__':\n"
            "    main(torch.nn.BatchNorm1d(4), torch.randn(8, 4))\n",
            line=7, message_contains="`train_step` trains the model without putting it in train mode",
        ),
        # a validation handler registered on an engine; the engine fires it between steps
        Invalid({"engine.py": _ENGINE, "handlers.py": _HANDLER.format(restore=""), "train.py": _FIRED},
                path="handlers.py", line=5, message_contains="train.py:10"),
        # the model's encoder comes out of a registry's factory: its layers are not known here,
        # so putting the model in eval mode may change them (it holds a Dropout)
        Invalid(_REGISTRY_MODEL.format(make="build('encoder', 'mlp', 4)", use="self.encoder(x)"), line=29,
                message_contains=":25"),
        # a template method's hook overridden without `super()`: the base's `train()` no longer
        # runs, and the validation's eval (its helper restores the mode it was entered in:
        # eval) leaks into the next epochs
        Invalid(_overridden_hook(""), path="trainer.py", line=11,
                message_contains="without calling `super().on_epoch_start()`"),
        # a notebook's cells: `model.train()` once before the epoch loop of the module's own
        # code, the evaluation helper run inside it
        Invalid(
            _CELLS
            + "model.train()\n"
            "for epoch in range(10):\n"
            "    loss = model(torch.randn(2, 4)).pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    if epoch % 5 == 0:\n"
            "        print(evaluate(model, torch.randn(2, 4)))\n",
            line=9, message_contains="runs once, before the loop"),
        # nothing in the program puts the model back in train mode: the epoch function, run in
        # the fit loop after every validation, is where `.train()` belongs; the evaluated
        # model is reached through a DDP unwrap helper (`m.module if ddp else m`)
        Invalid(
            "import torch\nfrom torch import nn\n"
            "@torch.no_grad()\n"
            "def evaluate(m, x):\n"
            "    m.eval()\n"
            "    return m(x).mean()\n"
            "def unwrap(m):\n"
            "    return m.module if isinstance(m, nn.parallel.DistributedDataParallel) else m\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))\n"
            "        self.opt = torch.optim.Adam(self.model.parameters())\n"
            "    def train_epoch(self):\n"
            "        \"\"\"One step.\"\"\"\n"
            "        loss = self.model(torch.randn(2, 4)).pow(2).mean()\n"
            "        self.opt.zero_grad()\n"
            "        loss.backward()\n"
            "        self.opt.step()\n"
            "    def validate(self):\n"
            "        net = unwrap(self.model)\n"
            "        return evaluate(net, torch.randn(2, 4))\n"
            "    def fit(self):\n"
            "        for epoch in range(10):\n"
            "            self.train_epoch()\n"
            "            if epoch % 5 == 0:\n"
            "                self.validate()\n"
            "Trainer().fit()\n",
            line=15, message_contains="`Trainer.train_epoch` trains the model without putting it in train mode"),
        # a second stage's loop after an evaluation, where only the first stage's loop set the
        # mode: the loop is where the missing `.train()` belongs
        Invalid(
            _CELLS
            + "for epoch in range(10):\n"
            "    model.train()\n"
            "    model(torch.randn(2, 4)).pow(2).mean().backward()\n"
            "    opt.step()\n"
            "print(evaluate(model, torch.randn(2, 4)))\n"
            "for epoch in range(5):\n"
            "    opt.zero_grad()\n"
            "    loss = model(torch.randn(2, 4)).pow(2).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=14, message_contains="the loop here trains the model without putting it in train mode"),
        # the mixin's evaluation saves the mode and never restores it: reported at its eval, not
        # at the loop's one `train()`
        Invalid(_MIXIN_EVAL.format(restore=""), line=21),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        starts: list[tuple[FunctionInfo, int, str]] = []
        for fn in list(project.functions.values()):
            imports = project.files[fn.path].imports if fn.path in project.files else {}
            for i, event in enumerate(fn.events):
                target = eval_target(event, imports)
                if target is not None:
                    starts.append((fn, i, target))
        training = Training.of(project)
        hoisted: dict[tuple[str, int], tuple[FunctionInfo, int, list[str]]] = {}
        for fn, i, target in starts:
            # the model put in eval mode, by where it was made: named again past a caller that
            # holds it under no name (a handler object's `self.model`, fired by an engine)
            made = training.origins(fn, target, i)
            identity = training.identity(made) if all(o.known for o in made) else None
            trained = [o for o in PathSearch(project, visitor(fn, i), identity=identity).run(fn, i, target, False)
                       if o.verdict == TRAINED and o.step is not None]
            if not trained or training.mode_free(fn, target, i):
                continue  # mode_free: no Dropout, no BatchNorm in it, eval changes nothing
            # nor on a path to the backward of a module whose mode changes nothing there (a
            # helper's `model.eval()` reached from a trainer of a model without such layers)
            hit = first_trained(project, fn, [
                o for o in trained if not o.step.tracked
                or not training.mode_free(o.step.fn, o.step.tracked, o.step.index)])
            if hit is None or hit.step is None:
                continue
            event = fn.events[i]
            # an evaluation routine (it runs the model after the eval, or hands it to what does)
            # leaves restoring the mode to its caller; a stray eval (in a checkpoint helper,
            # say) is the defect
            evaluates = any(forward_use(e, target) or e.kind == "call" and target in e.args
                            for e in fn.events[i + 1:])
            # a routine that saves the mode to restore it (`was = model.training`) or restores it
            # (wrongly): the fix belongs there, at its `.eval()`
            evaluates = evaluates and not _tends_mode(fn, target)
            once = cls._train_before_loop(training, hit.trail, made) if evaluates else None
            if once is not None:  # one finding where the fix goes, for every eval it lets leak
                hoisted.setdefault((once[0].qualname, once[1]), (*once, []))[2].append(
                    f"{fn.path}:{event.span.line}")
                continue
            missing = cls._missing_train_at(training, fn, i, hit, made) if evaluates else None
            if missing is not None:  # nothing restores the mode: the finding goes where it should
                owner, line = missing
                if (owner.qualname, -line) not in hoisted:
                    hoisted[(owner.qualname, -line)] = (owner, -1, [])
                    yield cls.make_finding(
                        owner.path, Span(line, 1, line, 1),
                        f"{'the loop here' if owner.name == MODULE_SCOPE else '`' + _short(owner) + '`'} "
                        "trains the model without putting it in train mode, and "
                        f"the evaluation at {fn.path}:{event.span.line} leaves it in eval mode: every "
                        "training step after the first evaluation runs with Dropout off and BatchNorm "
                        "frozen",
                        fix="call `.train()` on the model here, at the top of every training iteration",
                        related=[f"{fn.path}:{event.span.line}"],
                    )
                continue
            dropped = cls._override_dropping_restore(training, hit) if evaluates else None
            if dropped is not None:
                override, base = dropped
                if (override.qualname, -1) not in hoisted:
                    hoisted[(override.qualname, -1)] = (override, -1, [])
                    yield cls.make_finding(
                        override.path, override.span,
                        f"`{_short(override)}` overrides `{_short(base)}` ({base.path}), which puts "
                        f"the model back in train mode, without calling `super().{override.name}()`: after "
                        f"the evaluation at {fn.path}:{event.span.line} the model keeps training "
                        "in eval mode (Dropout off, BatchNorm frozen)",
                        fix=f"call `super().{override.name}(...)` in the override",
                    )
                continue
            via = f" (via {' -> '.join(hit.trail)})" if hit.trail else ""
            yield cls.make_finding(
                fn.path, event.span,
                f"`{event.text if len(event.text) < 50 else target + '.eval()'}` puts the trained "
                f"model in eval mode and a path reaches the training backward at {hit.step.where}"
                f"{via} without `{target}.train()` in between: Dropout stays off and BatchNorm "
                "stops updating while the model keeps training",
                fix=f"call `{target}.train()` when the evaluation ends (or at the top of every "
                "training iteration)",
            )

        for owner, k, evals in hoisted.values():
            if k < 0:
                continue  # an override reported where it was found
            call = owner.events[k]
            yield cls.make_finding(
                owner.path, call.span,
                f"`{call.receiver}.train()` runs once, before the loop it drives, and the "
                f"evaluation in that loop switches the model to eval mode ({', '.join(evals)}): "
                "every iteration after the first evaluation trains with Dropout off and "
                "BatchNorm frozen",
                fix=f"call `{call.receiver}.train()` at the top of every iteration",
                related=evals,
            )

    @staticmethod
    def _override_dropping_restore(training: Training, hit) -> Optional[tuple[FunctionInfo, FunctionInfo]]:
        """On the leak's path (the backward's function and those it returned through), a
        ``self.hook()`` whose base version puts the model back in train mode and whose override
        neither does nor calls ``super().hook()`` (a template method's hook overridden without
        the base's behaviour): (override, base)."""
        project = training.project
        frames = [hit.step.fn] + [fn for where in hit.trail for fn in _functions_at(project, where)]
        for fn in frames:
            for e in fn.events:
                if e.kind != "call" or not e.func.startswith("self.") or e.func.count(".") != 1:
                    continue
                callees = [c for q in project.resolve_call(e, fn) if (c := project.function(q))]
                restoring = [c for c in callees if _trains(training, c)]
                for override in callees:
                    if override in restoring or not override.class_name:
                        continue
                    base = next((b for b in restoring if b.class_name in project.lineage(override.class_name)
                                 and b.class_name != override.class_name), None)
                    calls_super = any(x.kind == "call" and x.receiver == "super()" and x.method == override.name
                                      for x in override.events)
                    if base is not None and not calls_super:
                        return override, base
        return None

    @staticmethod
    def _missing_train_at(training: Training, fn: FunctionInfo, i: int, hit,
                          made: list) -> Optional[tuple[FunctionInfo, int]]:
        """Where the ``.train()`` an evaluation helper's leak lacks belongs, when the program holds no
        ``.train()`` meant to restore the model (none of the model, or of an object not known,
        in a function of a program running the backward, other than
        those of the caller the leak returned to that its path does not pass): the top of the
        function through which that caller runs the training step (an epoch function called in
        its loop), else the loop there around the backward that does not hold the evaluation.
        None when a restore exists (it is the one at fault) or neither place is found."""
        project = training.project
        if not hit.trail:
            return None  # an eval in the training function itself is the stray call
        frames = _functions_at(project, hit.trail[0])
        line = int(hit.trail[0].rpartition(":")[2])
        outer = frames[0] if len(frames) == 1 else None
        site = next((j for j, e in enumerate(outer.events) if e.span.line == line), None) if outer else None
        if outer is None or site is None:
            return None
        around = outer.events[site].loop_ids
        target = hit.step.fn
        passed: list[int] = []  # the caller's events the path runs from the evaluation on
        found: Optional[tuple[FunctionInfo, int]] = None
        for k in [*range(site + 1, len(outer.events)),
                  *(k for k in range(site) if set(around) & set(outer.events[k].loop_ids))]:
            e = outer.events[k]
            if outer is target and k == hit.step.index:
                found = _loop_start(outer, k, around)
                break
            callees = [c for q in (project.resolve_call(e, outer) if e.kind == "call" else ())
                       if (c := project.function(q)) is not None
                       and (c is target or target.qualname in project.reachable_from(q))]
            if callees:
                start = project.body_start(callees[0])
                found = (callees[0], start) if start is not None else None
                break
            passed.append(k)
        if found is None:
            return None
        for f in list(project.functions.values()):
            if not project.share_program(target.path, f.path):
                continue  # another program's `.train()` (a minimal script's) restores nothing here
            for k, e in enumerate(f.events):
                if e.kind != "call" or e.method != "train" or not e.receiver or _mode_false(e) \
                        or f is outer and k not in passed:
                    continue  # (the caller's own, off the path: an earlier stage's)
                mine = training.origins(f, e.receiver, k)
                if not all(o.known for o in mine) or any(a.same_as(b) for a in mine for b in made):
                    return None
        return found

    @staticmethod
    def _train_before_loop(training: Training, trail: tuple[str, ...],
                           made: list) -> Optional[tuple[FunctionInfo, int]]:
        """The ``.train()`` of the evaluated model that a function the leak returns through
        calls once, outside the loop whose call site the leak came back through: the mode is
        set before the loop and never again (``model.train()`` hoisted out of the epoch loop)."""
        for where in trail:
            line = where.rpartition(":")[2]
            for fn in _functions_at(training.project, where):
                site = next((j for j, e in enumerate(fn.events) if e.kind == "call"
                             and e.span.line == int(line) and e.loop_ids), None)
                if site is None:
                    continue
                loops = set(fn.events[site].loop_ids)
                for k in range(site):
                    e = fn.events[k]
                    if loops & set(e.loop_ids) or training.mode_switch(fn, k) is not False \
                            or not e.receiver:
                        continue
                    mine = training.origins(fn, e.receiver, k)
                    if not any(a.same_as(b) for a in mine for b in made) \
                            and all(o.known for o in mine + made):
                        continue
                    return fn, k
        return None

    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """``<model>.train()`` at the top of the training step the eval leaks into: the body of
        the innermost loop around that backward, else the top of its function."""
        project = fixer.project
        start = next(((fn, i, t) for fn in list(project.functions.values()) if fn.path == finding.path
                      for i, e in enumerate(fn.events)
                      if (e.span.line, e.span.column) == (finding.line, finding.column)
                      for t in [eval_target(e, project.files[fn.path].imports
                                            if fn.path in project.files else {})] if t), None)
        if start is None:
            return cls._fix_hoisted(fixer, finding)
        hit = first_trained(project, start[0],
                            PathSearch(project, visitor(start[0], start[1])).run(start[0], start[1], start[2], False))
        if hit is None or hit.step is None or not hit.step.tracked:
            return None
        step = hit.step
        src = fixer.source(step.fn.path)
        backward = src.node_at(step.event.span, cst.Call) if src else None
        if src is None or backward is None:
            return None
        block = src.enclosing(backward, (cst.For, cst.While), stop=(cst.FunctionDef,)) \
            or src.enclosing(backward, (cst.FunctionDef,))
        body = getattr(block, "body", None)
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        first = body.body[0]
        if isinstance(block, cst.FunctionDef) and len(body.body) > 1 and _is_docstring(first):
            first = body.body[1]
        call = f"{step.tracked}.train()"
        return Fix(f"call `{call}` at the top of the training step ({step.where})",
                   [src.insert_before(first, call)])

    @staticmethod
    def _fix_hoisted(fixer: Fixer, finding: Finding) -> Optional[Fix]:
        """A ``.train()`` run once before the loop: moved to the top of the loop's body."""
        src = fixer.source(finding.path)
        call = src.node_at(finding, cst.Call) if src else None
        statement = src.statement_of(call) if src and call is not None else None
        block = src.parent(statement) if src and statement is not None else None
        body = list(getattr(block, "body", ()))
        if src is None or call is None or statement not in body or not (
                isinstance(call.func, cst.Attribute) and call.func.attr.value == "train"):
            return None  # (a finding where a missing `.train()` belongs has nothing to move)
        loop = next((s for s in body[body.index(statement) + 1:] if isinstance(s, (cst.For, cst.While))), None)
        inner = getattr(getattr(loop, "body", None), "body", None)
        if loop is None or not inner:
            return None
        code = src.code(call)
        return Fix(f"move `{code}` to the top of the loop at line {src.span(loop).line}",
                   [src.remove(statement), src.insert_before(inner[0], code)])

    @classmethod
    def confirm(cls, finding: Finding, evidence) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the `.eval()` line never ran"])
        evals = evidence.calls_at(finding.path, finding.line, "eval", finding.end_line) \
            + evidence.calls_at(finding.path, finding.line, "train", finding.end_line)
        if not evals and not evidence.calls("eval"):
            # a missing `.train()` reported where it belongs: its harm needs the evaluation it
            # names, and none ran within the steps probed
            return None
        # CallRecord.steps counts the steps completed when the call ran (k: while preparing
        # step k + 1); StepFacts.index is 1-based: the first backward after it has index k + 1
        first = min((s for c in evals for s in c.steps), default=0)
        if evals and not any(c.kind == "eval" for c in evals) and not any(
                s >= first for c in evidence.calls("eval") for s in c.steps):
            # a `train()` whose harm needs a later `.eval()` (a hoisted call): no evaluation ran
            # after it within the steps probed, so the run does not decide
            return None
        bad = [(s, mods) for s, mods in evidence.modes_at_backward
               if s.index > first and any(not t for t in mods.values())]
        if bad:
            step, mods = bad[0]
            names = [m or "the model" for m, t in mods.items() if not t]
            return Verdict(Status.CONFIRMED, [
                f"{', '.join(names[:4])} in eval mode at the backward of step {step.index} "
                f"({len(bad)} step(s) after this `.eval()` trained in eval mode)"])
        if evidence.modes_at_backward:
            return Verdict(Status.REFUTED, [
                "the `.eval()` ran, but every training backward ran with the model in training mode"])
        return None


def _tends_mode(fn: FunctionInfo, target: str) -> bool:
    """``fn`` reads ``target``'s mode (``was_training = model.training``) or sets it back
    (``model.train(was_training)``): it means to restore the mode itself."""
    return any(f"{target}.training" in e.uses or e.kind == "call" and e.receiver == target
               and e.method == "train" for e in fn.events)
