"""GM106 loss-accumulated-with-graph: a loss tensor kept, with its autograd graph, across steps."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo
from auditor.static.paths import bindings
from auditor.static.project import Project
from auditor.static.texts import dict_entries, entries_read, entry, outside_brackets, top_level_items
from auditor.static.training import Training, TrainingLoop, detached_text, is_backward
from auditor.static.values import holds_graph


def _graph_names(t: Training, fn: FunctionInfo, depth: int = 0) -> set[str]:
    """Names in ``fn`` holding tensors with an autograd graph: the backpropagated loss and what
    it was computed from, module outputs, and values returned so by project functions."""
    names: set[str] = set()
    assigned = {x for e in fn.events for x in e.targets}
    for i, e in enumerate(fn.events):
        if is_backward(e):
            # what is backpropagated: locals (not `self` in `(loss / self.accum).backward()`)
            names |= {u for u in e.uses if not u.endswith(".backward") and u != "self"
                      and (u in assigned or not u.startswith("self."))}
            names |= {x for f, j in t.loss_slice(fn, i) if f is fn and j >= 0
                      for x in f.events[j].targets}
        elif e.kind == "call" and e.targets and (t.module_call(fn, i) or _names_a_loss(e.func)):
            names |= set(e.targets)
        elif e.kind == "call" and e.targets and depth < 3 and any(
                _returns_graph(t, t.project.function(q), depth + 1)
                for q in t.resolve(fn, e) if t.project.function(q) is not None):
            names |= set(e.targets)
    return names | _graph_entries(t, fn, names, depth)


def _graph_entries(t: Training, fn: FunctionInfo, names: set[str], depth: int) -> set[str]:
    """The entries of containers ``fn`` builds or gets that hold one of ``names``
    (``metrics = {"loss": loss, ...}``; ``state, metrics = train_step(...)`` whose ``metrics``
    is built so): ``metrics["loss"]``, as :func:`entry` spells it."""
    out: set[str] = set()
    for e in fn.events:
        if e.kind == "assign" and len(e.targets) == 1 and "=" in e.text:
            for key, value in dict_entries(e.text.split("=", 1)[1]).items():
                if value in names:
                    out.add(entry(e.targets[0], key))
        elif e.kind == "call" and e.targets and depth < 3:
            for position, target in enumerate(e.targets):
                for qual in t.resolve(fn, e):
                    callee = t.project.function(qual)
                    element = position if len(e.targets) > 1 else None
                    out |= {entry(target, k) for k in _returned_entries(t, callee, element, depth + 1)}
    return out


def _returned_entries(t: Training, fn: Optional[FunctionInfo], element: Optional[int],
                      depth: int) -> set[str]:
    """The keys of the container a project function returns (at ``element`` of the tuple it
    returns) whose entries hold a tensor with a graph."""
    if fn is None or not t.contains(fn.qualname, "backward"):
        return set()
    graph = _graph_names(t, fn, depth)
    keys: set[str] = set()
    for e in fn.events:
        if e.kind != "return":
            continue
        value = e.text.removeprefix("return").strip()
        parts = top_level_items(value) if element is not None else [value]
        one = parts[element].strip() if element is not None and len(parts) > element else parts[0]
        keys |= {k for k, v in dict_entries(one).items() if v in graph}
        keys |= {n[len(one) + 2:-2] for n in graph if n.startswith(f"{one}[")}
    return keys


def _names_a_loss(func: str) -> bool:
    """A loss function's call (``F.mse_loss``, ``model.loss``, ``self.loss_fn``), by the name
    of what is called: ``loss.detach().item()`` calls ``item`` on the loss, and is a number."""
    return "loss" in func.removesuffix("()").rsplit(".", 1)[-1].lower()


def _returns_graph(t: Training, fn: Optional[FunctionInfo], depth: int) -> bool:
    if fn is None or not (t.contains(fn.qualname, "backward") or "loss" in fn.name.lower()):
        return False
    graph = _graph_names(t, fn, depth)
    for e in fn.events:
        if e.kind == "return" and any(n in graph and not detached_text(e.text, n) for n in e.uses):
            return True
    return False


# a step function returning its metrics in a dict, the loss entry written as `{loss}`
_METRICS_STEP = (
    "def train_step(model, opt, g):\n"
    "    loss = model(g)\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    metrics = {{\"loss\": {loss}, \"nodes\": g.num_nodes()}}\n"
    "    return model, metrics\n"
)



def _updates_itself(e: Event) -> bool:
    """An assignment whose value reads what it assigns (``acc = acc + v``, ``acc[k] =
    acc.get(k, 0.0) + v``, ``x = f(x)``)."""
    return bool(set(e.targets) & set(e.uses)) or len(e.targets) == 1 and e.text.startswith(e.targets[0] + "[") \
        and any(u.startswith(e.targets[0] + ".") for u in e.uses)


def _adds_to_itself(e: Event) -> bool:
    """An assignment that grows what it assigns by a sum (``acc = acc + v``, ``ema = 0.9 * ema
    + 0.1 * v``), not one that transforms it (``data.x = self.saliency(data.x)``)."""
    return _updates_itself(e) and "+" in outside_brackets(e.text.split("=", 1)[-1])


def _outlives_call(project: Project, fn: FunctionInfo, acc: str) -> bool:
    """``acc`` outlives a call of ``fn``: an attribute of its instance, or module-level state
    that ``fn`` updates without binding the name for itself (``running["loss_ema"] = ...``,
    ``history.append(loss)``, a ``global`` total's ``+=``)."""
    if acc.startswith("self."):
        return True
    root = re.split(r"[.\[]", acc, maxsplit=1)[0]
    if root in fn.params:
        return acc != root  # a part of an object the caller handed in (`engine.state.total`)
    if fn.name == MODULE_SCOPE:
        return False
    module = project.function(f"{fn.module}.{MODULE_SCOPE}")
    if module is None or not any(root in e.targets for e in module.events if e.kind == "assign"):
        return False
    return not any(e.kind == "assign" and e.targets == [root] and not e.text.startswith((root + "[", root + "."))
                   for e in fn.events)


# a step function an engine-like loop calls, keeping a running total in the state it is handed
_ENGINE_STEP = (
    "def process(engine, batch):\n"
    "    loss = engine.model(batch).pow(2).mean()\n"
    "    engine.opt.zero_grad()\n"
    "    loss.backward()\n"
    "    engine.opt.step()\n"
    "    engine.metrics[\"loss\"] = engine.metrics.get(\"loss\", 0.0) + {loss}\n"
    "def run(engine, loader):\n"
    "    for batch in loader:\n"
    "        process(engine, batch)\n"
)


# calls of builtins that make a Python number (or string) of whatever they are given
NUMBER_CALL = re.compile(r"(round|float|int|len|bool|str|math\.\w+)\(")


class LossAccumulatedWithGraph(Rule):
    code = "GM106"
    name = "loss-accumulated-with-graph"
    severity = Severity.WARNING
    summary = "loss tensor accumulated across steps with its autograd graph (`total += loss`)"
    prefilter = (".backward(", "loss")
    doc = """
## What it does
Finds, in a training loop (a loop whose body, helpers included, runs `.backward()` and an
optimizer step), a running total or list that lives across iterations (`total += loss`,
`total = total + loss`, `losses.append(loss)`) fed with a tensor that carries an autograd graph:
the backpropagated loss, a value it was computed from (loss components, the model's output), or
such a tensor returned by a training-step helper in another file.

Not reported: `loss.item()`, `loss.detach()`, `float(loss)`, `.tolist()`; accumulators reset inside
the loop (summing component losses within one step before the backward); loops without a
backward and a step (an inner loop over micro-batches of one step).

## Why is this bad?
Each stored loss keeps its whole graph alive until the total is dropped, usually at the end
of the epoch: every step's graph nodes, and every intermediate activation of the GAT encoder
and decoder for that batch where no `backward()` has freed them (a backward frees the tensors
its graph saved, not the graph). Memory grows with the number of steps, the run slows down or
dies with out-of-memory on the full dataset although batch_size=1 "works", and a later `total.backward()` would
backpropagate through every stale graph again. It does not change a single gradient of a
correct step, so it is a warning: but it is often why a pipeline was "fixed" by shrinking the
model or the data until the reconstruction got worse.

## Example
```python
total = 0.0
for g in loader:
    loss, _ = model(g, g.ndata["feat"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss
```

## Use instead
```python
total = 0.0
for g in loader:
    ...
    total += loss.item()
```

## Fix safety
Safe in intent (`.item()` or `.detach()` keeps the value and drops the graph); not applied
automatically because a tensor total may be used later on purpose.

## References
- https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
"""

    VALID = [
        Valid(_ENGINE_STEP.format(loss="loss.item()")),
        # a validation curve of rounded numbers, appended in the training loop
        Valid(
            "import torch\n"
            "def evaluate(model, x):\n"
            "    with torch.no_grad():\n"
            "        return model(x).mean().item(), 0.0\n"
            "def fit(model, opt, batches, x_val):\n"
            "    curve = []\n"
            "    for x in batches:\n"
            "        loss = model(x).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        curve.append(round(evaluate(model, x_val)[0], 4))\n"
            "    return curve\n"
        ),
        # the same helper handed the loss's number
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self, model):\n"
            "        self.model, self.step_losses = model, []\n"
            "        self.opt = torch.optim.Adam(model.parameters())\n"
            "    def log_step(self, loss):\n"
            "        self.step_losses.append(loss)\n"
            "    def fit(self, data):\n"
            "        for x in data:\n"
            "            loss = self.model(x).sum()\n"
            "            self.log_step(loss.item())\n"
            "            self.opt.zero_grad()\n"
            "            loss.backward()\n"
            "            self.opt.step()\n"
        ),
        # numbers and integer tensors taken from the loss or the output, and a sum under no_grad
        Valid(
            "import torch\n"
            "def fit(model, opt, loader):\n"
            "    total, count, preds, scores = 0.0, 0, [], []\n"
            "    for g, y in loader:\n"
            "        out = model(g)\n"
            "        loss = torch.nn.functional.cross_entropy(out, y)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        cri = loss.cpu().item()\n"
            "        total += cri * out.size(0)\n"
            "        count += out.size(0)\n"
            "        preds.append(out.argmax(dim=-1, keepdim=True).cpu())\n"
            "        scores += out.squeeze(1).detach().cpu().tolist()\n"
            "        with torch.no_grad():\n"
            "            total += loss\n"
            "    return total / count\n"
        ),
        Valid(
            "def fit(model, opt, loader):\n"
            "    total, losses = 0.0, []\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        total += loss.item()\n"
            "        losses.append(loss.detach())\n"
            "        total += float(loss)\n"
            "    return total\n"
        ),
        # summing component losses within one step, before the backward
        Valid(
            "def fit(model, opt, loader, weights):\n"
            "    for g in loader:\n"
            "        parts = model(g)\n"
            "        loss = 0\n"
            "        for name, value in parts.items():\n"
            "            loss += weights[name] * value\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # a helper in another file that returns plain numbers
        Valid({
            "engine.py": (
                "def train_step(model, opt, g):\n"
                "    loss = model(g)\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n"
                "    return {'loss': loss.item()}\n"
            ),
            "train.py": (
                "from engine import train_step\n"
                "def main(model, optimizer, loader):\n"
                "    total = 0.0\n"
                "    for g in loader:\n"
                "        record = train_step(model, optimizer, g)\n"
                "        total += record['loss']\n"
            ),
        }),
        # micro-batches summed into one step's loss, the outer loop resets it
        Valid(
            "def fit(model, opt, loader):\n"
            "    for batch in loader:\n"
            "        total = 0\n"
            "        for mb in batch:\n"
            "            total = total + model(mb)\n"
            "        opt.zero_grad()\n"
            "        total.backward()\n"
            "        opt.step()\n"
        ),
        # an epoch helper that sums `.item()` numbers and returns the sum: a float per epoch
        Valid(
            "class Trainer:\n"
            "    def __init__(self, model, opt, loader):\n"
            "        self.model, self.opt, self.loader = model, opt, loader\n"
            "        self.train_losses = []\n"
            "    def train_epoch(self):\n"
            "        epoch_loss = 0\n"
            "        for g in self.loader:\n"
            "            loss = self.model(g)\n"
            "            epoch_loss += loss.item()\n"
            "            self.opt.zero_grad()\n"
            "            loss.backward()\n"
            "            self.opt.step()\n"
            "        return epoch_loss\n"
            "    def train(self, epochs):\n"
            "        for _ in range(epochs):\n"
            "            epoch_loss = self.train_epoch()\n"
            "            self.train_losses.append(epoch_loss)\n"
        ),
        # the epoch helper returns a float built from the loss's `.item()`, with the optimizer
        Valid({
            "steps.py": (
                "def train_epoch(model, optimizer, loader):\n"
                "    total_loss = total_examples = 0\n"
                "    for g in loader:\n"
                "        optimizer.zero_grad()\n"
                "        loss = model.loss(model(g))\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        total_loss += loss.detach().item() * g.num\n"
                "        total_examples += g.num\n"
                "    return total_loss / total_examples, optimizer\n"
            ),
            "main.py": (
                "import torch\n"
                "from steps import train_epoch\n"
                "def main(model, loader):\n"
                "    optimizer = torch.optim.Adam(model.parameters())\n"
                "    losses = []\n"
                "    for epoch in range(10):\n"
                "        epoch_loss, optimizer = train_epoch(model, optimizer, loader)\n"
                "        losses.append(epoch_loss)\n"
            ),
        }),
        # the metrics dict holds the loss as a number; another entry kept is a number too
        Valid({
            "steps.py": _METRICS_STEP.format(loss="loss.item()"),
            "train.py": (
                "from steps import train_step\n"
                "def main(model, opt, loader):\n"
                "    history, sizes = [], []\n"
                "    for g in loader:\n"
                "        model, metrics = train_step(model, opt, g)\n"
                "        history.append(metrics[\"loss\"])\n"
                "        sizes.append(metrics[\"nodes\"])\n"
            ),
        }),
        # the same helper kept numbers: `.item()`
        Valid(
            "running = {'loss_ema': 0.0}\n"
            "def log_step(loss):\n"
            "    running['loss_ema'] = 0.9 * running['loss_ema'] + 0.1 * loss.item()\n"
            "def train(model, opt, batches):\n"
            "    for g, x in batches:\n"
            "        loss = model(g, x)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        log_step(loss)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "def fit(model, opt, loader):\n"
            "    total = 0.0\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        total += loss\n"
            "    return total / len(loader)\n",
            line=8, column=9,
        ),
        Invalid(
            "def fit(model, opt, loader):\n"
            "    history = []\n"
            "    for g in loader:\n"
            "        loss, parts = model(g)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        history.append(parts['coord'])\n",
            line=8,
        ),
        # the step helper returns the loss tensor; the epoch loop sums it, across files
        Invalid({
            "engine.py": (
                "def train_step(model, opt, g):\n"
                "    loss = model(g)\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n"
                "    return {'loss': loss}\n"
            ),
            "train.py": (
                "from engine import train_step\n"
                "def main(model, optimizer, loader):\n"
                "    total = 0.0\n"
                "    for g in loader:\n"
                "        record = train_step(model, optimizer, g)\n"
                "        total = total + record['loss']\n"
            ),
        }, path="train.py", line=6),
        # the epoch helper returns the summed loss tensors themselves
        Invalid(
            "class Trainer:\n"
            "    def __init__(self, model, opt, loader):\n"
            "        self.model, self.opt, self.loader = model, opt, loader\n"
            "        self.train_losses = []\n"
            "    def train_epoch(self):\n"
            "        epoch_loss = 0\n"
            "        for g in self.loader:\n"
            "            loss = self.model(g)\n"
            "            epoch_loss += loss\n"
            "            self.opt.zero_grad()\n"
            "            loss.backward()\n"
            "            self.opt.step()\n"
            "        return epoch_loss\n"
            "    def train(self, epochs):\n"
            "        for _ in range(epochs):\n"
            "            epoch_loss = self.train_epoch()\n"
            "            self.train_losses.append(epoch_loss)\n",
            line=9,
        ),
        # a running total kept on the trainer by the step method the loop calls
        Invalid({
            "trainer.py": (
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model, self.opt = model, opt\n"
                "        self.running_loss = 0.0\n"
                "    def training_step(self, g):\n"
                "        loss = self.model(g)\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
                "        self.opt.step()\n"
                "        self.running_loss += loss\n"
                "        return loss.item()\n"
            ),
            "train.py": (
                "import torch\nfrom trainer import Trainer\n"
                "def main(model, loader):\n"
                "    trainer = Trainer(model, torch.optim.Adam(model.parameters()))\n"
                "    for g in loader:\n"
                "        trainer.training_step(g)\n"
            ),
        }, path="trainer.py", line=10),
        # the step returns its loss tensor in a metrics dict; the loop keeps that entry
        Invalid({
            "steps.py": _METRICS_STEP.format(loss="loss"),
            "train.py": (
                "from steps import train_step\n"
                "def main(model, opt, loader):\n"
                "    history = []\n"
                "    for g in loader:\n"
                "        model, metrics = train_step(model, opt, g)\n"
                "        history.append(metrics[\"loss\"])\n"
            ),
        }, path="train.py", line=6, message_contains='metrics["loss"]'),
        # a logging mixin's method handed the loss every step keeps it in a list
        Invalid({
            "mixins.py": (
                "class LoggingMixin:\n"
                "    def init_logging(self):\n"
                "        self.step_losses = []\n"
                "    def log_step(self, loss):\n"
                "        self.step_losses.append(loss)\n"
            ),
            "train.py": (
                "import torch\nfrom mixins import LoggingMixin\n"
                "class Trainer(LoggingMixin):\n"
                "    def __init__(self, model):\n"
                "        self.model = model\n"
                "        self.opt = torch.optim.Adam(model.parameters())\n"
                "        self.init_logging()\n"
                "    def fit(self, data):\n"
                "        for x in data:\n"
                "            loss = self.model(x).sum()\n"
                "            self.log_step(loss)\n"
                "            self.opt.zero_grad()\n"
                "            loss.backward()\n"
                "            self.opt.step()\n"
            ),
        }, path="mixins.py", line=5),
        # a logging helper the loop hands the loss keeps a running average in module-level state
        Invalid(
            "running = {'loss_ema': 0.0}\n"
            "def log_step(loss):\n"
            "    running['loss_ema'] = 0.9 * running['loss_ema'] + 0.1 * loss\n"
            "def train(model, opt, batches):\n"
            "    for g, x in batches:\n"
            "        loss = model(g, x)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        log_step(loss)\n",
            line=3, message_contains="running"),
        # the total kept in the state object the loop hands every step
        Invalid(_ENGINE_STEP.format(loss="loss"), line=6, message_contains="engine.metrics"),
    ]

    preview_kind = "tensors other than the loss kept across steps"

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        t = Training.of(project)
        seen: set[tuple[str, int]] = set()
        for loop in t.training_loops():
            found = [(loop.fn, i, acc, value) for i, acc, value in cls._accumulations(t, loop)]
            found += cls._instance_accumulations(t, loop)
            for fn, i, acc, value in found:
                if (fn.qualname, i) in seen:
                    continue
                seen.add((fn.qualname, i))
                yield cls.make_finding(
                    fn.path, fn.events[i].span,
                    f"`{acc}` accumulates `{value}` across training steps with its autograd "
                    f"graph: every step's graph stays in memory until `{acc}` is dropped (with its "
                    f"activations, where no backward has freed them)",
                    fix=f"accumulate `{value}.item()` (or `{value}.detach()`)",
                    # readers judged totals of the loss right; other tensors kept per step
                    # (logits of an evaluation head) mostly not: those are a preview kind
                    preview=value not in cls._losses(t, fn),
                )

    @staticmethod
    def _losses(t: Training, fn: FunctionInfo) -> set[str]:
        """Names in ``fn`` that hold the loss or part of it: what it backpropagates or returns (a
        step function's loss), what a call of a function that backpropagates gives it, names
        that say they are one, and what one assignment unpacks beside them."""
        out = {u for e in fn.events if is_backward(e) or e.kind == "return" for u in e.uses}
        for e in fn.events:
            if e.kind == "call" and e.targets and any(
                    t.contains(q, "backward") for q in t.resolve(fn, e)):
                out |= set(e.targets)
            out |= {n for n in (*e.targets, *e.uses, *entries_read(e.text)) if "loss" in n.lower()}
        # `loss, parts = model(g)`: what comes with the loss (its components) shares its graph
        for e in fn.events:
            if e.kind == "assign" and set(e.targets) & out:
                out |= set(e.targets)
        return out

    @classmethod
    def _instance_accumulations(cls, t: Training, loop: TrainingLoop
                                ) -> list[tuple[FunctionInfo, int, str, str]]:
        """A step method the loop calls each iteration (the one that backpropagates) adding to an
        attribute of its instance (``self.running_loss += loss``): the attribute outlives the
        call, so it accumulates across steps like a total in the loop itself."""
        out = []
        steps = {a.fn.qualname: a.fn for a in loop.of("backward") if a.fn is not loop.fn}
        for back in loop.of("backward"):
            if back.fn is not loop.fn:
                continue
            # `loss = module.training_step(batch)` then `loss.backward()`: the step function
            # computes the loss the loop backpropagates (not a module's forward: the model)
            for f, j in t.loss_slice(back.fn, back.index):
                if f is back.fn and j >= 0 and f.events[j].kind == "call":
                    for qual in t.resolve(f, f.events[j]):
                        callee = t.project.function(qual)
                        if callee is not None and callee.name not in ("forward", "__call__"):
                            steps.setdefault(qual, callee)
        for fn in steps.values():
            graph = _graph_names(t, fn)
            for i, acc, value in cls._adds(t, fn, range(len(fn.events)), graph):
                if _outlives_call(t.project, fn, acc):
                    out.append((fn, i, acc, value))
        for fn in [loop.fn, *steps.values()]:
            out += cls._handed_accumulations(t, fn, _graph_names(t, fn))
        return out

    @classmethod
    def _handed_accumulations(cls, t: Training, fn: FunctionInfo, graph: set[str]
                              ) -> list[tuple[FunctionInfo, int, str, str]]:
        """A helper handed the loss each step (``self.log_step(loss)``, a mixin's method)
        that adds its parameter to an attribute of its instance, which outlives the call."""
        out = []
        for e in fn.events:
            if e.kind != "call" or not set(e.uses) & graph:
                continue
            for qual in t.resolve(fn, e):
                callee = t.project.function(qual)
                if callee is None or callee is fn:
                    continue
                handed = {param for param, arg in bindings(e, callee) if arg in graph}
                out += [(callee, i, acc, value) for i, acc, value
                        in cls._adds(t, callee, range(len(callee.events)), handed)
                        if _outlives_call(t.project, callee, acc)]
        return out

    @classmethod
    def _accumulations(cls, t: Training, loop: TrainingLoop) -> Iterable[tuple[int, str, str]]:
        fn = loop.fn
        graph = _graph_names(t, fn)
        body = [i for i, e in enumerate(fn.events) if loop.loop_id in e.loop_ids]
        return cls._adds(t, fn, body, graph)

    @classmethod
    def _adds(cls, t: Training, fn: FunctionInfo, body: Iterable[int],
              graph: set[str]) -> Iterable[tuple[int, str, str]]:
        """The statements of ``body`` adding a graph-carrying value of ``graph`` to a total or a
        list that ``body`` does not reset."""
        body = list(body)
        reset_inside = {x for i in body for x in fn.events[i].targets
                        if fn.events[i].kind == "assign" and not _updates_itself(fn.events[i])}
        backwarded = {u for i in body if is_backward(fn.events[i]) for u in fn.events[i].uses}
        for i in body:
            e = fn.events[i]
            if e.kind == "augassign" or (e.kind == "assign" and len(e.targets) == 1 and _adds_to_itself(e)):
                acc, values = e.targets[0], [u for u in e.uses if u != e.targets[0]]
            elif e.kind == "call" and e.method in ("append", "extend", "add_") and e.receiver:
                if e.args and all(NUMBER_CALL.match(a) for a in e.args):
                    continue  # `curve.append(round(evaluate(model), 4))`: a number, whatever it read
                acc, values = e.receiver, [u for u in e.uses if not u.startswith(e.receiver)]
            else:
                continue
            if acc in reset_inside or acc in backwarded or acc in graph:
                continue
            if t.grad_off(fn, i) is not None:
                continue  # `with torch.no_grad(): total += loss` records no graph
            # an entry assigned from itself (`running["ema"] = 0.9 * running["ema"] + 0.1 * loss`)
            # holds what is assigned: the values decide, not the container
            entry_update = e.kind == "assign" and e.text.startswith(acc + "[")
            if e.kind != "call" and not entry_update and not holds_graph(t, fn, acc, i + 1):
                continue  # what it adds is a number: `acc += accuracy(scores, labels)`
            for value in values:
                if value in graph and not detached_text(e.text, value) \
                        and holds_graph(t, fn, value, i):
                    yield i, acc, value
                    break
            else:
                # `history.append(metrics["loss"])`: an entry that holds the loss tensor
                for value in entries_read(e.text):
                    if value in graph and not detached_text(e.text, value.split("[")[0]):
                        yield i, acc, value
                        break

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        """From the graphs held across steps (``Evidence.growing_holders``): confirmed when the
        accumulator the finding names held more autograd nodes at each backward, ending above one
        step's whole loss graph; refuted when the accumulation ran repeatedly and no holder grew."""
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the accumulation never ran"])
        acc = finding.message.split("`")[1] if finding.message.count("`") >= 2 else ""
        name = acc.rsplit(".", 1)[-1]
        growing = evidence.growing_holders()
        mine = [(h, rs) for h, rs in growing if h.rsplit(".", 1)[-1] == name]
        if mine:
            holder, rs = mine[0]
            trail = ", ".join(f"{r.nodes} at step {r.step}" for r in rs[-3:])
            return Verdict(Status.CONFIRMED, [
                f"`{holder}` kept autograd nodes alive across steps: {trail} (one step's loss "
                f"graph: {rs[-1].loss_nodes} nodes)"])
        hits = evidence.hits(finding.path, finding.line, finding.end_line)
        if not growing and hits >= 2 and evidence.total_steps >= 3:
            return Verdict(Status.REFUTED, [
                f"the accumulation ran {hits}x, but no tensor held across steps kept a growing "
                "autograd graph"])
        return None
