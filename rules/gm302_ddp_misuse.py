"""GM302 ddp-misuse: DistributedDataParallel without a process group, wrapping a single-process
run, or bypassed through ``.module`` in the training forward."""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.context import MODULE_SCOPE
from auditor.static.conditions import (conditions_of, constant_truth, excludes, implies, innermost,
                                       periodic_test, tests_of)
from auditor.static.facts import Event, FunctionInfo
from auditor.static.paths import bindings, call_sites_of, under_no_grad
from auditor.static.programs import is_test_code
from auditor.static.project import Project
from auditor.static.training import Training

DDP = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
}
# Calls that set up a process group, or hand it to a framework that does.
PG_INIT = {
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "deepspeed.init_distributed",
    "accelerate.Accelerator",
    "lightning.Fabric",
    "lightning.fabric.Fabric",
}
LIGHTNING_TRAINERS = {"pytorch_lightning.Trainer", "lightning.Trainer", "lightning.pytorch.Trainer"}
# torchrun exports these; reading them is how a script learns it was launched distributed
TORCHRUN_ENV = re.compile(r"\b(LOCAL_RANK|WORLD_SIZE)\b")
# a condition that only holds in a multi-process launch
DIST_GUARD = re.compile(
    r"world_size|(\b|_)distributed\b|(\b|_)ddp\b|is_initialized|local_rank|\brank\b|WORLD_SIZE|"
    r"LOCAL_RANK|nprocs|multi_?gpu|(device_count\(\)|n_?gpus?|num_gpus)\s*(>\s*1|>=\s*2)",
    re.IGNORECASE,
)
ALWAYS_TRUE = re.compile(
    r">=\s*0\b|>\s*-\s*1\b|^\s*(True|1)\s*$|\bor\s+True\b|world_size\s*(>=\s*1|>\s*0)\b"
    # torch.distributed is built into every torch: available is no launch
    r"|^\s*(torch\.)?(dist|distributed)\.is_available\(\)\s*$"
)
MAX_UP = 3


# a runner that sets up the process group and wraps the model when `{flag}` holds (the examples)
_RUNNER = (
    "import torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel\n"
    "class Runner:\n"
    "    def __init__(self, world_size=1, rank=0):\n"
    "        self.distributed = {flag}\n"
    "        if self.distributed and not dist.is_initialized():\n"
    "            dist.init_process_group('gloo', init_method='file:///tmp/pg', rank=rank,\n"
    "                                    world_size=world_size)\n"
    "    def prepare(self, model):\n"
    "        if self.distributed:\n"
    "            model = DistributedDataParallel(model)\n"
    "        return model\n"
    "def main(model):\n"
    "    runner = Runner()\n"
    "    return runner.prepare(model)\n"
    "if __name__ == '__main__':\n"
    "    main(None)\n"
)


# a runner's accumulation context entering `no_sync()` when `{test}` holds (the examples)
_NO_SYNC = (
    "import contextlib\n"
    "class Runner:\n"
    "    def __init__(self, world_size, accum):\n"
    "        self.ddp, self.accum, self.n, self.sync = world_size > 1, accum, 0, True\n"
    "    @contextlib.contextmanager\n"
    "    def accumulate(self, model):\n"
    "        self.n += 1\n"
    "        self.sync = self.n % self.accum == 0\n"
    "        if {test}:\n"
    "            with model.no_sync():\n"
    "                yield\n"
    "        else:\n"
    "            yield\n"
)


