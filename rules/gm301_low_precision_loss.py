"""GM301 autocast-low-precision: fp16 autocast without a GradScaler; a loss computed in fp16/bf16."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Iterator, Optional

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static import dataflow as df
from auditor.static.config_truth import never_runs, set_in_file, switched_on
from auditor.static.config_values import LITERAL, Source, Value, low_values, values_of
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.frameworks import TRAINERS
from auditor.static.project import Project

# an accelerator-like wrapper whose method makes the autocast the training step enters, switched by
# a setting of the YAML file the script loads (the examples)
_RUNNER = (
    "import torch\n"
    "class Runner:\n"
    "    def __init__(self, precision='no'):\n"
    "        self.precision = precision\n"
    "    def autocast(self):\n"
    "        return torch.autocast('cpu', dtype=torch.bfloat16, enabled=self.precision {test})\n"
)
_RUNNER_STEP = (
    "import yaml\n"
    "from runner import Runner\n"
    "def fit(model, loader, opt):\n"
    "    with open('cfg.yaml') as f:\n"
    "        cfg = yaml.safe_load(f)\n"
    "    runner = Runner(cfg['precision'])\n"
    "    for g, x in loader:\n"
    "        with runner.autocast():\n"
    "            loss = (model(g, x) - x).pow(2).mean()\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)

_SCOPE = (
    "import contextlib\n"
    "import torch\n"
    "\n"
    "def autocast_ctx(precision):\n"
    "    if precision == 'bf16':\n"
    "        return torch.autocast('cpu', dtype=torch.bfloat16)\n"
    "    return contextlib.nullcontext()\n"
    "\n"
    "@contextlib.contextmanager\n"
    "def step_scope(precision):\n"
    "    with contextlib.ExitStack() as stack:\n"
    "        stack.enter_context(autocast_ctx(precision))\n"
    "        yield stack\n"
)
_SCOPE_STEP = (
    "import yaml\n"
    "from ctx import step_scope\n"
    "\n"
    "def step(model, opt, g, x):\n"
    "    loss = (model(g, x) - x).pow(2).mean()\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    return loss\n"
    "\n"
    "def fit(model, loader, opt):\n"
    "    with open('cfg.yaml') as f:\n"
    "        cfg = yaml.safe_load(f)\n"
    "    for g, x in loader:\n"
    "        with step_scope(cfg['precision']):\n"
    "            loss = step(model, opt, g, x)\n"
)

AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast",
            "torch.cpu.amp.autocast", "torch.amp.autocast_mode.autocast"}
LOW = re.compile(r"\b(?:torch\.)?(float16|half|bfloat16|bf16|fp16)\b")
UPCAST = re.compile(r"\.float\(\)|\.double\(\)|torch\.float(32|64)\b|torch\.double\b|'float32'|\"float32\"")


def _upcast(fn: FunctionInfo, stmt: df.Statement, hit: set[str]) -> bool:
    """The statement casts the flowing value itself back to float32/64 (``pred.float()``,
    ``pred.to(torch.float32)``); ``(mask != 0).float()`` beside it casts something else."""
    for call in stmt.calls:
        cast = call.method in ("float", "double") or (
            call.method in ("to", "type") and any(UPCAST.search(a) for a in
                                                   [*call.args, *call.kwargs.values()]))
        if cast and any(df.mentions(call.receiver, n) for n in hit):
            return True
    return False


# Lightning's precision settings that train in half precision throughout (no float32 weights)
TRUE_HALF = {"bf16-true": "bfloat16", "16-true": "float16"}


def _precision(text: str) -> str:
    m = LOW.search(text)
    if m is None:
        return ""
    return "bfloat16" if m.group(1) in ("bfloat16", "bf16") else "float16"


# a Lightning fit whose Trainer's precision is written in (the examples)
_LIGHTNING_FIT = (
    "import pytorch_lightning as pl\nimport yaml\n"
    "def main(module, data):\n"
    "    with open('cfg.yaml') as fh:\n"
    "        cfg = yaml.safe_load(fh)\n"
    "    trainer = pl.Trainer(max_steps=10, precision={precision})\n"
    "    trainer.fit(module, data)\n"
)


class LowPrecisionLoss(Rule):
    code = "GM301"
    name = "autocast-low-precision"
    severity = Severity.ERROR
    summary = "float16 autocast without a GradScaler, or the loss computed in float16/bfloat16"
    prefilter = ("autocast", ".half()", "bfloat16", "float16", "torch.half", "precision=")
    runs_beside = True  # beside GM101: its configured casts follow the callers GM101's data flow indexes
    doc = """
