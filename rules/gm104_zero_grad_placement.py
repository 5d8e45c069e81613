"""GM104 zero-grad-placement: gradients never reset in the training loop, or reset between
``backward`` and ``step``."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.conditions import periodic_test, tests_of
from auditor.static.dataflow import callers_of
from auditor.static.facts import Event, FunctionInfo
from auditor.static.project import Project
from auditor.static.training import Action, Training, TrainingLoop, looks_optimizer


def _same_optimizer(reset: Action, step: Action, loop: TrainingLoop) -> bool:
    if reset.receiver == step.receiver:
        return True
    if reset.receiver.rsplit(".", 1)[-1] == step.receiver.rsplit(".", 1)[-1]:
        return True  # `optimizer` in one function, `self.optimizer` in another
    # `model.zero_grad()` / `p.grad = None`: clears the gradients every optimizer would use
    return not looks_optimizer(reset.receiver) and len({a.receiver for a in loop.of("step")}) == 1


NEVER_RESET = "never reset in the training loop"


# a LightningModule whose `optimizer_zero_grad` override resets under `{test}` (the examples)
_PERIODIC_RESET = (
    "import pytorch_lightning as pl\nimport torch\n"
    "class Lit(pl.LightningModule):\n"
    "    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):\n"
    "        if {test}:\n"
    "            optimizer.zero_grad(set_to_none=True)\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        return self.net(batch).pow(2).mean()\n"
    "    def configure_optimizers(self):\n"
    "        return torch.optim.Adam(self.parameters(), lr=1e-3)\n"
)


# a loop that resets an EMA teacher's gradients (a copy of the trained model), and `{own}`
_TEACHER_RESET = (
    "import copy\n"
    "import torch\n"
    "def fit(model, loader):\n"
    "    teacher = copy.deepcopy(model)\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "    for g in loader:\n"
    "        teacher.zero_grad()\n"
    "{own}"
    "        model(g).backward()\n"
    "        opt.step()\n"
)



def _tests_on_the_way(project: Project, loop: TrainingLoop, action: Action, up: int = 2) -> list[str]:
    """The tests ``action`` runs under: its own, and, while its function is not the loop's,
    those of the calls that reach it, up to ``up`` callers (``if stepped: apply_update(...)``)."""
    tests = list(tests_of(action.event))
    frontier = [action.fn]
    for _ in range(up):
        callers: list[FunctionInfo] = []
        for fn in frontier:
            if fn is loop.fn:
                continue
            for caller, event in callers_of(project, fn.qualname):
                tests += tests_of(event)
                callers.append(caller)
        frontier = callers
    return tests


def _every_iteration(project: Project, loop: TrainingLoop, action: Action) -> bool:
    """``action`` runs in every iteration of ``loop``: written in its body under no test, or
    under no test in a function the body calls under none (a hook: ``self.before_backward(loss)``)."""
    if tests_of(action.event):
        return False

    def in_body(event: Event) -> bool:
        return bool(event.loop_ids) and event.loop_ids[-1] == loop.loop_id and not tests_of(event)

    if action.fn is loop.fn:
        return in_body(action.event)
    return any(caller is loop.fn and in_body(event) for caller, event in callers_of(project, action.fn.qualname))


def _same_object(training: Training, a: Action, b: Action) -> bool:
    """The optimizers two actions act on are one object by where they were made."""
    mine = [o for o in training.origins(a.fn, a.receiver, a.index) if o.known]
    theirs = [o for o in training.origins(b.fn, b.receiver, b.index) if o.known]
    return any(x.same_as(y) for x in mine for y in theirs)

# a loop's base class stepping every k-th micro-batch by an accumulator object's verdict, with a
# hook a mixin overrides; `{hook}`: what the hook does before each backward
_ACCUMULATED_HOOK = (
    "import torch\n"
    "class Accumulator:\n"
    "    def __init__(self, every):\n"
    "        self.every, self.count = every, 0\n"
    "    def ready(self):\n"
    "        self.count += 1\n"
    "        return self.count % self.every == 0\n"
    "class LoopBase:\n"
    "    def before_backward(self, loss):\n"
    "        pass\n"
    "    def fit(self, model, loader):\n"
    "        self.optimizer = torch.optim.Adam(model.parameters())\n"
    "        accum = Accumulator(2)\n"
    "        for x in loader:\n"
    "            loss = model(x).pow(2).mean()\n"
    "            self.before_backward(loss)\n"
    "            loss.backward()\n"
    "            if accum.ready():\n"
    "                self.optimizer.step()\n"
    "                self.optimizer.zero_grad()\n"
    "class LogMixin:\n"
    "    def before_backward(self, loss):\n"
    "        {hook}\n"
    "        super().before_backward(loss)\n"
    "class Trainer(LogMixin, LoopBase):\n"
    "    pass\n"
)


class ZeroGradPlacement(Rule):
    code = "GM104"
    name = "zero-grad-placement"
    severity = Severity.ERROR
    summary = "`zero_grad()` missing from the training loop, or called between backward and step"
    prefilter = ("zero_grad", ".backward(", "optim")
    doc = """