# a loop over a DDP-wrapped model whose loss is `{forward}`, `net` the unwrapped module (the examples)
_UNWRAPPED = (
    "import torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "def unwrap(m):\n"
    "    return m.module if isinstance(m, DDP) else m\n"
    "def train(model, opt, loader, world_size):\n"
    "    if world_size > 1:\n"
    "        dist.init_process_group('gloo', init_method='file:///tmp/pg', rank=0, world_size=world_size)\n"
    "        model = DDP(model)\n"
    "    for g in loader:\n"
    "        net = unwrap(model)\n"
    "        loss = {forward}.pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)


def is_ddp(event: Event) -> bool:
    return event.kind == "call" and event.func.removesuffix("()") in DDP


def is_pg_init(event: Event) -> bool:
    if event.kind == "call":
        func = event.func.removesuffix("()")
        if func in PG_INIT or event.method == "init_process_group":
            return True
        if func in LIGHTNING_TRAINERS and "strategy" in event.kwargs:
            return True
    return ("environ" in event.text or "getenv" in event.text) and bool(
        TORCHRUN_ENV.search(event.text))


def forms_a_world(event: Event) -> bool:
    """A set-up that can make a process group in a plain ``python train.py``: it names the world
    size, the rendezvous (``init_method``) or a store. One given only a backend reads the world
    from a launcher's environment (``env://``) and fails without one: a wrap after it is a
    program meant to run under a launcher, however many processes that starts."""
    if event.kind != "call" or not (event.func.removesuffix("()") in PG_INIT
                                    or event.method == "init_process_group"):
        return False
    positional = [a for a in event.args if not a.startswith("*")]
    return bool({"world_size", "init_method", "store"} & set(event.kwargs)) or len(positional) > 1 \
        or any(a.startswith("*") for a in [*event.args, *event.kwargs])


def classify_guard(branch: Optional[str]) -> str:
    """``none`` | ``always`` (a condition that always holds) | ``dist`` | ``other``."""
    if branch is None or "__name__" in branch:  # the script's main guard is no guard
        return "none"
    if ALWAYS_TRUE.search(branch):
        return "always"
    return "dist" if DIST_GUARD.search(branch) else "other"


class DDPMisuse(Rule):
    code = "GM302"
    name = "ddp-misuse"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "DistributedDataParallel without a process group or wrapping a single-process run"
    prefilter = ("DistributedDataParallel", "DDP")
    doc = """
## What it does
Finds `DistributedDataParallel(...)` (any import spelling: `torch.nn.parallel.
DistributedDataParallel`, `nn.parallel.DistributedDataParallel`, a `DDP` alias):

- when nothing initialises a process group before it on the way there (`init_process_group`,
  in the same function, in a function called earlier, or in a caller before the call; torchrun
  environment handling (`LOCAL_RANK` / `WORLD_SIZE`); Accelerate / Lightning strategies);
- when the wrap is unconditional, or guarded by a condition that always holds
  (`device_count() >= 0`, `world_size >= 1`): a plain `python train.py` then trains a model
  wrapped in a world of size 1;
- a DDP-wrapped model whose `.module` is called directly in the training forward, or through a
  name an unwrap helper returned (`net = unwrap(model)`, `return m.module if ddp else m`);
- a launch flag whose every binding holds in any run (`self.distributed = dist.is_available()`),
  reported at that binding;
- `with model.no_sync():` entered under a launch test alone, with no test of the accumulation
  window: every backward skips the all-reduce, the last micro-step's too.

It stays silent when the wrap is guarded by the world size, the rank, a `--distributed` flag or
a multi-GPU count, and a process group is initialised on that path; and when every set-up on
the way is given only a backend (`init_process_group("nccl")`): that reads the world from a
launcher's environment and fails in a plain run, so the program is meant to run under a
launcher and its wrap is no leftover. The probe settles the
rest: it records the world size every wrap actually ran in.

## Why is this bad?
A single-process run wrapped in DDP (often after `init_process_group(world_size=1)` to make
the constructor work) is not what the reference script trains: DDP broadcasts parameters and
buffers from rank 0 at construction, synchronises BatchNorm buffers at every forward, buckets
and all-reduces gradients, and renames every key with a `module.` prefix, so checkpoints no
longer load strictly into the bare GraphMAE (which is how `strict=False` creeps in, GM601).
Calling `model.module(...)` in the training forward skips the gradient hooks: in a real
multi-process run every rank then trains its own GraphMAE and the replicas silently diverge,
which shows up as reconstructions that depend on the rank that saved the checkpoint.

## Example
```python
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo", rank=0, world_size=1)
model = DistributedDataParallel(model)
```

## Use instead
```python
import os

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    dist.init_process_group("nccl")
    model = DistributedDataParallel(model, device_ids=[local_rank])
```

## Fix safety
No automatic fix: whether the run is meant to be distributed is the author's decision.

## References
- https://pytorch.org/docs/stable/notes/ddp.html
- https://pytorch.org/docs/stable/elastic/run.html (torchrun environment variables)
"""

    VALID = [
        # the forward through the wrapper; the unwrapped module only read for its attributes
        Valid(_UNWRAPPED.format(forward='(model(g) * net.scale)')),
        # `no_sync()` on the micro-steps before the last of each accumulation window
        Valid(_NO_SYNC.format(test='self.ddp and not self.sync')),
        # the same runner with the flag set from the world size
        Valid(_RUNNER.format(flag='world_size > 1')),
        # a test method run by the harness, in a project that sets up process groups elsewhere
        Valid({
            "harness.py": (
                "import torch.distributed as dist\n"
                "def run_worker(rank, world_size, fn):\n"
                "    dist.init_process_group('gloo', rank=rank, world_size=world_size)\n"
                "    fn()\n"
            ),
            "test_ddp.py": (
                "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "class TestDDP:\n"
                "    def test_step(self):\n"
                "        model = DDP(torch.nn.Linear(2, 2))\n"
                "        model(torch.randn(3, 2)).sum().backward()\n"
            ),
            # a helper that only tests call
            "tests/common.py": (
                "import torch\n"
                "def wrapped():\n"
                "    return torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))\n"
            ),
            "tests/test_more.py": (
                "from common import wrapped\n"
                "def test_wrapped():\n"
                "    wrapped()(1).sum().backward()\n"
            ),
        }),
        Valid(
            "import os\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "world_size = int(os.environ.get('WORLD_SIZE', '1'))\n"
            "if world_size > 1:\n"
            "    dist.init_process_group('nccl')\n"
            "    model = DDP(model, device_ids=[int(os.environ['LOCAL_RANK'])])\n"
        ),
        Valid({
            "dist_utils.py":
                "import os\nimport torch.distributed as dist\n"
                "def setup(args):\n"
                "    args.rank = int(os.environ['RANK'])\n"
                "    dist.init_process_group('nccl', rank=args.rank)\n",
            "train.py":
                "from torch import nn\nfrom dist_utils import setup\n"
                "def main(args, model):\n"
                "    if args.distributed:\n"
                "        setup(args)\n"
                "    if args.distributed:\n"
                "        model = nn.parallel.DistributedDataParallel(model)\n"
                "    return model\n",
        }),
        # `.module` only to save the bare weights, and to evaluate without gradients
        Valid(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "def fit(model, args, loader):\n"
            "    if args.world_size > 1:\n"
            "        dist.init_process_group('gloo')\n"
            "        model = DDP(model)\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        loss.backward()\n"
            "    with torch.no_grad():\n"
            "        model.module(g)\n"
            "    torch.save(model.module.state_dict(), 'm.pt')\n"
        ),
        # a program meant for a launcher: the group takes its world from torchrun's
        # environment (a plain run fails at the set-up), so wrapping every run is its design
        Valid({
            "launch.py":
                "import torch.distributed as dist\n"
                "def start(cfg):\n"
                "    dist.init_process_group(backend=cfg.backend)\n",
            "fit.py":
                "from torch.nn.parallel import DistributedDataParallel\nfrom launch import start\n"
                "def fit(cfg, net, device):\n"
                "    start(cfg)\n"
                "    net = DistributedDataParallel(net, device_ids=[device])\n"
                "    return net\n",
        }),
        # the name DDP for something else entirely
        Valid("def DDP(x):\n    return x\nmodel = DDP(model)\n"),
        # the wrap under a flag named for distributed training (`use_distributed`), the process
        # group set up elsewhere under the same setting
        Valid(
            "import torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "def setup(cfg):\n"
            "    if cfg.use_distributed:\n"
            "        dist.init_process_group('nccl', rank=cfg.rank, world_size=cfg.world_size)\n"
            "class Flow:\n"
            "    def __init__(self, args, model):\n"
            "        self.use_distributed = args.use_distributed\n"
            "        if self.use_distributed:\n"
            "            model = DDP(model)\n"
            "        self.model = model\n"
            "def main(args, model):\n"
            "    setup(args)\n"
            "    return Flow(args, model)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(model)\n",
            line=2, column=9, message_contains="process group",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.distributed as dist\n"
            "dist.init_process_group('gloo', rank=0, world_size=1)\n"
            "if torch.cuda.device_count() >= 0:\n"
            "    model = nn.parallel.DistributedDataParallel(model)\n",
            line=6, message_contains="always",
        ),
        # a helper wraps unconditionally; the script initialises a world of size 1 for it
        Invalid({
            "parallel.py":
                "import torch\n\n"
                "def wrap(model):\n"
                "    return torch.nn.parallel.DistributedDataParallel(model)\n",
            "train.py":
                "import torch.distributed as dist\nfrom parallel import wrap\n"
                "def main(model):\n"
                "    dist.init_process_group('gloo', init_method='tcp://127.0.0.1:29500',"
                " rank=0, world_size=1)\n"
                "    model = wrap(model)\n"
                "    return model\n",
        }, line=4, path="parallel.py", message_contains="unconditional"),
        # `.module` called in the training forward, bypassing the wrapper
        Invalid(
            "import os\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "if int(os.environ.get('WORLD_SIZE', 1)) > 1:\n"
            "    dist.init_process_group('nccl')\n"
            "    model = DDP(model)\n"
            "for g in loader:\n"
            "    loss = model.module(g)\n"
            "    loss.backward()\n",
            line=8, message_contains=".module",
        ),
        # guarded, but nothing ever creates the process group
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel\n"
            "def build(model, args):\n"
            "    if args.distributed:\n"
            "        model = DistributedDataParallel(model)\n"
            "    return model\n",
            line=4, message_contains="process group",
        ),
        # the launch flag set from `dist.is_available()`, which every torch build answers True
        Invalid(
            _RUNNER.format(flag='dist.is_available()'),
            line=5, message_contains="holds in every run",
        ),
        # `no_sync()` on every micro-step of a DDP run: the gradients are never all-reduced
        Invalid(
            _NO_SYNC.format(test='self.ddp'),
            line=10, message_contains="on every micro-step",
        ),
        # the training forward through the module an unwrap helper took out of the wrapper
        Invalid(
            _UNWRAPPED.format(forward='net(g)'),
            line=11, message_contains="unwrapped from the DistributedDataParallel `model`",
        ),
    ]

    # -- static ------------------------------------------------------------------------------------
    @classmethod
    def _inits_before(cls, project: Project, fn: FunctionInfo, index: int, up: int = 0) -> list[Event]:
        """The process-group set-ups before event ``index`` of ``fn``: earlier in ``fn``, in a
        function an earlier call runs, or (walking up) before a call site of ``fn``."""
        found: list[Event] = []
        for event in fn.events[:index]:
            if is_pg_init(event):
                found.append(event)
            elif event.kind == "call":
                for callee in project.resolve_call(event, fn):
                    for qual in project.reachable_from(callee):
                        sub = project.function(qual)
                        found += [e for e in sub.events if is_pg_init(e)] if sub is not None else []
        if up < MAX_UP:
            for caller, i in call_sites_of(project, fn):
                found += cls._inits_before(project, caller, i, up + 1)
        return found

    @staticmethod
    def _meant_for_a_launcher(wrap: Event, inits: list[Event]) -> bool:
        """Every set-up on the way reads its world from a launcher (:func:`forms_a_world`), and
        none lies on the other side of a test from the wrap (`if not args.standalone:` set-up,
        `if args.standalone:` wrap: the wrap runs exactly where no group exists)."""
        return not any(forms_a_world(e) or excludes(wrap, e) for e in inits)

    @staticmethod
    def _inits_in(project: Project, fn: FunctionInfo, index: int) -> list[Event]:
        """The guarded process-group set-ups before event ``index`` of ``fn``: its own, or the
        calls before it that lead to one (the call's tests are the set-up's)."""
        found: list[Event] = []
        for event in fn.events[:index]:
            if is_pg_init(event):
                found.append(event)
            elif event.kind == "call" and any(
                    is_pg_init(e) for callee in project.resolve_call(event, fn)
                    for sub in [project.function(callee)] if sub is not None for e in sub.events):
                found.append(event)
        return [e for e in found if conditions_of(e)]

    @staticmethod
    def _in_test_code(project: Project, fn: FunctionInfo) -> bool:
        """``fn`` is test code, or only test code calls it (a `test_*` function, a method of a
        `Test*` class, a file under tests/ or named test_*.py / *_test.py)."""
        callers = [project.functions[q] for q in project.ancestors(fn.qualname)
                   if q in project.functions]
        return is_test_code(fn) or (bool(callers) and all(is_test_code(c) for c in callers))

    @staticmethod
    def _project_inits(project: Project) -> bool:
        """Some code of the project sets up a process group (files the prefilter skipped too)."""
        project.load_mentioning("init_process_group")
        return any(is_pg_init(e) for _, e in project.events("call"))

    @classmethod
    def _guard(cls, project: Project, fn: FunctionInfo, event: Event,
               up: int = 0) -> tuple[str, str]:
        """The weakest guard on the way to ``event`` (none/always/other beat dist), and its text."""
        guard = innermost(event)
        kind = classify_guard(guard)
        if kind == "other" and cls._tests_launch(project, fn, guard or ""):
            kind = "dist"
        if kind != "none" or up >= MAX_UP:
            return kind, guard or ""
        sites = call_sites_of(project, fn)
        if not sites:
            return "none", ""
        found = [cls._guard(project, caller, caller.events[i], up + 1) for caller, i in sites]
        for weakest in ("none", "always", "other"):
            hit = next((g for g in found if g[0] == weakest), None)
            if hit is not None:
                return hit
        return found[0]

    @staticmethod
    def _flag_always(project: Project, fn: FunctionInfo, guard: str) -> Optional[tuple[FunctionInfo, Event]]:
        """A guard that is a flag (``self.distributed``, ``use_ddp``) named for a launch, every
        binding of which holds in any run (``= dist.is_available()``): (function, binding)."""
        if not re.fullmatch(r"[\w.]+", guard):
            return None
        scopes = [fn]
        if guard.startswith("self.") and fn.class_name:
            scopes = [f for q in project.members(fn.class_name) if (f := project.functions.get(q))]
        bound = [(f, e) for f in scopes for e in f.assigned(guard)]
        values = [e.text.split("=", 1)[-1] for _, e in bound]
        return bound[0] if bound and all(classify_guard(v) == "always" for v in values) else None

    @staticmethod
    def _tests_launch(project: Project, fn: FunctionInfo, guard: str) -> bool:
        """The guard calls a project predicate whose returned value tests for a multi-process
        launch (``if is_distributed():`` with ``return dist.is_initialized()``)."""
        called = set(re.findall(r"([\w.]+)\s*\(", guard))
        for e in fn.events:
            if e.kind != "call" or not ({e.func, e.func.rsplit(".", 1)[-1]} & called):
                continue
            for qual in project.resolve_call(e, fn):
                callee = project.function(qual)
                if callee is not None and any(
                        r.kind == "return" and classify_guard(r.text) == "dist"
                        for r in callee.events):
                    return True
        return False

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        # one scan of the project's calls, on the first wrap that needs it
        project_inits = functools.cache(lambda: cls._project_inits(project))
        for fn in list(project.functions.values()):
            for i, event in enumerate(fn.events):
                if not is_ddp(event):
                    continue
                yield from cls._check_wrap(project, fn, i, event, project_inits)
                yield from cls._check_module_calls(project, fn, event)
        yield from cls._check_no_sync(project)
        yield from cls._check_unwrapped_forwards(project)

    @classmethod
    def _check_unwrapped_forwards(cls, project: Project) -> Iterable[Finding]:
        """A forward on a loss's path through a name a helper unwrapped from the DDP wrapper
        (``net = unwrap(self.model)`` returning ``model.module if ... else model``; ``net(g)``):
        the wrapper's forward, which arms the gradient all-reduce, never runs."""
        if not any(is_ddp(e) for _, e in project.events("call")):
            return  # nothing is wrapped: an unwrap helper hands back the model itself
        training = Training.of(project)
        reported: set[tuple[str, int]] = set()
        for site in training.backward_sites():
            for fn, k in training.loss_slice(*site):
                call = fn.events[k]
                if call.kind != "call" or not re.fullmatch(r"\w+", call.func) or under_no_grad(call) \
                        or (fn.path, call.span.line) in reported:
                    continue
                wrapper = cls._unwrapped_from(project, fn, call.func, k)
                if wrapper:
                    reported.add((fn.path, call.span.line))
                    yield cls.make_finding(
                        fn.path, call.span,
                        f"`{call.func}(...)` runs the module unwrapped from the DistributedDataParallel "
                        f"`{wrapper}` in the training forward: DDP's gradient synchronisation never "
                        "runs and the replicas drift apart",
                        fix=f"call the wrapper (`{wrapper}(...)`) in training",
                    )

    @staticmethod
    def _unwrapped_from(project: Project, fn: FunctionInfo, name: str, k: int) -> str:
        """The wrapper ``name`` was unwrapped from at event ``k`` of ``fn`` (``name =
        helper(wrapper)`` where the helper returns its parameter's ``.module``), or ""."""
        binding = next((e for e in reversed(fn.assigned(name)) if e.span.line < fn.events[k].span.line), None)
        j = fn.position(binding) if binding is not None else -1
        call = fn.events[j + 1] if 0 <= j < len(fn.events) - 1 and fn.events[j + 1].kind == "call" else None
        if call is None or not call.span.within(binding.span):
            return ""
        for qual in project.resolve_call(call, fn):
            callee = project.function(qual)
            for param, arg in bindings(call, callee) if callee is not None else ():
                unwraps = any(r.kind == "return" and f"{param}.module" in r.value_names for r in callee.events)
                if unwraps and re.fullmatch(r"[\w.]+", arg):
                    return arg
        return ""

    @classmethod
    def _check_no_sync(cls, project: Project) -> Iterable[Finding]:
        """``with model.no_sync():`` entered under a launch test alone (``if self.distributed:``),
        with no test of the accumulation window: every backward under it skips the gradient
        all-reduce, the last micro-step's too, and the replicas train apart."""
        for fn, event in project.events("call"):
            tests = tests_of(event)
            if event.method != "no_sync" or not tests or any(periodic_test(project, t) for t in tests):
                continue
            if all(classify_guard(t) == "dist" or cls._tests_launch(project, fn, t) for t in tests):
                yield cls.make_finding(
                    fn.path, event.span,
                    f"`{event.func.removesuffix('()')}()` "
                    f"is entered whenever `{tests[-1]}` holds, on every micro-step: no backward "
                    "all-reduces its gradients, so each process trains on its own",
                    fix="skip the gradient sync only on the micro-steps before the last of each "
                    "accumulation window (`if ddp and not sync_now: with model.no_sync(): ...`)",
                )

    @classmethod
    def _check_wrap(cls, project: Project, fn: FunctionInfo, i: int, event: Event,
                    project_inits: Callable[[], bool]) -> Iterable[Finding]:
        inits = cls._inits_before(project, fn, i)
        initialised = bool(inits)
        if (not call_sites_of(project, fn) or cls._in_test_code(project, fn)) \
                and fn.name != MODULE_SCOPE and project_inits():
            # a test runner, `mp.spawn` or a launcher runs this (nothing in the project calls
            # it, or only tests do) while the project does set up process groups: what runs
            # before the wrap is outside the static view, and the probe decides it at run time
            return
        truths = [constant_truth(project, fn.module, c) for c in event.conditions]
        if False in truths:
            return  # under a constant flag that is off: the wrap never runs
        guard, text = cls._guard(project, fn, event)
        if guard == "other" and any(implies(event, init) for init in cls._inits_in(project, fn, i)):
            # the same test guards the process group: the wrap runs exactly when it exists
            guard = "dist"
        fix = ("initialise the process group and wrap only in a multi-process launch: "
               "`if world_size > 1: dist.init_process_group(...); model = DDP(model, ...)`")
        flag = cls._flag_always(project, fn, text) if guard == "dist" and initialised else None
        if flag is not None and not cls._meant_for_a_launcher(event, inits):
            owner, bound = flag
            yield cls.make_finding(
                owner.path, bound.span,
                f"`{bound.text.strip()}` holds in every run, and `{text}` guards the "
                f"`DistributedDataParallel(...)` at {fn.path}:{event.span.line}: a single-process run "
                "trains a model wrapped in a world of size 1 (parameter broadcast, buffer sync, "
                "`module.` keys)",
                fix="set the flag from the launch: `world_size > 1` (or `dist.is_initialized()` "
                "after a launcher's set-up)",
            )
            return
        if not initialised:
            yield cls.make_finding(
                fn.path, event.span,
                "`DistributedDataParallel(...)` with no process group initialised before it "
                "(no `init_process_group`, torchrun environment handling or launcher strategy "
                "on the way here): it fails, or someone makes it construct with a world of size 1",
                fix=fix,
            )
        elif guard in ("none", "always", "other") and not cls._meant_for_a_launcher(event, inits):
            why = {
                "none": "the wrap is unconditional",
                "always": f"the wrap is guarded by a condition that always holds (`{text}`)",
                "other": f"the guard `{text}` does not test for a multi-process launch",
            }[guard]
            yield cls.make_finding(
                fn.path, event.span,
                f"`DistributedDataParallel(...)`: {why}, so a single-process run trains a model "
                "wrapped in a world of size 1 (parameter broadcast, buffer sync, `module.` keys)",
                fix=fix,
            )

    @classmethod
    def _check_module_calls(cls, project: Project, fn: FunctionInfo,
                            event: Event) -> Iterable[Finding]:
        names = set(event.targets)
        if not names:
            return
        scopes = [fn]
        if any(n.startswith("self.") for n in names) and fn.class_name:
            scopes = [f for q, f in project.functions.items() if q.startswith(fn.class_name + ".")]
        for scope in scopes:
            for e in scope.events:
                func = e.func.removesuffix("()")
                if e.kind != "call" or under_no_grad(e) or e.span.line <= event.span.line \
                        and scope is fn:
                    continue
                if any(func in (f"{n}.module", f"{n}.module.forward") for n in names):
                    yield cls.make_finding(
                        scope.path, e.span,
                        f"`{func}(...)` calls the module inside DistributedDataParallel directly "
                        "in the training forward: DDP's gradient synchronisation never runs and "
                        "the replicas drift apart",
                        fix=f"call the wrapper (`{func.rsplit('.module', 1)[0]}(...)`) in training",
                    )

    # -- runtime -----------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence) -> Optional[Verdict]:
        if ".module" in finding.message:
            return None
        facts = [d for d in evidence.ddp if d.path == finding.path
                 and finding.line <= d.line <= finding.end_line]
        if not facts:
            if not evidence.ran(finding.path, finding.line, finding.end_line):
                return Verdict(Status.UNEXERCISED, ["the DistributedDataParallel line never ran"])
            return None
        single = [d for d in facts if d.single_process]
        if single:
            d = single[0]
            return Verdict(Status.CONFIRMED, [
                f"DistributedDataParallel wrapped {d.module or 'the model'} with "
                + ("no process group initialised" if not d.pg_initialized
                   else f"a process group of world size {d.world_size} ({d.backend or 'backend ?'})")])
        return Verdict(Status.REFUTED, [
            f"every wrap ran in a process group of world size {max(d.world_size for d in facts)}"])