## What it does
Finds low-precision training done wrong:
- **error**: float16 training without loss scaling: a float16 autocast region (explicit
  `dtype=torch.float16`, or the CUDA default of `torch.autocast("cuda")` /
  `torch.cuda.amp.autocast()`), or a model cast with `.half()` / `.to(torch.float16)`, whose
  outputs reach a backward that is not scaled by a `GradScaler` (`scaler.scale(loss).backward()`);
- **warning**: the reconstruction loss computed in low precision: inside a float16/bfloat16
  autocast region, or from a model or tensors cast to bfloat16 (or to float16 with a scaler)
  with no `.float()` before the loss. The loss, and for a cast model the parameters and the
  optimizer updates, keep 8 (bfloat16) or 11 (float16) bits of mantissa. A warning because the
  damage depends on the scale of the errors and the learning rate (on the fixtures, a bfloat16
  model trained as well as the float32 one); the probe reports the dtype the loss really had.

It stays silent for bfloat16 autocast around the forward only with the loss computed outside,
for float16 autocast with a GradScaler and the loss outside, and for values upcast with
`.float()` before the loss.

## Why is this bad?
GraphMAE's reconstruction error on normalised coordinates is small and shrinks during training.
In float16, gradients of that size underflow to zero without loss scaling, so the reconstruction
stops improving early; a loss computed in bfloat16 keeps only 8 bits of mantissa, so small
errors round to the same value and the gradient becomes noise; bfloat16 parameters lose every
Adam update smaller than their 8-bit resolution. The loss curve still goes down, coarsely.

## Example
```python
with torch.autocast("cuda"):
    recon = model(g, x)
    loss = F.mse_loss(recon[mask], x[mask])
loss.backward()
```

## Use instead
```python
scaler = torch.cuda.amp.GradScaler()
with torch.autocast("cuda", dtype=torch.bfloat16):
    recon = model(g, x)
loss = F.mse_loss(recon[mask].float(), x[mask])
scaler.scale(loss).backward()   # required for float16; harmless for bfloat16
```