## What it does
Finds training loops — loops whose body, including the functions and methods it calls in any
file, runs a `.backward()` and an `optimizer.step()` — that either

- never reset the gradients (`optimizer.zero_grad()`, `model.zero_grad()`, with or without
  `set_to_none`, or `p.grad = None`) inside the loop; a reset once before the loop does not
  count; or
- reset them after the last `.backward()` and before the `optimizer.step()` that should use
  them (following the order of one iteration, wrapping round to the previous iteration); or
- reset them in every iteration while the step runs only every *k*-th one (a `%` test, or a
  flag the program computes with one): gradient accumulation whose reset discards what
  accumulated.

Gradient accumulation done right (several backwards, then `step()` and `zero_grad()` together
every *k* iterations) is not reported, nor are several optimizers each reset in their turn.

## Why is this bad?
`.backward()` adds into `.grad`. Without a reset, the update at step *k* is the sum of all *k*
gradients so far: the effective learning rate grows with time and the update follows stale
directions, so a GraphMAE's reconstruction drifts instead of converging (Adam hides the scale
but not the stale directions). Resetting between `backward()` and `step()` is the opposite
failure: every step applies a zero gradient, the parameters barely move (only momentum and weight
decay act) and the decoder keeps emitting its initial, scattered points.

## Example
```python
for g in loader:
    loss, _ = model(g, g.ndata["feat"])
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
```

## Use instead
```python
for g in loader:
    loss, _ = model(g, g.ndata["feat"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Fix safety
No automatic fix: where the reset belongs depends on whether the loop accumulates gradients on
purpose.

## References
- https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
- https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html
"""

    VALID = [
        Valid(_ACCUMULATED_HOOK.format(hook="print(float(loss))")),
        # a linear probe trained with its own optimizer every 200 epochs of the pretraining,
        # whose step and reset run every epoch
        Valid(
            "import torch\n"
            "def probe(model, x, y):\n"
            "    head = torch.nn.Linear(4, 2)\n"
            "    optimizer = torch.optim.Adam(head.parameters())\n"
            "    for _ in range(10):\n"
            "        loss = torch.nn.functional.cross_entropy(head(model.embed(x).detach()), y)\n"
            "        optimizer.zero_grad()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "def pretrain(model, x, y, epochs):\n"
            "    optimizer = torch.optim.Adam(model.parameters())\n"
            "    for epoch in range(epochs):\n"
            "        loss = model(x)\n"
            "        optimizer.zero_grad()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        if (epoch + 1) % 200 == 0:\n"
            "            probe(model, x, y)\n"
        ),
        Valid(
            "def fit(model, opt, loader):\n"
            "    for g in loader:\n"
            "        opt.zero_grad(set_to_none=True)\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # reset after the step
        Valid(
            "def fit(model, opt, loader):\n"
            "    for g in loader:\n"
            "        model(g).backward()\n"
            "        opt.step()\n"
            "        opt.zero_grad()\n"
        ),
        # accumulation with the reset at the start of each group, the step at its end
        Valid(
            "def fit(model, optimizer, loader, accum=4):\n"
            "    for i, g in enumerate(loader):\n"
            "        if i % accum == 0:\n"
            "            optimizer.zero_grad()\n"
            "        (model(g) / accum).backward()\n"
            "        if (i + 1) % accum == 0:\n"
            "            optimizer.step()\n"
        ),
        # gradient accumulation done right
        Valid(
            "def fit(model, optimizer, loader, accum=4):\n"
            "    optimizer.zero_grad()\n"
            "    for i, g in enumerate(loader):\n"
            "        loss = model(g) / accum\n"
            "        loss.backward()\n"
            "        if (i + 1) % accum == 0:\n"
            "            optimizer.step()\n"
            "            optimizer.zero_grad()\n"
        ),
        # a step skipped when the loss is not finite: that iteration's gradient is meant to go
        Valid(
            "import torch\n"
            "def fit(model, optimizer, loader):\n"
            "    for g in loader:\n"
            "        optimizer.zero_grad()\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        if torch.isfinite(loss):\n"
            "            optimizer.step()\n"
        ),
        # two optimizers, each reset in its turn (GAN style)
        Valid(
            "def fit(gen, disc, opt_g, opt_d, loader):\n"
            "    for x in loader:\n"
            "        opt_d.zero_grad()\n"
            "        disc(x).backward()\n"
            "        opt_d.step()\n"
            "        opt_g.zero_grad()\n"
            "        disc(gen(x)).backward()\n"
            "        opt_g.step()\n"
        ),
        # manual reset, the scheduler's step is not an optimizer step
        Valid(
            "def fit(model, optimizer, scheduler, loader):\n"
            "    for g in loader:\n"
            "        for p in model.parameters():\n"
            "            p.grad = None\n"
            "        model(g).backward()\n"
            "        optimizer.step()\n"
            "        scheduler.step()\n"
        ),
        # reset inside a helper method called per iteration, across files
        Valid({
            "engine.py": (
                "class Trainer:\n"
                "    def __init__(self, model, optimizer):\n"
                "        self.model, self.optimizer = model, optimizer\n"
                "    def train_step(self, g):\n"
                "        loss = self.model(g)\n"
                "        self.optimizer.zero_grad()\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n"
            ),
            "train.py": (
                "from engine import Trainer\n"
                "def main(model, optimizer, loader):\n"
                "    trainer = Trainer(model, optimizer)\n"
                "    for g in loader:\n"
                "        trainer.train_step(g)\n"
            ),
        }),
        # sparse embedding optimizers update from what the embedding recorded in its forward,
        # not from `.grad`: DGL's SparseAdam, WholeGraph's optimizer made by a project helper
        Valid(
            "import dgl\n"
            "import torch.nn.functional as F\n"
            "def fit(g, loader):\n"
            "    emb = dgl.nn.NodeEmbedding(g.num_nodes(), 16, 'emb')\n"
            "    emb_opt = dgl.optim.SparseAdam([emb], lr=0.01)\n"
            "    for nids, labels in loader:\n"
            "        loss = F.cross_entropy(emb(nids), labels)\n"
            "        loss.backward()\n"
            "        emb_opt.step()\n"
        ),
        Valid({
            "wg.py":
                "try:\n"
                "    import pylibwholegraph.torch as wgth\n"
                "except ImportError:\n"
                "    wgth = None\n"
                "def create_optimizer(kind, params):\n"
                "    return wgth.create_wholememory_optimizer(kind, params)\n",
            "train.py":
                "import torch.nn.functional as F\n"
                "from wg import create_optimizer\n"
                "def fit(layer, feats, labels, lr):\n"
                "    opt = create_optimizer('adam', {})\n"
                "    layer.attach_wg_optimizer(opt)\n"
                "    for _ in range(5):\n"
                "        loss = F.cross_entropy(layer(feats), labels)\n"
                "        loss.backward()\n"
                "        opt.step(lr)\n",
        }),
        # an EMA teacher reset beside the optimizer's own reset
        Valid(_TEACHER_RESET.format(own="        opt.zero_grad()\n")),
    ]
    INVALID = [
        # a sparse optimizer beside a dense one that is never reset
        Invalid(
            "import dgl\n"
            "import torch\n"
            "import torch.nn.functional as F\n"
            "def fit(g, model, loader):\n"
            "    emb = dgl.nn.NodeEmbedding(g.num_nodes(), 16, 'emb')\n"
            "    emb_opt = dgl.optim.SparseAdam([emb], lr=0.01)\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    for nids, labels in loader:\n"
            "        loss = F.cross_entropy(model(emb(nids)), labels)\n"
            "        loss.backward()\n"
            "        emb_opt.step()\n"
            "        opt.step()\n",
            line=10, message_contains="never reset",
        ),
        Invalid(
            "def fit(model, opt, loader):\n"
            "    opt.zero_grad()\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=5, message_contains="never reset",
        ),
        Invalid(
            "def fit(model, opt, loader):\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "        opt.zero_grad(set_to_none=True)\n"
            "        opt.step()\n",
            line=5, column=9,
        ),
        # reset, step, backward: the step of each iteration sees zero gradients
        Invalid(
            "def fit(model, opt, loader):\n"
            "    for g in loader:\n"
            "        opt.zero_grad()\n"
            "        opt.step()\n"
            "        model(g).backward()\n",
            line=3,
        ),
        # accumulation that forgets the reset
        Invalid(
            "def fit(model, optimizer, loader, accum=4):\n"
            "    for i, g in enumerate(loader):\n"
            "        loss = model(g) / accum\n"
            "        loss.backward()\n"
            "        if (i + 1) % accum == 0:\n"
            "            optimizer.step()\n",
            line=4,
        ),
        # the step lives in a helper in another file; the reset was dropped from it
        Invalid({
            "engine.py": (
                "class Trainer:\n"
                "    def __init__(self, model, optimizer):\n"
                "        self.model, self.optimizer = model, optimizer\n"
                "    def train_step(self, g):\n"
                "        loss = self.model(g)\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n"
            ),
            "train.py": (
                "from engine import Trainer\n"
                "def main(model, optimizer, loader):\n"
                "    trainer = Trainer(model, optimizer)\n"
                "    for g in loader:\n"
                "        trainer.train_step(g)\n"
            ),
        }, path="engine.py", line=6),
        # model.zero_grad() between backward and step, under a GradScaler
        Invalid(
            "def fit(model, opt, scaler, loader):\n"
            "    for g in loader:\n"
            "        scaler.scale(model(g)).backward()\n"
            "        model.zero_grad()\n"
            "        scaler.step(opt)\n"
            "        scaler.update()\n",
            line=4,
        ),
        # the loop resets an EMA teacher's gradients, never the optimizer's (the student's)
        Invalid(_TEACHER_RESET.format(own=""), line=7, message_contains="a copy made at"),
        # the reset moved into the trainer's constructor: it runs once, before the loop
        Invalid({
            "engine.py": (
                "class Trainer:\n"
                "    def __init__(self, model, optimizer):\n"
                "        self.model, self.optimizer = model, optimizer\n"
                "        self.optimizer.zero_grad()\n"
                "    def train_step(self, g):\n"
                "        self.model(g).backward()\n"
                "        self.optimizer.step()\n"
            ),
            "train.py": (
                "import torch\nfrom engine import Trainer\n"
                "def main(model, loader):\n"
                "    trainer = Trainer(model, torch.optim.Adam(model.parameters()))\n"
                "    for g in loader:\n"
                "        trainer.train_step(g)\n"
            ),
        }, path="engine.py", line=4, message_contains="outside the training loop"),
        # the reset moved into a hook that clears only every 4th batch; the step runs every batch
        Invalid(_PERIODIC_RESET.format(test="batch_idx % 4 == 0"), line=6, message_contains="every iteration"),
        # gradient accumulation: a decorator backpropagates every micro-step and a helper steps
        # every second one, never resetting: reported at that step, where the reset belongs
        Invalid(
            "import functools\nimport itertools\nimport torch\n"
            "def apply_update(opt):\n"
            "    opt.step()\n"
            "def accumulate(n, opt):\n"
            "    def deco(fn):\n"
            "        counter = itertools.count(1)\n"
            "        @functools.wraps(fn)\n"
            "        def wrapper(*args):\n"
            "            loss = fn(*args)\n"
            "            (loss / n).backward()\n"
            "            if next(counter) % n == 0:\n"
            "                apply_update(opt)\n"
            "            return loss\n"
            "        return wrapper\n"
            "    return deco\n"
            "class Step:\n"
            "    def __init__(self, model):\n"
            "        self.model = model\n"
            "    def __call__(self, x):\n"
            "        return self.model(x).pow(2).mean()\n"
            "def main(model, data):\n"
            "    opt = torch.optim.Adam(model.parameters())\n"
            "    step = accumulate(2, opt)(Step(model))\n"
            "    for x in data:\n"
            "        step(x)\n",
            line=5, message_contains="applies the sum",
        ),
        # gradient accumulation whose reset runs at every micro-step: the step, taken every
        # k-th one, sees the last micro-batch's gradient alone
        Invalid(
            "def fit(model, optimizer, loader, accum=4):\n"
            "    for i, g in enumerate(loader):\n"
            "        optimizer.zero_grad()\n"
            "        (model(g) / accum).backward()\n"
            "        if (i + 1) % accum == 0:\n"
            "            optimizer.step()\n",
            line=3, message_contains="runs only when `(i + 1) % accum == 0`",
        ),
        # the same with the accumulation window kept by a runner object's flag
        Invalid(
            "class Runner:\n"
            "    def __init__(self, k):\n"
            "        self.k, self.n, self.sync = k, 0, True\n"
            "    def tick(self):\n"
            "        self.n += 1\n"
            "        self.sync = self.n % self.k == 0\n"
            "def fit(model, optimizer, loader):\n"
            "    runner = Runner(2)\n"
            "    for g in loader:\n"
            "        runner.tick()\n"
            "        optimizer.zero_grad()\n"
            "        model(g).backward()\n"
            "        if runner.sync:\n"
            "            optimizer.step()\n",
            line=11, message_contains="runs only when `runner.sync`",
        ),
        # the update a helper makes, called every k-th micro-step by the step function
        Invalid(
            "import torch\n"
            "def apply_update(opt):\n"
            "    opt.step()\n"
            "    opt.zero_grad()\n"
            "def micro_step(model, opt, g, i, k):\n"
            "    (model(g) / k).backward()\n"
            "    stepped = (i + 1) % k == 0\n"
            "    if stepped:\n"
            "        apply_update(opt)\n"
            "def fit(model, loader):\n"
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    for i, g in enumerate(loader):\n"
            "        optimizer.zero_grad()\n"
            "        micro_step(model, optimizer, g, i, 4)\n",
            line=13, message_contains="runs only when `stepped`",
        ),
        # a mixin's hook clears the gradients before every backward: the accumulation is lost
        Invalid(_ACCUMULATED_HOOK.format(hook="self.optimizer.zero_grad()"), line=23,
                message_contains="runs in every iteration"),
    ]

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        training = Training.of(project)
        for loop in training.training_loops():
            where = f"{loop.fn.path}:{min(e.span.line for e in loop.fn.events if loop.loop_id in e.loop_ids)}"
            if all(training.keeps_no_grad(step) for step in loop.of("step")):
                continue  # sparse embedding optimizers only: no `.grad` to accumulate
            for action, message, fix in cls._problems(training, loop, where):
                span = action.event.span
                keyed = [k for k, key in enumerate(action.fn.decorator_keys) if key]
                if action.kind == "reset" and keyed:
                    # a handler: the event its registration names is what decides when it runs
                    span = training.decorator_span(action.fn, keyed[0])
                    message += (f" (it runs as the handler of `{action.fn.decorator_keys[keyed[0]]}` "
                                f"that this decoration registers)")
                yield cls.make_finding(action.fn.path, span, message, fix)

    @classmethod
    def _problems(cls, training: Training, loop: TrainingLoop,
                  where: str) -> Iterable[tuple[Action, str, str]]:
        back = loop.of("backward")[0]
        # `teacher.zero_grad()`: a reset of a module the optimizers do not step is no reset
        others = {id(a): what for a in loop.of("reset")
                  if (what := training.resets_others(a, back)) is not None}
        if others and len(others) == len(loop.of("reset")):
            reset = next(a for a in loop.of("reset") if id(a) in others)
            yield (reset,
                   f"`{reset.event.text}` resets the gradients of `{reset.receiver}` "
                   f"({others[id(reset)]}), not those of the parameters the optimizer steps: the "
                   f"trained model's gradients are {NEVER_RESET}",
                   f"reset the stepped optimizer's gradients (`{loop.of('step')[0].receiver}."
                   f"zero_grad()`) once per step")
            return
        if not loop.of("reset"):
            misplaced = cls._reset_elsewhere(training, loop)
            if misplaced is not None:
                fn, k = misplaced
                yield (Action("reset", fn, k, fn.events[k].receiver),
                       f"`{fn.events[k].text.strip()}` resets the stepped optimizer's gradients outside "
                       f"the training loop at {where} (once, or on another schedule than its "
                       f"iterations): they are {NEVER_RESET}, so each optimizer step applies the sum "
                       f"of the gradients since this reset",
                       "reset the gradients once per optimizer step, in the loop (before the "
                       "backward, or right after `optimizer.step()`)")
                return
            step = loop.of("step")[0]
            if step.fn is not back.fn:
                # the update is a helper of its own (every n backwards, under gradient
                # accumulation): its reset belongs right after its step
                yield (step,
                       f"gradients are {NEVER_RESET} at {where}: `{step.event.text.strip()}` "
                       f"applies the sum of all gradients since the start, and the backward at "
                       f"{back.fn.path}:{back.event.span.line} keeps adding into `.grad`",
                       f"call `{step.receiver}.zero_grad()` right after this step")
                return
            yield (back,
                   f"gradients are {NEVER_RESET} at {where}: this backward "
                   f"adds into `.grad` every iteration, so each optimizer step applies the sum "
                   f"of all gradients so far",
                   "call `optimizer.zero_grad()` once per optimizer step (before the backward, or "
                   "right after `optimizer.step()`)")
            return
        actions = [a for a in loop.actions if id(a) not in others]
        yield from cls._periodic_resets(actions, loop)
        yield from cls._resets_every_micro_step(training, actions, loop)
        n = len(actions)
        for s, step in enumerate(actions):
            if step.kind != "step":
                continue
            for back in range(1, n + 1):
                prev = actions[(s - back) % n]
                if prev.kind == "backward":
                    break
                if prev.kind == "reset" and _same_optimizer(prev, step, loop):
                    yield (prev,
                           f"`{prev.event.text}` runs after the backward and before "
                           f"`{step.event.text}` ({step.fn.path}:{step.event.span.line}): the "
                           f"step applies zeroed gradients and the model does not learn",
                           "move the reset before the backward pass (or after the optimizer step)")
                    break

    @staticmethod
    def _reset_elsewhere(training: Training, loop: TrainingLoop) -> Optional[tuple[FunctionInfo, int]]:
        """A ``zero_grad()`` of the optimizer the loop steps, made where the loop does not run it
        (a constructor, before the loop, a handler of another event): the reset that belongs in
        the loop."""
        step = loop.of("step")[0]
        stepped = [o for o in training.origins(step.fn, step.receiver, step.index) if o.known]
        for fn, event in training.project.events("call"):
            if event.method != "zero_grad" or not looks_optimizer(event.receiver):
                continue
            k = fn.position(event)
            # the same object, or the same attribute of the instance whose method steps it
            if any(o in stepped for o in training.origins(fn, event.receiver, k) if o.known) or (
                    event.receiver == step.receiver and event.receiver.startswith("self.")
                    and fn.class_name and fn.class_name == step.fn.class_name):
                return fn, k
        return None

    @staticmethod
    def _periodic_resets(actions: list[Action], loop: TrainingLoop) -> Iterable[tuple[Action, str, str]]:
        """A step taken every iteration whose optimizer's gradients are reset only every k-th
        one (``if batch_idx % 4 == 0: optimizer.zero_grad()``): accumulation without the
        matching condition on the step, so each step in between applies the sum so far."""
        for step in (a for a in actions if a.kind == "step" and not tests_of(a.event)):
            resets = [a for a in actions if a.kind == "reset" and _same_optimizer(a, step, loop)]
            tests = [next((c for c in tests_of(r.event) if "%" in c), None) for r in resets]
            if resets and all(tests):
                reset = resets[0]
                stepped = "Lightning's optimizer step" if step.fn.framework else \
                    f"`{step.event.text}` ({step.fn.path}:{step.event.span.line})"
                yield (reset,
                       f"`{reset.event.text}` runs only when `{tests[0]}`, while {stepped} runs "
                       f"every iteration: the steps in between apply gradients summed over several batches",
                       "reset the gradients before every backward, or step under the same condition "
                       "(gradient accumulation)")
                return

    @staticmethod
    def _resets_every_micro_step(training: Training, actions: list[Action],
                                 loop: TrainingLoop) -> Iterable[tuple[Action, str, str]]:
        """A reset run unconditionally in every iteration of the loop (written in its body),
        while the step it resets for runs only every k-th iteration (gradient accumulation:
        ``if (i + 1) % k == 0``, or a flag computed so): each step applies the last iteration's
        gradient alone, the ones accumulated before it are discarded."""
        project = training.project

        def same(reset: Action, step: Action) -> bool:
            # by name within one function; across functions by where the optimizer was made (a
            # probe's own `optimizer` stepped in a helper is another object)
            return reset.fn is step.fn and _same_optimizer(reset, step, loop) or _same_object(training, reset, step)

        steps = [(a, next((t for t in _tests_on_the_way(project, loop, a) if periodic_test(project, t)), None))
                 for a in actions if a.kind == "step"]
        for step, periodic in steps:
            reset = next((a for a in actions if a.kind == "reset" and _every_iteration(project, loop, a)
                          and same(a, step)
                          # a reset before the loop of micro-steps its step is in (once per window)
                          and not (a.fn is step.fn and set(step.event.loop_ids) - set(a.event.loop_ids))
                          # a step of that optimizer every iteration uses what the reset clears
                          and not any(same(a, other) for other, test in steps if test is None)),
                         None) if periodic else None
            if reset is not None:
                yield (reset,
                       f"`{reset.event.text}` runs in every iteration, while `{step.event.text}` "
                       f"({step.fn.path}:{step.event.span.line}) runs only when `{periodic}`: the "
                       "gradients accumulated in the iterations between steps are discarded, each "
                       "step applies the last one's alone",
                       "reset the gradients right after the optimizer step, under the same condition")
                return

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        if NEVER_RESET in finding.message:  # at the backward or a helper's step, or a stray reset
            return cls._accumulated(evidence)
        resets = evidence.calls_at(finding.path, finding.line, kind="zero_grad",
                                   end_line=finding.end_line)
        if resets:  # the reset itself was reported: between backward and step
            late = [r for r in resets if any(r.values("after_backward"))]
            if late:
                return Verdict(Status.CONFIRMED, [f"zero_grad at line {finding.line} ran after a "
                                                  f"backward and before the optimizer step "
                                                  f"({late[0].count} times)"])
            return Verdict(Status.REFUTED, ["zero_grad never ran between a backward and a step"])
        return None

    @staticmethod
    def _accumulated(evidence: Any) -> Optional[Verdict]:
        """From the trained parameters' gradients at the start of each backward after an
        optimizer step: still non-zero means nothing reset them."""
        # a backward's stale gradients are recorded only when an optimizer stepped since the
        # previous backward: under gradient accumulation, the micro-step after each update
        stale = [s for s in evidence.steps if s.stale_grads]
        if stale:
            return Verdict(Status.CONFIRMED, [
                f"at {len(stale)} of {len(evidence.steps)} backwards the trained parameters still "
                f"held the gradient of an earlier optimizer step when the backward started "
                f"({stale[0].stale_grads} parameters): gradients accumulated across steps"])
        if len([s for s in evidence.steps if s.optimizer_steps > 0]) < 2:
            return None
        return Verdict(Status.REFUTED, ["gradients were reset between optimizer steps"])