## Fix safety
No automatic fix (the finding's fix line says what to change): moving the loss out of the
region or adding a scaler changes numerics and memory use, which a person has to weigh.

## References
- https://pytorch.org/docs/stable/amp.html
- https://pytorch.org/docs/stable/notes/amp_examples.html
"""

    VALID = [
        # the wrapper's autocast, off on the run the configuration file gives
        Valid({"runner.py": _RUNNER.format(test="== 'bf16'"), "train.py": _RUNNER_STEP,
               "cfg.yaml": "precision: fp32\n"}),
        # Lightning's mixed precision: autocast around float32 weights
        Valid({"train.py": _LIGHTNING_FIT.format(precision="cfg['precision']"),
               "cfg.yaml": "max_steps: 10\nprecision: bf16-mixed\n"}),
        # bf16 around the forward only; the loss in float32 outside
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def step(model, g, x, mask, opt):\n"
            "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask].float(), x[mask])\n"
            "    loss.backward()\n"
        ),
        # fp16 forward with a GradScaler, loss outside
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "scaler = torch.cuda.amp.GradScaler()\n"
            "def step(model, g, x, opt):\n"
            "    with torch.cuda.amp.autocast():\n"
            "        recon = model(g, x)\n"
            "    loss = F.mse_loss(recon.float(), x)\n"
            "    scaler.scale(loss).backward()\n"
            "    scaler.step(opt)\n"
            "    scaler.update()\n"
        ),
        # the standard AMP recipe: a torch loss module inside the region runs in float32 anyway
        Valid(
            "import torch\nimport torch.nn as nn\n"
            "def train(model, loader, opt):\n"
            "    scaler = torch.cuda.amp.GradScaler()\n"
            "    loss_fn = nn.CrossEntropyLoss()\n"
            "    for x, y in loader:\n"
            "        with torch.cuda.amp.autocast():\n"
            "            loss = loss_fn(model(x), y)\n"
            "        scaler.scale(loss).backward()\n"
            "        scaler.step(opt)\n"
            "        scaler.update()\n"
        ),
        # disabled autocast, and a cast for inference only
        Valid(
            "import torch\n"
            "def export(model, g, x):\n"
            "    model = model.half()\n"
            "    with torch.no_grad():\n"
            "        return model(g, x.half())\n"
            "def step(model, g, x):\n"
            "    with torch.autocast('cuda', enabled=False):\n"
            "        loss = model(g, x)\n"
            "    loss.backward()\n"
        ),
        # the scaled fp16 arm and the plain float32 arm of one if/else never mix
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def fit(model, loader, opt, scaler):\n"
            "    for g, x in loader:\n"
            "        if scaler is not None:\n"
            "            with torch.autocast('cuda', dtype=torch.float16):\n"
            "                out = model(g, x)\n"
            "            loss = F.mse_loss(out.float(), x)\n"
            "            scaler.scale(loss).backward()\n"
            "        else:\n"
            "            out = model(g, x)\n"
            "            loss = F.mse_loss(out, x)\n"
            "            loss.backward()\n"
        ),
    ]
    INVALID = [
        # a LightningModule casts itself before its optimizer is built; Lightning trains it
        Invalid(
            "import torch\nimport pytorch_lightning as pl\nimport torch.nn.functional as F\n"
            "class Lit(pl.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = torch.nn.Linear(4, 4)\n"
            "    def training_step(self, batch, i):\n"
            "        return F.mse_loss(self.lin(batch), batch)\n"
            "    def configure_optimizers(self):\n"
            "        self.half()\n"
            "        return torch.optim.Adam(self.parameters())\n",
            line=11, message_contains="cast to float16",
        ),
        # a hand-written loss inside the region is computed in bfloat16
        Invalid(
            "import torch\n"
            "def train(model, loader, opt):\n"
            "    for x in loader:\n"
            "        with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "            loss = (model(x) - x).abs().mean()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=4, message_contains="computed inside",
        ),
        # CUDA autocast defaults to float16; no scaler
        Invalid(
            "import torch\nimport torch.nn.functional as F\n"
            "def step(model, g, x, opt):\n"
            "    with torch.autocast('cuda'):\n"
            "        recon = model(g, x)\n"
            "    loss = F.mse_loss(recon.float(), x)\n"
            "    loss.backward()\n",
            line=4, message_contains="GradScaler",
        ),
        # bf16 region computing the loss itself (the model returns its loss): a warning
        Invalid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self, model, opt):\n"
            "        self.model, self.opt = model, opt\n"
            "    def step(self, g, x):\n"
            "        with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n"
            "            loss = self.model(g, x)\n"
            "        loss.backward()\n",
            line=6, message_contains="computed",
        ),
        # a model cast to float16 with no scaler: an error
        Invalid(
            "import torch.nn.functional as F\n"
            "def fit(model, loader, opt):\n"
            "    model.half()\n"
            "    for g, x in loader:\n"
            "        loss = F.mse_loss(model(g, x.half()), x.half())\n"
            "        loss.backward()\n",
            line=3, message_contains="underflow",
        ),
        # the model cast to bfloat16 in a builder in another module (a warning)
        Invalid({
            "build.py": (
                "import torch\n"
                "def build_model(cls, cfg):\n"
                "    model = cls(**cfg)\n"
                "    return model.to(dtype=torch.bfloat16)\n"
            ),
            "train.py": (
                "import torch.nn.functional as F\n"
                "from build import build_model\n"
                "from net import Net\n"
                "def main(loader, cfg):\n"
                "    model = build_model(Net, cfg)\n"
                "    for g, x in loader:\n"
                "        loss = F.mse_loss(model(g, x), x)\n"
                "        loss.backward()\n"
            ),
            "net.py": "import torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, g, x):\n        return x\n",
        }, line=4, path="build.py", message_contains="train.py:8"),
        # fp16 autocast in one arm of an if/else; the other arm's own forward does not hide it
        Invalid(
            "import torch\n"
            "def fit(model, loader, opt, fast):\n"
            "    for g, x in loader:\n"
            "        if fast:\n"
            "            with torch.autocast('cuda', dtype=torch.float16):\n"
            "                loss = model(g, x)\n"
            "        else:\n"
            "            loss = model(g, x)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=5, message_contains="GradScaler",
        ),
        # the mask is cast to float in the loss's statement, the float16 prediction is not
        Invalid(
            "import torch.nn as nn\n"
            "def fit(model, loader, opt):\n"
            "    crit = nn.BCEWithLogitsLoss(reduction='none')\n"
            "    model.half()\n"
            "    for g, labels, masks in loader:\n"
            "        logits = model(g)\n"
            "        loss = (crit(logits, labels) * (masks != 0).float()).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=4,
        ),
        # Lightning told to train in bfloat16 throughout, literally and from the YAML it loads
        Invalid(_LIGHTNING_FIT.format(precision="'bf16-true'"), line=6, message_contains="no float32 copy"),
        Invalid({"train.py": _LIGHTNING_FIT.format(precision="cfg['precision']"),
                 "cfg.yaml": "max_steps: 10\nprecision: bf16-true\n"},
                path="cfg.yaml", line=2, message_contains="train.py:6"),
        # an autocast an accelerator-like wrapper returns, entered by the training step: on
        # every run the code's own test switches it on (any setting but "fp32")
        Invalid({"runner.py": _RUNNER.format(test="!= 'fp32'"), "train.py": _RUNNER_STEP,
                 "cfg.yaml": "precision: 'no'\n"}, path="runner.py", line=6, message_contains="autocast region"),
        # ... and selected by the configuration file: reported at its setting
        Invalid({"runner.py": _RUNNER.format(test="== 'bf16'"), "train.py": _RUNNER_STEP,
                 "cfg.yaml": "precision: bf16\n"}, path="cfg.yaml", line=1, message_contains="runner.py:6"),
        # an autocast entered on an ExitStack by a @contextmanager, around a step that computes
        # the loss and backpropagates it, chosen by the configuration file
        Invalid({"ctx.py": _SCOPE, "train.py": _SCOPE_STEP, "cfg.yaml": "precision: bf16\n"},
                path="cfg.yaml", line=1, message_contains="ctx.py:6"),
        # the autocast entered on an ExitStack: it holds the rest of the `with` body, the loss too
        Invalid(
            "import contextlib\nimport torch\n"
            "def step(model, opt, x):\n"
            "    with contextlib.ExitStack() as stack:\n"
            "        stack.enter_context(torch.autocast('cpu', dtype=torch.bfloat16))\n"
            "        out = model(x)\n"
            "        loss = sce_loss(out, x)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "def sce_loss(x, y):\n"
            "    return (1 - torch.nn.functional.cosine_similarity(x, y)).pow(2).mean()\n",
            line=5, message_contains="inside this bfloat16 autocast region"),
    ]

    # -- project stage -----------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        findings: list[Finding] = []
        casts: list[tuple[Finding, bool, str]] = []  # (finding, of a module, backward it reaches)
        for fn in list(project.functions.values()):
            for stmt in df.statements(fn):
                # `with ExitStack() as stack: stack.enter_context(autocast(...))`: the context
                # holds the rest of the `with`
                region = stmt if stmt.kind == "with" else _entered_into(fn, stmt)
                for call in stmt.calls:
                    made = cls._autocast_made_by(project, fn, call) if region is not None else None
                    if call.func.removesuffix("()") in AUTOCAST and region is not None or made:
                        found = cls._autocast(project, fn, region, *(made or (fn, call)))
                        if found:
                            findings.append(found)
                    else:
                        literal = cls._is_cast(call)
                        configured = "" if literal else cls._configured_cast(project, fn, call)
                        cast = cls._cast(project, fn, stmt, call, configured) \
                            if literal or configured else None
                        if cast:
                            casts.append(cast)
        # one problem, one finding: a cast model's finding covers the inputs cast to match it
        model_sinks = {sink for _, module, sink in casts if module}
        findings += [f for f, module, sink in casts if module or sink not in model_sinks]
        return findings + list(cls._true_half_trainers(project))

    @classmethod
    def _true_half_trainers(cls, project: Project) -> Iterator[Finding]:
        """A Lightning ``Trainer(precision=...)`` given a "true" half precision (``"bf16-true"``):
        Lightning casts the module's parameters and inputs and keeps no float32 copy. Reported
        where the value is written: the call, or the configuration file's line."""
        for fn, call in project.events("call"):
            text = call.kwargs.get("precision", "")
            if call.func.removesuffix("()") not in TRAINERS or not text:
                continue
            for value in values_of(project, fn, text, call.span.line):
                precision = TRUE_HALF.get(str(value.value))
                if precision is None:
                    continue
                here = value.source.what == LITERAL and value.source.path == fn.path
                span = call.span if here else Span(value.source.line, 1, value.source.line, 1)
                finding = cls.make_finding(
                    fn.path if here else value.source.path, span,
                    f"Lightning's Trainer at {fn.path}:{call.span.line} is given precision "
                    f"{value.value!r}{'' if here else ' here'}: it casts the LightningModule's parameters to {precision} "
                    f"and keeps no float32 copy, so the loss is computed in {precision} and optimizer "
                    f"updates smaller than {precision}'s resolution are rounded away",
                    f"use precision=\"{'bf16' if precision == 'bfloat16' else '16'}-mixed\" (autocast "
                    "around float32 weights)")
                finding.severity = Severity.ERROR if precision == "float16" else Severity.WARNING
                yield finding
                break

    @staticmethod
    def _is_cast(call: Event) -> bool:
        if call.method in ("half", "bfloat16") and not call.args and call.receiver:
            return True
        if call.method in ("to", "type") and call.receiver:
            texts = [*call.args, call.kwargs.get("dtype", "")]
            return any(_precision(t) for t in texts if t.startswith(("torch.", "'", '"')))
        return False

    @staticmethod
    def _configured_cast(project: Project, fn: FunctionInfo, call: Event) -> str:
        """``model.to(dtype)`` with a dtype chosen by configuration (``{"bf16": torch.bfloat16,
        ...}[cfg["precision"]]``): the low precision it may take and where that was set, or ""."""
        if call.method not in ("to", "type") or not call.receiver:
            return ""
        for text in [*call.args[:1], call.kwargs.get("dtype", "")]:
            if text and not text.startswith(("torch.", "'", '"')) and not text.endswith("…"):
                low = next(low_values(values_of(project, fn, text, call.span.line)), None)
                if low is not None:
                    return f"{_precision(low.value)} (`{text}`, from {low.source.where})"
        return ""

    @classmethod
    def _autocast_made_by(cls, project: Project, fn: FunctionInfo, call: Event,
                          depth: int = 0) -> Optional[tuple[FunctionInfo, Event]]:
        """A ``with`` entering what a project function makes: an autocast it returns
        (``def autocast(self): return torch.autocast(...)``), or enters around its ``yield`` (a
        ``@contextmanager``, directly or by ``stack.enter_context(...)``), itself or through
        another such function; the function that writes the autocast, and its call."""
        if call.func.removesuffix("()") in AUTOCAST or depth > 3:
            return None
        for q in project.resolve_call(call, fn):
            maker = project.function(q)
            for stmt in df.statements(maker) if maker is not None else ():
                if stmt.kind != "return" and not (stmt.kind in ("with", "call") and _entered_around_yield(maker, stmt)):
                    continue
                for inner in stmt.calls:
                    if inner.func.removesuffix("()") in AUTOCAST:
                        return maker, inner
                    made = cls._autocast_made_by(project, maker, inner, depth + 1)
                    if made is not None:
                        return made
        return None

    @classmethod
    def _autocast(cls, project: Project, fn: FunctionInfo, with_stmt: df.Statement,
                  maker: FunctionInfo, call: Event) -> Optional[Finding]:
        """The autocast ``call`` (of ``maker``: ``fn`` itself, or the function that makes what
        ``with_stmt`` enters) over the region of ``with_stmt`` in ``fn``."""
        func = call.func.removesuffix("()")
        if call.kwargs.get("enabled") == "False" or (func == "torch.cuda.amp.autocast" and call.args[:1] == ["False"]):
            return None
        enabled = call.kwargs.get("enabled", "True")
        setting: Optional[Source] = None
        runs = "every run"
        if enabled != "True":  # a flag: off on every configured run, the region runs in float32
            flags = values_of(project, maker, enabled, call.span.line)
            if flags and not any(v.value for v in flags):
                return None
            setting = _selecting_setting(maker, enabled, flags)
        elif maker is not fn:  # made under a test (`if precision == "bf16": return autocast(...)`)
            if never_runs(project, maker, call):
                return None
            # on every run, or on those a configuration file configures
            on = switched_on(project, maker, call)
            if on is None:
                on = set_in_file(project, maker, call)
                runs = f"the runs {on[1].path} configures" if on is not None else runs
            setting = _selecting_setting(maker, on[0], [Value(True, on[1])]) if on is not None else None
        dtype = call.kwargs.get("dtype") or (call.args[1] if func in ("torch.autocast", "torch.amp.autocast")
                                              and len(call.args) > 1 else "")
        device = call.kwargs.get("device_type") or (call.args[0] if func in (
            "torch.autocast", "torch.amp.autocast") and call.args else "")
        default = ""
        if dtype:
            precision = _precision(dtype)
        elif func == "torch.cpu.amp.autocast" or device.strip("'\"") == "cpu":
            precision = "bfloat16"
        else:
            precision, default = "float16", " (the CUDA default)"
        region = [s for s in df.statements(fn)
                  if s.index > with_stmt.index and df.contains(with_stmt.head.span, s.head.span)]
        sinks: list[df.Sink] = []
        loss_at: Optional[str] = None
        for stmt in region:
            flow = df.flows_from_statement(project, fn, stmt)
            sinks += flow.sinks
            sinks += [s for c in stmt.calls if (s := df.sink_of(fn, c)) is not None]
            if loss_at is None and (flow.sinks or stmt.kind == "return"):
                loss_at = cls._loss_in(project, fn, stmt)
        if not sinks:  # the region calls a step that computes the loss and backpropagates it
            inner = cls._step_within(project, fn, [c for s in region for c in s.calls])
            if inner is None:
                return None
            sinks, loss_at = inner
        if not sinks:
            return None
        sink = sinks[0]
        unscaled = [s for s in sinks if not s.scaled]
        if precision == "float16" and unscaled:
            message = (f"float16 autocast{default} produces a loss backpropagated at {unscaled[0].where} "
                       f"without a GradScaler: small reconstruction gradients underflow to zero")
            if loss_at:
                message += f"; the loss itself is also computed in float16 ({loss_at})"
            fix = ("create `scaler = torch.cuda.amp.GradScaler()` and call `scaler.scale(loss).backward()`, "
                   "`scaler.step(optimizer)`, `scaler.update()`; or use `dtype=torch.bfloat16`")
            return _at(cls.make_finding(maker.path, call.span, message, fix), setting, runs)
        if loss_at and precision and not _float32_losses(project, fn, region):
            finding = cls.make_finding(
                maker.path, call.span,
                f"the reconstruction loss is computed inside this {precision} autocast region "
                f"({loss_at}) and backpropagated at {sink.where}: small errors are rounded away",
                "close the autocast block after the forward and compute the loss on `.float()` "
                "predictions outside it",
            )
            finding.severity = Severity.WARNING
            return _at(finding, setting, runs)
        return None

    @classmethod
    def _step_within(cls, project: Project, fn: FunctionInfo, calls: list[Event],
                     depth: int = 0) -> Optional[tuple[list[df.Sink], Optional[str]]]:
        """The backward (and the loss, when it is computed there) of a training step that a call
        of the region runs (``loss = step_fn(state, g, x)``), through a few calls."""
        if depth > 2:
            return None
        for call in calls:
            for q in project.resolve_call(call, fn):
                callee = project.function(q)
                if callee is None:
                    continue
                sinks = [s for c in callee.events if (s := df.sink_of(callee, c)) is not None]
                if sinks:
                    loss_at = next((at for stmt in df.statements(callee)
                                    if (at := cls._loss_in(project, callee, stmt))), None)
                    return sinks, loss_at
                found = cls._step_within(project, callee, [e for e in callee.events if e.kind == "call"], depth + 1)
                if found is not None:
                    return found
        return None

    @classmethod
    def _loss_in(cls, project: Project, fn: FunctionInfo, stmt: df.Statement) -> Optional[str]:
        """Where the statement computes a loss (itself, in a function it calls, or a value it
        names a loss: `loss = model(g, x)` on a model whose class is not known)."""
        for call in stmt.calls:
            if df.is_loss_call(project, fn, call):
                return f"{fn.path}:{call.span.line}"
            for target in df.call_targets(project, fn, call):
                callee = project.function(target)
                if callee is not None:
                    found = df.loss_calls(project, callee)
                    if found:
                        where, event = found[0]
                        return f"{where.path}:{event.span.line}"
        if any("loss" in t.rsplit(".", 1)[-1].lower() for t in stmt.targets):
            return f"{fn.path}:{stmt.line}"
        return None

    @classmethod
    def _cast(cls, project: Project, fn: FunctionInfo, stmt: df.Statement,
              call: Event, configured: str = "") -> Optional[tuple[Finding, bool, str]]:
        precision = _precision(configured or " ".join([*call.args, *call.kwargs.values()])) or (
            "bfloat16" if call.method == "bfloat16" else "float16")
        chosen = f" {configured.split(' ', 1)[1]}" if configured else ""  # where the dtype was chosen
        module = cls._is_module(project, fn, stmt, call)
        if stmt.kind in ("assign", "return") or not module:
            flow = df.flows_from(project, fn, call, stop=_upcast)
        else:  # `model.half()` converts the module in place
            flow = df.flows_to(project, fn, [call.receiver], stmt.index + 1, stop=_upcast)
            if not flow.sinks and call.receiver == "self" and fn.class_name:
                # a module casting itself (in a Lightning hook): its own methods backpropagate
                flow = df.Flow(sinks=[k for k in df.sinks(project) if k.fn.class_name == fn.class_name])
        if not flow.sinks:
            return None
        sink = flow.sinks[0]
        loss_at = next((cls._loss_in(project, s.fn, s.stmt) for s in flow.steps
                        if cls._loss_in(project, s.fn, s.stmt)), None)
        where = f" ({loss_at})" if loss_at else ""
        if module:
            unscaled = precision == "float16" and any(not s.scaled for s in flow.sinks)
            message = (f"the model is cast to {precision}{chosen} and trained: its loss{where} is computed and "
                       f"backpropagated at {sink.where} in {precision}, and its parameters and optimizer "
                       f"updates keep only {8 if precision == 'bfloat16' else 11} bits of mantissa"
                       + ("; float16 gradients without a GradScaler underflow to zero" if unscaled else ""))
            fix = ("keep the model in float32 and use `torch.autocast(..., dtype=torch.bfloat16)` around "
                   "the forward only, computing the loss in float32")
            finding = cls.make_finding(fn.path, call.span, message, fix)
            if not unscaled:
                finding.severity = Severity.WARNING
            return finding, True, sink.where
        finding = cls.make_finding(
            fn.path, call.span,
            f"a tensor cast to {precision}{chosen} flows into the loss{where} backpropagated at {sink.where}: "
            f"the loss is computed in {precision}",
            "upcast with `.float()` before computing the loss",
        )
        finding.severity = Severity.WARNING
        return finding, False, sink.where

    @staticmethod
    def _is_module(project: Project, fn: FunctionInfo, stmt: df.Statement, call: Event) -> bool:
        receiver = call.receiver
        if receiver == "self" and fn.class_name:
            return df.is_module_class(project, fn.class_name)
        if "(" not in receiver:
            classes = df.instance_classes(project, fn, receiver, stmt.index)
            if classes:
                return any(df.is_module_class(project, c) for c in classes)
            return receiver.rsplit(".", 1)[-1].lower() in df.MODEL_NAMES
        return any(df.is_module_class(project, c) for e in stmt.calls for c in df.constructed_class(project, e))

    # -- runtime -----------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        if not finding.in_configuration and not evidence.ran(finding.path, finding.line, finding.end_line) and not evidence.calls_at(
            finding.path, finding.line, "autocast", finding.end_line
        ):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        # a cast at this line (Module.half()/.bfloat16()/.to(dtype)): only the steps after it
        # show its effect (GraphMAE2 casts its encoder for the linear probe, after pre-training)
        casts = evidence.calls_at(finding.path, finding.line, "cast", finding.end_line)
        after = min((t for c in casts for t in c.steps), default=None)
        steps = [s for s in evidence.steps if after is None or s.index > after]
        low = [s for s in steps if any(t in (s.loss_dtype or "") for t in ("float16", "bfloat16"))]
        fp16_unscaled = [s for s in steps if s.autocast_at_forward
                         and "float16" in str(s.autocast_at_forward.get("dtype", ""))
                         and "bfloat16" not in str(s.autocast_at_forward.get("dtype", ""))
                         and not s.scaler_used]
        lines = []
        if low:
            lines.append(f"the loss was {low[0].loss_dtype} at step {low[0].index}")
        lines += evidence.low_precision_updates(steps)
        if fp16_unscaled:
            lines.append(f"float16 autocast without GradScaler.scale at step {fp16_unscaled[0].index}")
        if lines:
            return Verdict(Status.CONFIRMED, lines)
        dtypes = {str(a.get("dtype")) for c in casts for a in c.args if isinstance(a, dict)}
        failed = [r.error for r in evidence.runs if r.status == "exception" and any(
            t in r.error for t in ("Half", "BFloat16", "float16", "bfloat16"))]
        if casts and not steps and failed:
            # the cast ran and the program then failed on its low-precision tensors: the cast is
            # shown, the loss it would have given is not
            return Verdict(Status.CONFIRMED, [
                f"the model was cast to {', '.join(sorted(dtypes)) or 'low precision'} here "
                f"(after step {after}); the run then failed: {failed[0][:160]}"])
        regions = [a for c in evidence.calls_at(finding.path, finding.line, "autocast",
                                                finding.end_line) for a in c.args if isinstance(a, dict)]
        if regions and not any(a.get("enabled") for a in regions):
            # torch disabled the autocast (its device, e.g. 'cuda' on a CPU-only run, is absent):
            # full precision here says nothing of the run it was written for
            return None
        if steps:
            return Verdict(Status.REFUTED, [f"the loss was {steps[0].loss_dtype or 'float32'}"
                                            + (" and scaled" if steps[0].scaler_used else "")
                                            + (f" at the {len(steps)} step(s) after this line ran"
                                               if casts else "")])
        return None


# torch losses that autocast itself runs in float32 (its "autocast to float32" op list): inside a
# low-precision region they still compute in full precision
def _entered_around_yield(fn: FunctionInfo, stmt: df.Statement) -> bool:
    """``stmt`` of a ``@contextmanager`` generator enters a context for its caller's block: a
    ``with`` (around its ``yield``) or a context entered on an ``ExitStack``."""
    return any(d.removesuffix("()").endswith("contextmanager") for d in fn.decorators) and (
        stmt.kind == "with" or any(c.method == "enter_context" for c in stmt.calls))


def _selecting_setting(fn: FunctionInfo, enabled: str, flags: list) -> Optional[Source]:
    """The one setting written elsewhere that turns the autocast on for every run, when the flag
    is that setting itself or its equality with a literal (``enabled=cfg.precision == "bf16"``:
    the setting chose bf16); None when the code's own test decides it (``!= "fp32"`` holds for
    any other spelling, the code is what to change)."""
    if not flags or not all(v.value for v in flags) or re.search(r"!=|\bnot\b|<|>", enabled):
        return None
    sources = {(v.source.path, v.source.line) for v in flags}
    source = flags[0].source
    return source if len(sources) == 1 and source.path != fn.path and source.what != LITERAL else None


def _at(found: Finding, setting: Optional[Source], runs: str) -> Finding:
    """``found`` reported at the setting that switches the autocast on (for ``runs``), when
    there is one."""
    if setting is None:
        return found
    return dataclasses.replace(
        found, path=setting.path, line=setting.line, column=1, end_line=setting.line, end_column=1,
        message=f"this setting turns the autocast on for {runs} ({setting.what}): at "
                f"{found.path}:{found.line}, {found.message}",
        fix="set full precision here, or compute the loss outside the autocast region")


AUTOCAST_FLOAT32_LOSSES = {
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "margin_ranking_loss",
    "soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss", "poisson_nll_loss",
    "hinge_embedding_loss", "triplet_margin_loss",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss",
    "BCEWithLogitsLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "SoftMarginLoss",
    "MultiLabelMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "HingeEmbeddingLoss",
    "TripletMarginLoss"}


def _float32_losses(project: Project, fn: FunctionInfo, region: list[df.Statement]) -> bool:
    """Every loss the autocast region computes itself is a torch loss that autocast promotes to
    float32 (a functional loss, or a loss module such as `nn.CrossEntropyLoss()`)."""
    found = [c for stmt in region for c in stmt.calls if df.is_loss_call(project, fn, c)]

    def promoted(call: Event) -> bool:
        func = call.func.removesuffix("()")
        if func.startswith("torch.") and func.rsplit(".", 1)[-1] in AUTOCAST_FLOAT32_LOSSES:
            return True
        classes = df.instance_classes(project, fn, df.callee_text(call), df.statement_of(fn, call).index)
        return bool(classes) and all(c.startswith("torch.nn.") and c.rsplit(".", 1)[-1]
                                     in AUTOCAST_FLOAT32_LOSSES for c in classes)

    return bool(found) and all(promoted(c) for c in found)


def _entered_into(fn: FunctionInfo, stmt: df.Statement) -> Optional[df.Statement]:
    """The ``with`` statement whose ExitStack ``stmt`` enters a context on
    (``stack.enter_context(cm)``, on every pass through the body: the context then holds every
    statement after it, as the facts record)."""
    head = stmt.head
    if head.kind != "call" or head.method != "enter_context" or not head.args:
        return None
    stmts = df.statements(fn)
    withs = [s for s in stmts[: stmt.index] if s.kind == "with" and df.contains(s.head.span, head.span)]
    after = stmts[stmt.index + 1] if stmt.index + 1 < len(stmts) else None
    if not withs or after is None or not df.contains(withs[-1].head.span, after.head.span) \
            or len(after.head.context) <= len(head.context):
        return None  # entered under a test of its own: not on every pass
    return withs[-1]
