"""GM402 loss-weights: loss components weighted by zero or a negative number, computed but left out
of the total, or an extra term added with a weight that dominates the reconstruction loss."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.context import dotted
from auditor.static.dataflow import callers_of, constructed_class, function_of, is_loss_call
from auditor.static.config_values import LITERAL, Value, tables_of, values_of
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.paths import bindings
from auditor.static.project import Project
from auditor.static.texts import dict_entries
from auditor.static.values import Constants

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

WEIGHTS_DICT = re.compile(r"loss_?(weight|coef|scale|lambda)s?|lambdas|weights?_?loss|loss_?w$", re.I)
WEIGHT_NAME = re.compile(
    r"^(w|lambda|lam|coef|coeff|weight|alpha|beta)_\w+$|^\w+_(weight|w|lambda|lam|coef|coeff)$", re.I)
# weights of something else than a loss component: rates, sampling, and regularisers of the
# parameters (`alpha_l2norm = 0.` is "no weight penalty", not a dropped reconstruction term)
NOT_A_LOSS_WEIGHT = re.compile(
    r"decay|init|lr|drop|sample|class|pos_weight|momentum|ema|std|eps|l2|norm(?!al)|regulari",
    re.I)
PARAMETER_WALK = re.compile(r"\.(named_)?parameters\(\)")
LOSSY = re.compile(r"loss|err|sce|mse|l1|l2|penalty|reg|kl|cos", re.I)
LOG_WORDS = (".item()", "log", "print", "writer", "wandb", "append", "history", "record", "detach")
LARGE_WEIGHT = 10.0
ASSIGNED_NUMBER = re.compile(r"=\s*(-?\s*\d+(?:\.\d*)?(?:e-?\d+)?)\s*$", re.I)


# loss parts in a dict, each weighted by its name from the YAML configuration (the examples)
_PARTS_BY_NAME = (
    "import yaml\n"
    "import torch.nn.functional as F\n"
    "WEIGHTS = yaml.safe_load(open('cfg.yaml'))['weights']\n"
    "def total(pred, target):\n"
    "    parts = {{\n"
    "        '{part}': F.mse_loss(pred, target),\n"
    "        'sce': (1 - F.cosine_similarity(pred, target)).mean(),\n"
    "    }}\n"
    "    return sum(WEIGHTS.get(k, 0.0) * v for k, v in parts.items())\n"
)


# argparse options updated from the sections of a JSON file by `setattr` (a clean run: the
# file names the parts as the step does)
_BULK_OPTIONS = (
    "import argparse\n"
    "import json\n"
    "import torch.nn.functional as F\n"
    "def options():\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--weights', type=json.loads, default={'rec': 1.0, 'sce': 1.0})\n"
    "    args = parser.parse_args()\n"
    "    with open('run.json') as fh:\n"
    "        sections = json.load(fh)\n"
    "    for section in sections.values():\n"
    "        for k, v in section.items():\n"
    "            setattr(args, k, v)\n"
    "    return args\n"
    "def step(args, pred, target):\n"
    "    parts = {\n"
    "        'rec': F.mse_loss(pred, target),\n"
    "        'sce': (1 - F.cosine_similarity(pred, target)).mean(),\n"
    "    }\n"
    "    return sum(args.weights.get(k, 0.0) * v for k, v in parts.items())\n"
    "if __name__ == '__main__':\n"
    "    step(options(), None, None).backward()\n"
)


@dataclass
class WeightDef:
    """A named scalar loss weight set to a literal <= 0 (config field, default, argparse)."""

    name: str
    value: float
    span: Span
    parameter: bool = False  # a parameter's default: set only where a call leaves it out


@dataclass
class WeightUse:
    """A name multiplied into a loss expression."""

    name: str


@dataclass
class ConfiguredWeight:
    """A loss term's weight read from configuration (``args.w_coord``, ``weights["coord"]``,
    ``cfg.get("smooth_weight", 1.0)``): its values are the project's question. ``extra``: the
    term is added onto a loss already put together (``loss = loss + w * reg``)."""

    text: str
    span: Span
    term: str
    extra: bool = False


def _number(node: cst.BaseExpression) -> Optional[float]:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _number(node.expression)
        return -inner if inner is not None else None
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.value)
        except ValueError:
            return None
    return None


def _weighted_by_name(text: str) -> list[tuple[str, float, str]]:
    """(weights, default, parts) of each ``weights.get(k, default) * v for k, v in
    parts.items()`` in a statement's text (the factors in either order)."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.GeneratorExp, ast.ListComp)) or len(node.generators) != 1:
            continue
        gen = node.generators[0]
        it, target, elt = gen.iter, gen.target, node.elt
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and isinstance(target, ast.Tuple) and len(target.elts) == 2
                and all(isinstance(t, ast.Name) for t in target.elts)
                and isinstance(elt, ast.BinOp) and isinstance(elt.op, ast.Mult)):
            continue
        key, value = (t.id for t in target.elts)  # type: ignore[attr-defined]
        for weight, part in ((elt.left, elt.right), (elt.right, elt.left)):
            if isinstance(part, ast.Name) and part.id == value and isinstance(weight, ast.Call) \
                    and isinstance(weight.func, ast.Attribute) and weight.func.attr == "get" \
                    and len(weight.args) == 2 and isinstance(weight.args[0], ast.Name) \
                    and weight.args[0].id == key and isinstance(weight.args[1], ast.Constant) \
                    and isinstance(weight.args[1].value, (int, float)):
                out.append((ast.unparse(weight.func.value), float(weight.args[1].value),
                            ast.unparse(it.func.value)))
    return out


def _dict_display(project: Project, fn: FunctionInfo, name: str, before: int) -> Optional[dict[str, int]]:
    """The literal keys of the dict display ``name`` was last bound to in ``fn`` before event
    ``before``, each with its line; None when it is no such display."""
    bound = next((e for e in reversed(fn.events[:before]) if e.kind == "assign" and e.targets == [name]), None)
    # the statement's whole source: an event's text is shortened
    text = project.text_at(fn.path, bound.span) if bound is not None else None
    if bound is None or not text or "=" not in text:
        return None
    entries = dict_entries(text.split("=", 1)[1])
    if not entries:
        return None
    lines: dict[str, int] = {}
    for key in entries:
        at = re.search(rf"""['"]{re.escape(key)}['"]\s*:""", text)
        lines[key] = bound.span.line + (text[:at.start()].count("\n") if at else 0)
    return lines


def _keyed_elsewhere(project: Project, base: str, key: str, config: str) -> str:
    """Another place in the code that names the weight ``key`` of the table ``base`` (its last
    name): a read ``x.weights["key"]`` / ``.get("key"``, or a display ``{"key": ...}`` given as
    the table's default (a dataclass field, an option's ``default=``); as ``path:line``, or ''."""
    attr = re.escape(base.rsplit(".", 1)[-1])
    quoted = rf"""['"]{re.escape(key)}['"]"""
    read = re.compile(rf"{attr}\s*(\[\s*{quoted}\s*\]|\.get\(\s*{quoted})")
    default = re.compile(rf"\b{attr}\b.*\{{\s*{quoted}\s*:", re.S)
    for fn, e in project.events():
        if fn.path != config and (read.search(e.text) or default.search(e.text)):
            return f"{fn.path}:{e.span.line}"
    return ""


def _last(node: cst.BaseExpression) -> str:
    """The name a weight is known by: ``cfg.w_normal`` -> w_normal, ``w["normal"]`` -> normal."""
    if isinstance(node, cst.Subscript) and node.slice:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            return index.value.evaluated_value if isinstance(index.value.evaluated_value, str) else ""
    text = dotted(node)
    return text.rsplit(".", 1)[-1] if text else ""


# a loss weight read with `.get(key, 0.0)` from the configuration's dict of weights
_WEIGHT_BY_KEY = (
    "import torch.nn.functional as F\n"
    "from config import DEFAULTS\n"
    "def loss_fn(pred, target, lat, cfg):\n"
    "    w = cfg['loss']['weights']\n"
    "    rec = F.mse_loss(pred, target)\n"
    "    return w.get('rec', 0.0) * rec + w['latent'] * lat\n"
    "def fit(model, opt, loader):\n"
    "    for x in loader:\n"
    "        pred, lat = model(x)\n"
    "        loss = loss_fn(pred, x, lat, DEFAULTS)\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)


class LossWeights(Rule):
    code = "GM402"
    name = "loss-weights"
    severity = Severity.ERROR
    summary = "loss component weighted by zero or a negative number, dropped from the total, or dominated by an extra term"
    # the anchor is where a loss is put together; weights defined in a config module the
    # prefilter skipped are loaded on demand (see check_project)
    prefilter = ("loss", "Loss", "LOSS", "criterion")
    doc = """
## What it does
Finds, in how the training loss is put together:

* a loss-weights dict (`loss_weights = {"coord": 1.0, "normal": 0.0}`, a config field or the
  function returning it) with a weight that is zero or negative;
* a named scalar weight (`w_normal`, `lambda_tan`, `normal_weight`: a config field, an argparse
  `default=`, a parameter default that some call of its function leaves in place) that is zero
  or negative and is multiplied into a loss somewhere in the project;
* a literal `0 * loss_x` / `-0.5 * loss_x` term (a factor of `-1` is a negation, `-1.0 * ll`
  turning a log-likelihood into a loss, not a weight);
* a loss component computed in a function that also sums a total, left out of that total (used
  only for logging, or not at all; a loss module built there, `bce = nn.BCEWithLogitsLoss()`, is
  no component: its calls are);
* an extra term added with a large literal weight (`loss + 100 * reg`): a warning, since such a
  term usually exists only in the pipeline, not in the reference that works.

Ordinary positive weights are never reported.

## Why is this bad?
GraphMAE's reconstruction loss here is a weighted sum: MSE on the coordinates and a scaled cosine
error on tangents and normals. A zero weight removes a component from the gradient while it is
still computed and logged, so the logged per-component losses look alive; a negative weight makes
the optimizer *maximise* that error. A component computed but not added is the same thing without
a weight. An extra term with a weight of 100 swamps the reconstruction gradient: the loss curve
goes down (the regulariser is easy to satisfy) while the points come out scattered.

## Example
```python
LOSS_WEIGHTS = {"coord": 1.0, "tangent": 0.5, "normal": 0.0}
loss = l_coord + l_tan  # l_normal computed above, never added
```

## Use instead
```python
LOSS_WEIGHTS = {"coord": 1.0, "tangent": 0.5, "normal": 0.5}
loss = sum(LOSS_WEIGHTS[k] * parts[k] for k in parts)
```

## Fix safety
No automatic fix: the intended weights are the reference configuration's, which only a person can
confirm.

## References
- Hou et al., GraphMAE: Self-Supervised Masked Graph Autoencoders, KDD 2022 (scaled cosine error).
"""

    VALID = [
        # a value carried through the loop and read after it; a count summed per outer iteration
        Valid(
            "def matching_loss(loss, h, layers, crit, target):\n"
            "    for layer in layers:\n"
            "        h = layer(h)\n"
            "    loss = loss + crit(h, target)\n"
            "    return loss\n"
            "def n_params(model):\n"
            "    total = 0\n"
            "    for p in model.parameters():\n"
            "        n = 1\n"
            "        for s in p.size():\n"
            "            n = n * s\n"
            "        total += n\n"
            "    return total\n"
        ),
        # the term added inside the loop, and a mean taken after it
        Valid(
            "import torch.nn.functional as F\n"
            "def total_loss(recon, x, weights):\n"
            "    total, n = 0.0, 0\n"
            "    for t in x:\n"
            "        l = F.mse_loss(recon[t], x[t])\n"
            "        total = total + weights.get(t, 1.0) * l\n"
            "        n += 1\n"
            "    total = total / n\n"
            "    return total\n"
        ),
        # a penalty over the parameters weighted by zero (no weight penalty; a term kept so that
        # every parameter takes part in the graph): no reconstruction component is left out
        Valid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "class Model(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.alpha_l2norm = 0.\n"
            "    def training_loss(self, pred, target):\n"
            "        pred_loss = F.mse_loss(pred, target)\n"
            "        reg_loss = torch.tensor(0.)\n"
            "        for p in self.parameters():\n"
            "            reg_loss += p.square().sum()\n"
            "        return pred_loss + self.alpha_l2norm * reg_loss + 0. * reg_loss\n"
        ),
        Valid("LOSS_WEIGHTS = {'coord': 1.0, 'tangent': 0.5, 'normal': 0.5}\n"),
        Valid(
            "from dataclasses import dataclass\n\n@dataclass\nclass Config:\n"
            "    weight_decay: float = 0.0\n    w_normal: float = 0.5\n    dropout: float = 0.0\n"
        ),
        Valid(
            "import torch.nn.functional as F\n\ndef loss_fn(p, t, n_p, n_t):\n"
            "    l_xyz = F.mse_loss(p, t)\n    l_nrm = F.mse_loss(n_p, n_t)\n"
            "    loss = l_xyz + 0.5 * l_nrm\n    return loss, {'xyz': l_xyz.item(), 'nrm': l_nrm.item()}\n"
        ),
        # a weight of zero that no loss uses
        Valid("import argparse\np = argparse.ArgumentParser()\np.add_argument('--w-warmup', default=0.0)\n"),
        # every component summed generically
        Valid(
            "def total(parts, weights):\n    return sum(weights[k] * v for k, v in parts.items())\n"
        ),
        # a weight looked up by each component's name: the 0.0 is for a key the configuration
        # lacks, and which keys it holds is the configuration's
        Valid(
            "def step(losses, cfg):\n"
            "    loss = sum(cfg.loss_weights.get(k, 0.0) * v for k, v in losses.items())\n"
            "    loss.backward()\n"
        ),
        # -1 turns a log-likelihood into a loss: a negation, not a weight
        Valid(
            "def context_loss(k_node, log_prior):\n"
            "    context_loss = (k_node * log_prior).sum(-1)\n"
            "    context_loss = - 1.0 * context_loss.mean()\n"
            "    return context_loss\n"
        ),
        # loss modules built in the function; their calls make the total
        Valid(
            "import torch.nn as nn\n"
            "def loss_calculation(logits, lbl, reg_loss, reg_coef):\n"
            "    xent = nn.CrossEntropyLoss()\n"
            "    b_xent = nn.BCEWithLogitsLoss()\n"
            "    xent_loss = b_xent(logits, lbl)\n"
            "    loss = xent_loss + reg_coef * reg_loss\n"
            "    return loss\n"
        ),
        # a zero default of a loss class nothing instantiates sets no weight of the program
        Valid(
            "import torch.nn as nn\n"
            "class BPRLoss(nn.Module):\n"
            "    def __init__(self, lambda_reg: float = 0):\n"
            "        super().__init__()\n"
            "        self.lambda_reg = lambda_reg\n"
            "    def forward(self, pos, neg, params):\n"
            "        return -(pos - neg).sigmoid().log().mean() + self.lambda_reg * params.norm()\n"
        ),
        # instantiated, but every call sets the weight
        Valid(
            "import torch.nn as nn\n"
            "class BPRLoss(nn.Module):\n"
            "    def __init__(self, lambda_reg: float = 0):\n"
            "        super().__init__()\n"
            "        self.lambda_reg = lambda_reg\n"
            "    def forward(self, pos, neg, params):\n"
            "        return -(pos - neg).sigmoid().log().mean() + self.lambda_reg * params.norm()\n"
            "crit = BPRLoss(lambda_reg=1e-4)\n"
        ),
        # the key read is one the configuration sets
        Valid({
            "config.py": "DEFAULTS = {'loss': {'weights': {'rec': 1.0, 'latent': 0.1}}}\n",
            "steps.py": _WEIGHT_BY_KEY,
        }),
        # every part named as the configuration's weights are
        Valid({"losses.py": _PARTS_BY_NAME.format(part="mse"), "cfg.yaml": "weights:\n  mse: 1.0\n  sce: 1.0\n"}),
        # a running average of the loss, updated from itself (a logged number, not a term)
        Valid(
            "running = {'loss_ema': 0.0}\n"
            "def log_step(loss):\n"
            "    running['loss_ema'] = 0.9 * running['loss_ema'] + 0.1 * loss.item()\n"
        ),
    ]
    INVALID = [
        Invalid("LOSS_WEIGHTS = {'coord': 1.0, 'tangent': 0.5, 'normal': 0.0}\n", line=1, column=57),
        Invalid(
            "def default_loss_weights():\n    return {'coord': 1.0, 'tangent': -0.5, 'normal': 0.5}\n",
            line=2,
        ),
        Invalid(
            "import torch.nn.functional as F\n\ndef loss_fn(p, t, n_p, n_t, d_p, d_t):\n"
            "    l_xyz = F.mse_loss(p, t)\n    l_nrm = F.mse_loss(n_p, n_t)\n"
            "    l_tan = F.mse_loss(d_p, d_t)\n    loss = l_xyz + l_tan\n"
            "    return loss, {'xyz': l_xyz.item(), 'nrm': l_nrm.item()}\n",
            line=5, message_contains="l_nrm",
        ),
        Invalid("def f(l_coord, l_normal):\n    loss = l_coord + 0 * l_normal\n    return loss\n", line=2),
        Invalid(
            "def f(model, l_rec):\n    reg = sum(p.pow(2).sum() for p in model.parameters())\n"
            "    loss = l_rec + 100.0 * reg\n    return loss\n",
            line=3, message_contains="100",
        ),
        # weight from the config file, used by the loss in another file
        Invalid(
            {
                "config.py": "from dataclasses import dataclass\n\n@dataclass\nclass Config:\n"
                "    w_coord: float = 1.0\n    w_normal: float = 0.0\n",
                "model.py": "import torch.nn.functional as F\n\ndef loss(cfg, p, t, pn, tn):\n"
                "    return cfg.w_coord * F.mse_loss(p, t) + cfg.w_normal * F.mse_loss(pn, tn)\n",
            },
            line=6, path="config.py", message_contains="w_normal",
        ),
        # argparse default
        Invalid(
            {
                "train.py": "import argparse\np = argparse.ArgumentParser()\n"
                "p.add_argument('--lambda-tan', type=float, default=-1.0)\nargs = p.parse_args()\n"
                "loss = l_xyz + args.lambda_tan * l_tan\n",
            },
            line=3, path="train.py",
        ),
        # a zero default that a call leaves in place
        Invalid(
            "import torch.nn as nn\n"
            "class BPRLoss(nn.Module):\n"
            "    def __init__(self, lambda_reg: float = 0):\n"
            "        super().__init__()\n"
            "        self.lambda_reg = lambda_reg\n"
            "    def forward(self, pos, neg, params):\n"
            "        return -(pos - neg).sigmoid().log().mean() + self.lambda_reg * params.norm()\n"
            "crit = BPRLoss()\n",
            line=3,
        ),
        # a weight of -2 still maximises the term
        Invalid("def f(loss_rec, loss_kl):\n    loss = loss_rec + -2.0 * loss_kl\n    return loss\n", line=2),
        # the weight is read under a key the configuration does not have: its default, 0
        Invalid({
            "config.py": "DEFAULTS = {'loss': {'weights': {'recon': 1.0, 'latent': 0.1}}}\n",
            "steps.py": _WEIGHT_BY_KEY,
        }, path="steps.py", line=6, message_contains="the default of `rec`"),
        # a part named otherwise than the configuration's weights: weighted by the default 0
        Invalid({"losses.py": _PARTS_BY_NAME.format(part="rec"), "cfg.yaml": "weights:\n  mse: 1.0\n  sce: 1.0\n"},
                path="losses.py", line=6, message_contains="no key 'rec'"),
        # options set in bulk from a JSON file's sections; the code's default names the part as
        # the training step does: the file's table is where the name differs
        Invalid({"train.py": _BULK_OPTIONS, "run.json": '{"optim": {"lr": 0.1},\n'
                 ' "losses": {"weights": {"recon": 1.0, "sce": 1.0}}}\n'},
                path="run.json", line=2, message_contains="no key 'rec'"),
        # a large-weighted term inside one named part: the message names the part it swells
        Invalid("import torch.nn.functional as F\n"
                "def reconstruction_loss(p, t):\n"
                "    parts = {'coord': F.mse_loss(p, t) + 100 * F.l1_loss(p, t), 'dir': sce(p, t)}\n"
                "    return sum(parts.values()), parts\n",
                line=3, message_contains="weighted 100 to `coord`"),
        # a loss held by a lambda is a component: computed, logged, never added
        Invalid(
            "import torch.nn.functional as F\n"
            "mse_fn = lambda a, b: F.mse_loss(a, b)\n"
            "def loss_fn(recon, x, mask):\n"
            "    l_sce = F.cosine_embedding_loss(recon[mask], x[mask], x.new_ones(1))\n"
            "    l_mse = mse_fn(recon[mask], x[mask])\n"
            "    loss = l_sce + 0.5 * l_sce\n"
            "    return loss, {'mse': l_mse.item()}\n",
            line=5, message_contains="l_mse"),
        # the weighted term added after the loop over the per-type losses (dedented)
        Invalid(
            "import torch.nn.functional as F\n"
            "def total_loss(recon, x, weights):\n"
            "    parts = {t: F.mse_loss(recon[t], x[t]) for t in x}\n"
            "    total = 0.0\n"
            "    for t, l in parts.items():\n"
            "        w = weights.get(t, 1.0)\n"
            "    total = total + w * l\n"
            "    return total, parts\n",
            line=7, message_contains="only the last iteration's term",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.functions: list[str] = []
        self.target = ""  # text of the assignment being visited: `loss = ...` makes terms lossy
        self.keys: list[str] = []  # keys of the dict entries being visited: `{"coord": ...}`
        self.constants = Constants()  # `cfg = dict(DEFAULTS, w=0.0)`, then `cfg["w"] * l`
        self.losses: list[set[str]] = [set()]  # names bound to a loss call, per function
        # names summed over the model's parameters (an L2 penalty), per function: a zero weight
        # on such a term penalises no weight; it is no reconstruction component left out
        self.penalties: list[set[str]] = [set()]
        self.walking = 0  # depth of `for p in model.parameters():` loops being visited

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)
        self.constants.enter_function(node)
        self.losses.append(set())
        self.penalties.append(set())
        for param in (*node.params.params, *node.params.kwonly_params):
            if param.default is not None:
                self._scalar(param.name.value, param.default, param.default, parameter=True)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()
        self.constants.leave_function()
        self.losses.pop()
        self.penalties.pop()

    def visit_For(self, node: cst.For) -> None:
        if PARAMETER_WALK.search(self.ctx.code(node.iter, 120)):
            self.walking += 1
        # `for t, l in per_type.items():` over a dict of losses: `l` is a loss
        walked, target = node.iter, node.target
        if isinstance(walked, cst.Call) and isinstance(walked.func, cst.Attribute) \
                and walked.func.attr.value in ("items", "values"):
            if walked.func.attr.value == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            walked = walked.func.value
        if isinstance(walked, cst.Name) and walked.value in self.losses[-1] and isinstance(target, cst.Name):
            self.losses[-1].add(target.value)

    def leave_For(self, original_node: cst.For) -> None:
        if PARAMETER_WALK.search(self.ctx.code(original_node.iter, 120)):
            self.walking -= 1

    # -- weight definitions ----------------------------------------------------------------------
    def _weights_dict(self, node: Optional[cst.BaseExpression]) -> None:
        if isinstance(node, cst.Call) and node.args:  # dict(coord=1.0, ...) / field(default_factory=...)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value not in ("default_factory", "default"):
                    self._entry(arg.keyword.value, arg.value)
                elif isinstance(arg.value, cst.Lambda):
                    self._weights_dict(arg.value.body)
                else:
                    self._weights_dict(arg.value)
            return
        if not isinstance(node, cst.Dict):
            return
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = element.key
                name = key.evaluated_value if isinstance(key, cst.SimpleString) else self.ctx.code(key, 40)
                self._entry(str(name), element.value)

    def _entry(self, name: str, value: cst.BaseExpression) -> None:
        number = _number(value)
        if number is not None and number <= 0:
            what = "zero" if number == 0 else f"negative ({number:g})"
            self.report(
                value,
                f"loss weight `{name}` is {what}: that component "
                + ("gives no gradient although it is still computed and logged" if number == 0
                   else "is maximised instead of minimised"),
                fix="use the reference configuration's positive weight, or remove the component",
            )

    def _scalar(self, name: str, value: cst.BaseExpression, node: cst.CSTNode,
                parameter: bool = False) -> None:
        if not WEIGHT_NAME.match(name) or NOT_A_LOSS_WEIGHT.search(name):
            return
        number = _number(value)
        if number is not None and number <= 0:
            self.fact(WeightDef(name, number, self.ctx.span(node), parameter))

    def visit_Assign(self, node: cst.Assign) -> None:
        self.target = " ".join(self.ctx.code(t.target, 60) for t in node.targets)
        self.constants.assigned(node)
        for target in node.targets:
            self._assigned(target.target, node.value)
            value = node.value
            # a dict or list of loss values (`{t: sce(...) for t in x}`) holds losses too
            element = value.value if isinstance(value, cst.DictComp) else \
                value.elt if isinstance(value, (cst.ListComp, cst.GeneratorExp)) else value
            if isinstance(target.target, cst.Name) and self._loss_value(element):
                self.losses[-1].add(target.target.value)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self.target = ""

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.keys.append(node.key.raw_value if isinstance(node.key, cst.SimpleString) else "")

    def leave_DictElement(self, original_node: cst.DictElement) -> None:
        self.keys.pop()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = _last(target)
        if WEIGHTS_DICT.search(name):
            self._weights_dict(value)
        self._scalar(name, value, value)

    def visit_Return(self, node: cst.Return) -> None:
        if self.functions and WEIGHTS_DICT.search(self.functions[-1]):
            self._weights_dict(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None and WEIGHTS_DICT.search(arg.keyword.value):
                self._weights_dict(arg.value)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            flag = next((a.value for a in node.args if a.keyword is None
                         and isinstance(a.value, cst.SimpleString)), None)
            default = next((a.value for a in node.args if a.keyword and a.keyword.value == "default"), None)
            if flag is not None and default is not None:
                name = str(flag.evaluated_value).lstrip("-").replace("-", "_")
                self._scalar(name, default, default)

    # -- loss expressions ------------------------------------------------------------------------
    def _lossy(self, node: cst.BaseExpression) -> bool:
        """A loss term: its text, or the name it is assigned to, says so."""
        return bool(LOSSY.search(self.ctx.code(node, 120)) or LOSSY.search(self.target))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Multiply):
            for weight, term in ((node.left, node.right), (node.right, node.left)):
                name = _last(weight)
                if name:
                    self.fact(WeightUse(name))
                number = _number(weight)
                literal = number is not None
                if number is None:  # a weight read from a configuration this file builds
                    value = self.constants.evaluate(weight, fallback=True)
                    number = value if isinstance(value, float) else None
                # a negative factor maximises a loss; on a formula (`-0.5 * sum(...)` in a KL
                # divergence, `-1.0 * log_likelihood`) it is the formula's sign, and a factor of
                # -1 is a negation (`-1.0 * ll` is `-ll`: a log-likelihood turned into a loss)
                if isinstance(term, cst.Name) and term.value in self.penalties[-1]:
                    continue
                # a number times a number, or the value being updated from itself (a running
                # average: `ema = 0.9 * ema + 0.1 * loss.item()`): state, not a weighted term
                if _number(term) is not None or self.ctx.code(weight, 60) in self.target.split(" "):
                    continue
                reported = number is not None and (
                    number == 0 and self._lossy(term)
                    or number < 0 and number != -1 and self._loss_value(term))
                # a value this file alone does not settle (`w.get("rec", 0.0)` of a dict it is
                # handed): the project's configuration says what it is
                if not (literal or reported) and _configured(weight) \
                        and (self._lossy(term) or self._loss_value(term)) \
                        and not NOT_A_LOSS_WEIGHT.search(name):
                    self.fact(ConfiguredWeight(self.ctx.code(weight), self.ctx.span(weight),
                                               self.ctx.code(term, 60)))
                if reported:
                    self.report(node, f"`{self.ctx.code(node, 60)}`: a loss term weighted by "
                                f"{number:g} " + ("contributes nothing" if number == 0 else
                                                  "is maximised"),
                                fix="use a positive weight or drop the term")
        elif isinstance(node.operator, cst.Add):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                self._large_term(side, extra=isinstance(other, cst.Name) and other.value == self.target)

    def _loss_value(self, node: cst.BaseExpression) -> bool:
        """A loss function's result (``F.mse_loss(...)``, ``criterion(...)``, ``l.mean()`` of
        one) or a name bound to one."""
        if isinstance(node, cst.Name):
            return node.value in self.losses[-1] or "loss" in node.value.lower()
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("mean", "sum"):
                return self._loss_value(func.value)
            if isinstance(func, cst.Subscript):  # `LOSSES[cfg["loss"]](pred, target)`: a registry's
                func = func.value
            last = (_last(func) or "").lower()
            return "loss" in last or "criterion" in last or last in ("sce", "mse")
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.constants.assigned(node)
        if self.walking and isinstance(node.target, cst.Name):
            self.penalties[-1].add(node.target.value)
        if isinstance(node.operator, cst.AddAssign) and LOSSY.search(_last(node.target) or ""):
            self._large_term(node.value, extra=True)

    def _large_term(self, node: cst.BaseExpression, extra: bool = False) -> None:
        """``extra``: added onto the loss being assigned (``loss = loss + w * t``, ``loss += ...``)."""
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)):
            return
        for weight, term in ((node.left, node.right), (node.right, node.left)):
            number = _number(weight)
            if number is None and extra and _configured(weight):  # added to the loss: a loss term
                self.fact(ConfiguredWeight(self.ctx.code(weight), self.ctx.span(node),
                                           self.ctx.code(term, 60), extra=True))
            if number is not None and number >= LARGE_WEIGHT and self._lossy(term):
                # the value the term is added into (a loss component the probe weighs): the
                # assigned name, or the key of the dict entry it is part of
                name = self.keys[-1] if self.keys else self.target
                into = f" to `{name}`" if name.isidentifier() else ""
                finding = self.make_finding(
                    self.ctx.path, self.ctx.span(node),
                    f"`{self.ctx.code(node, 60)}` adds a term weighted {number:g}{into}: it dominates the "
                    "reconstruction loss, whose components are weighted around 1",
                    fix="check the reference: drop the extra term or give it a weight comparable "
                    "to the reconstruction components",
                )
                finding.severity = Severity.WARNING
                self.findings.append(finding)

    # -- project stage ---------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        out: list[Finding] = []
        used = {v.name for _, v in project.rule_facts(cls.code) if isinstance(v, WeightUse)}
        defs = [(f.path, d) for f, d in project.rule_facts(cls.code) if isinstance(d, WeightDef)]
        defs += cls._unparsed_definitions(project, used, {d.name for _, d in defs})
        for path, fact in defs:
            if fact.name in used and (not fact.parameter or _default_used(project, path, fact)):
                what = "zero" if fact.value == 0 else f"negative ({fact.value:g})"
                out.append(cls.make_finding(
                    path, fact.span,
                    f"loss weight `{fact.name}` is {what} and multiplies a loss term: that "
                    "component " + ("gives no gradient" if fact.value == 0 else "is maximised"),
                    fix="use the reference configuration's positive weight",
                ))
        out += cls._configured(project, {(f.path, f.line) for f in out})
        for fn in list(project.functions.values()):
            out += cls._dropped(project, fn)
            out += cls._unweighted_parts(project, fn)
            out += cls._summed_after_loop(fn)
        return out

    @classmethod
    def _summed_after_loop(cls, fn: FunctionInfo) -> list[Finding]:
        """``total = total + w * l`` (or ``total += ...``) after the loop that binds ``w`` and
        ``l`` (a line dedented out of the loop over the terms): it runs once, with the last
        iteration's values, and the other terms are computed and dropped. Only for a total
        the function returns or backpropagates, started before the loop at its level and not
        updated in it, of names the loop binds afresh (not carried through it)."""
        events = fn.events
        sums = [k for k, e in enumerate(events) if e.kind in ("assign", "augassign") and len(e.targets) == 1
                and _adds_to_itself(e.text, e.targets[0])]
        if not sums:
            return []
        out: list[Finding] = []
        for j, header in enumerate(events[:-1]):
            body = events[j + 1].loop_ids
            if not header.text.startswith("for ") or len(body) != len(header.loop_ids) + 1:
                continue
            loop = body[-1]
            end = next((k for k in range(j + 1, len(events)) if loop not in events[k].loop_ids), len(events))
            # the names the loop rebinds each iteration (its targets, `w = ...`; not `a[i] = ...`)
            bound = {t for e in [header, *events[j + 1:end]] if e.kind in ("assign", "augassign")
                     for t in e.targets if e is header or _rebinds(e.text, t)}
            before = {t for x in events[:j] for t in x.targets}
            for k in sums:
                e = events[k]
                total = e.targets[0]
                # a value carried through the loop (`h = h_0`, then `h = f(h)` each iteration)
                # is meant to be read after it: only names the loop binds afresh count
                read = set(e.uses) & bound - {total} - before
                if k < end or e.loop_ids != header.loop_ids or not read or total in bound \
                        or not any(total in x.targets and x.loop_ids == header.loop_ids for x in events[:j]) \
                        or not any(x.kind == "return" and total in x.uses
                                   or x.kind == "call" and x.method == "backward" and x.receiver == total
                                   for x in events[k + 1:]):
                    continue
                out.append(cls.make_finding(
                    fn.path, e.span,
                    f"`{e.text.strip()}` runs once, after the loop at line {header.span.line} that binds "
                    f"{', '.join(f'`{n}`' for n in sorted(read))}: only the last iteration's term is in "
                    f"`{total}`, the others are computed and dropped",
                    fix="indent it into the loop's body, so that every iteration's term is added",
                ))
        return out

    @classmethod
    def _unweighted_parts(cls, project: Project, fn: FunctionInfo) -> list[Finding]:
        """``sum(w.get(name, 0.0) * part for name, part in parts.items())`` over a dict display
        of loss parts, where every configured ``w`` lacks a part's name: that part is weighted
        by the default 0, reported at its entry."""
        out: list[Finding] = []
        for i, e in enumerate(fn.events):
            if e.kind not in ("assign", "augassign", "return") or ".get(" not in e.text or ".items()" not in e.text:
                continue
            for base, default, parts in _weighted_by_name(e.text):
                entries = _dict_display(project, fn, parts, i)
                tables = tables_of(project, fn, base, e.span.line)
                if entries is None or not tables or default != 0:
                    continue
                names = sorted({str(k) for t in tables for k in t.value.entries})
                for key, line in entries.items():
                    if any(key in t.value.entries for t in tables):
                        continue
                    # where the weights are written: their entries' place (a configuration file)
                    source = next((v[0].source for v in tables[0].value.entries.values() if v),
                                  tables[0].source)
                    witness = _keyed_elsewhere(project, base, key, source.path)
                    if witness and source.path != fn.path:
                        # the code names the weight `key` elsewhere too: the configuration's
                        # table is the odd one out, and where the name is to be fixed
                        out.append(cls.make_finding(
                            source.path, Span(source.line, 1, source.line, 1),
                            f"the weights table here has no key {key!r} (it has "
                            f"{', '.join(map(repr, names)) or 'none'}), but `{base}.get({key!r}, 0)` "
                            f"weights loss part `{key}` at {fn.path}:{line}, and {witness} names "
                            "it so too: that component is weighted 0 and gives no gradient",
                            fix=f"name the weight {key!r}, as the code does"))
                        continue
                    out.append(cls.make_finding(
                        fn.path, Span(line, 1, line, 1),
                        f"loss part `{key}` is weighted by `{base}.get(...)`, whose default 0 it gets: "
                        f"the configured weights ({source.where}) have no key "
                        f"{key!r} (they have {', '.join(map(repr, names)) or 'none'}), so this "
                        "component gives no gradient",
                        fix=f"name the part as the configuration does, or add a weight for {key!r}",
                    ))
        return out

    @classmethod
    def _configured(cls, project: Project, reported: set[tuple[str, int]]) -> list[Finding]:
        """Weights that configuration sets (:func:`values_of`): a zero or negative value is
        reported where it was written; an extra term weighted at least 1 by a default that no
        configuration of the run sets, at the term (a warning, as a large literal weight is)."""
        out: list[Finding] = []
        for facts, weight in project.rule_facts(cls.code):
            if not isinstance(weight, ConfiguredWeight):
                continue
            fn = function_of(project, facts.path, weight.span.line)
            if fn is None:
                continue
            values = [v for v in values_of(project, fn, weight.text, weight.span.line)
                      if isinstance(v.value, (int, float)) and not isinstance(v.value, bool)]
            misspelt = next((v for v in values if v.default and v.near and any(
                n.value != v.value for n in v.near[1])), None)
            if misspelt is not None and (misspelt.source.path, misspelt.source.line) not in reported:
                out.append(cls._misspelt(misspelt, weight, facts.path))
                reported.add((misspelt.source.path, misspelt.source.line))
                continue
            switched_off = _guarded_by(fn, weight)
            for value in values:
                where = (value.source.path, value.source.line)
                # a literal bound in code (`running = 0` then `running * 0.9 + x`) is no setting;
                # a zero weight of a term added only when its weight is positive switches it off
                if value.value > 0 or where in reported or value.source.what == LITERAL \
                        or NOT_A_LOSS_WEIGHT.search(value.source.what) or switched_off:
                    continue
                reported.add(where)
                what = "zero" if value.value == 0 else f"negative ({value.value:g})"
                out.append(cls.make_finding(
                    value.source.path, Span(value.source.line, 1, value.source.line, 1),
                    f"loss weight `{weight.text}` is {what} on this program ({value.source.what}) and "
                    f"multiplies `{weight.term}` at {facts.path}:{weight.span.line}: that component "
                    + ("gives no gradient" if value.value == 0 else "is maximised"),
                    fix="use the reference configuration's positive weight",
                ))
            if weight.extra and values and all(v.value >= 1 for v in values) \
                    and any(v.default for v in values):
                default = next(v for v in values if v.default)
                finding = cls.make_finding(
                    facts.path, weight.span,
                    f"`{weight.term}` is added to the loss weighted {default.value:g}, "
                    f"{default.source.what} ({default.source.where}), which no configuration of the "
                    "run sets: an extra term as heavy as the reconstruction components, that the "
                    "reference loss may not have",
                    fix="check the reference: drop the extra term, or set its weight in the "
                    "configuration, comparable to what it must not dominate",
                )
                finding.severity = Severity.WARNING
                out.append(finding)
        return out

    @classmethod
    def _misspelt(cls, value: Value, weight: ConfiguredWeight, path: str) -> Finding:
        """A weight read by a key no configuration sets, spelt almost as one it does set."""
        assert value.near is not None
        key, theirs = value.near
        setting = ", ".join(dict.fromkeys(f"{v.value!r} at {v.source.where}" for v in theirs))
        return cls.make_finding(
            value.source.path, Span(value.source.line, 1, value.source.line, 1),
            f"loss weight `{weight.text}` is read by a key no configuration sets, {value.source.what} "
            f"({value.value:g}) is used; the configuration sets `{key}` ({setting}): a misspelt key? "
            f"The weight of `{weight.term}` at {path}:{weight.span.line} is not the configured one",
            fix=f"read the key the configuration sets, `{key}`",
        )

    @classmethod
    def _unparsed_definitions(cls, project: Project, used: set[str], known: set[str]
                              ) -> list[tuple[str, WeightDef]]:
        """Weights used in a loss but defined in a file the prefilter skipped (a config module
        that never says "loss"): loaded now, read from its assignment events."""
        names = [n for n in sorted(used - known)
                 if WEIGHT_NAME.match(n) and not NOT_A_LOSS_WEIGHT.search(n)]
        for name in names:
            project.load_mentioning(name)
        # one pass over the project's assignments for every name (a pass per name grew with
        # names times assignments)
        assigned: dict[str, list[tuple[FunctionInfo, Event, re.Match[str]]]] = {}
        for fn, event in project.events("assign"):
            last = event.targets[0].rsplit(".", 1)[-1] if event.targets else ""
            if last in names and (match := ASSIGNED_NUMBER.search(event.text)):
                assigned.setdefault(last, []).append((fn, event, match))
        out = []
        for name in names:
            for fn, event, match in assigned.get(name, ()):
                value = float(match.group(1).replace(" ", ""))
                if value <= 0:
                    out.append((fn.path, WeightDef(name, value, event.span)))
        return out

    @classmethod
    def _dropped(cls, project: Project, fn: FunctionInfo) -> list[Finding]:
        comps: dict[str, int] = {}
        for i, e in enumerate(fn.events):
            # `crit = nn.BCEWithLogitsLoss()` makes a loss function, not a loss value: its calls
            # are the components
            if e.kind == "call" and len(e.targets) == 1 and is_loss_call(project, fn, e) \
                    and not constructed_class(project, e):
                comps.setdefault(e.targets[0], i)
        if len(comps) < 2:
            return []
        totals = [i for i, e in enumerate(fn.events) if e.kind in ("assign", "augassign")
                  and "+" in e.text and len(set(e.uses) & set(comps)) >= 1
                  and not set(e.targets) & set(comps)]
        if not totals:
            return []
        total_names = {t for i in totals for t in fn.events[i].targets}
        summed = {u for i in totals for u in fn.events[i].uses}
        out = []
        for name, i in comps.items():
            if name in summed or i > totals[-1]:
                continue
            later = [e for e in fn.events[i + 1:] if name in e.uses]
            if any(not _only_logged(e, total_names) for e in later):
                continue
            event = fn.events[i]
            out.append(cls.make_finding(
                fn.path, event.span,
                f"loss component `{name}` is computed but never added to the total "
                f"(`{fn.events[totals[-1]].text[:60]}`): it gets no gradient",
                fix=f"add `{name}` (with its weight) to the total loss, or stop computing it",
            ))
        return out

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """From each loss component's coefficient in the backpropagated loss (d loss / d
        component, per step: see ``LossComponent``): a zero weight or a dropped component shows
        as coefficient 0, a negative weight as a negative one, a dominating extra term as a share
        of the loss above one half (a component's, or what the recorded components leave
        unexplained). Components are matched to the finding by the name it reports."""
        if not evidence:
            return None
        steps = [s for s in evidence.steps if s.components][:3]
        ran = finding.in_configuration or evidence.ran(finding.path, finding.line, finding.end_line)
        if not ran and not steps:
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        if not steps:
            return cls._zero_gradients(finding, evidence)
        comps = steps[0].components
        named = [c for c in comps if _matches(finding.message, c.name)]
        shares = ", ".join(f"{c.name} {c.share:.0%} (x{c.coef:.3g})" for c in comps
                           if c.share is not None)
        context = f"step {steps[0].index} loss {steps[0].loss_value:.4g}: {shares}" \
            if steps[0].loss_value is not None else f"step {steps[0].index}: {shares}"
        if "dominates" in finding.message:
            explained = sum(c.share for c in comps if c.share is not None and c.in_graph)
            # the component the term was added into (`coord = mse + 100 * l1`) carries it
            into = re.findall(r"`([^`]+)`", finding.message)[1:2]
            named += [c for c in comps if c.name in into and c not in named]
            top = max((c for c in named if c.share is not None), key=lambda c: c.share, default=None)
            if top is not None and top.share > 0.5:
                return Verdict(Status.CONFIRMED, [f"{top.name} carries {top.share:.0%} of the loss",
                                                  context])
            if 1 - explained > 0.5:
                return Verdict(Status.CONFIRMED, [f"{1 - explained:.0%} of the loss comes from terms "
                                                  "other than the model's loss components", context])
            return Verdict(Status.REFUTED, ["no term carries more than half of the loss", context])
        if "extra term" in finding.message:
            # a default weight no configuration sets: what the term weighs in the run's loss
            top = max((c for c in named if c.share is not None and c.in_graph),
                      key=lambda c: abs(c.share), default=None)
            if top is not None and abs(top.share) >= EXTRA_SHARE:
                return Verdict(Status.CONFIRMED, [
                    f"{top.name} is a term of the loss weighted {top.coef:.3g}, carrying "
                    f"{top.share:.0%} of it", context])
            if top is not None and abs(top.share) < EXTRA_SHARE / 10:
                return Verdict(Status.REFUTED, [
                    f"{top.name} carries {top.share:.1%} of the loss", context])
            return None
        negative = "negative" in finding.message or "maximised" in finding.message
        pool = named or comps
        if negative:
            bad = [c for c in pool if c.coef is not None and c.coef < 0]
        else:
            bad = [c for c in pool if c.dropped]
        if bad:
            what = "is maximised (negative coefficient)" if negative else \
                "contributes nothing to the gradient (coefficient 0)"
            return Verdict(Status.CONFIRMED, [
                f"{', '.join(c.name for c in bad[:4])} {what} in {len(steps)} step(s)", context])
        if named and all(c.coef is not None and c.coef > 0 for c in named):
            return Verdict(Status.REFUTED, [
                f"{', '.join(c.name for c in named[:4])} weighted positively in the loss", context])
        return None


    @staticmethod
    def _zero_gradients(finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """A zero weight without recorded loss components: the parameters only its term reaches
        get exactly zero gradient at every step."""
        if any(w in finding.message for w in ("negative", "maximised", "dominates", "extra term")):
            return None
        zero, graded = evidence.zero_gradient_params()
        if not zero:
            return None
        return Verdict(Status.CONFIRMED, [
            f"{len(zero)} parameters reached by the loss got exactly zero gradient at all "
            f"{len(graded)} steps ({', '.join(zero[:4])}{', ...' if len(zero) > 4 else ''})"])


EXTRA_SHARE = 0.05  # an extra term carrying this share of the loss or more weighs in it


_GENERIC = {"w", "weight", "weights", "lambda", "lam", "coef", "coeff", "loss", "losses", "l",
            "cfg", "config", "args", "self", "the", "term", "total"}


def _rebinds(text: str, name: str) -> bool:
    """The statement ``text`` assigns ``name`` itself (``name = ...``, ``name += ...``), not an
    entry or attribute of it."""
    rest = text.lstrip()
    if not rest.startswith(name):
        return False
    rest = rest[len(name):].lstrip()
    return rest.startswith("+=") or rest.startswith("=") and not rest.startswith("==")


def _adds_to_itself(text: str, name: str) -> bool:
    """``name += ...`` or ``name = name + ...``."""
    if not _rebinds(text, name):
        return False
    rest = text.lstrip()[len(name):].lstrip()
    if rest.startswith("+="):
        return True
    rest = rest[1:].lstrip()
    return rest.startswith(name) and rest[len(name):].lstrip().startswith("+")


def _matches(message: str, component: str) -> bool:
    """Does a component name (``normal``, ``output[1]``, ``mse_loss@model.py:12``) share a
    specific word with the name the finding quotes first (`w_normal`, `l_nrm`, `0 * l_normal`)?"""
    quoted = re.findall(r"`([^`]+)`", message)[:1]
    words = {w for q in quoted for w in re.split(r"[^A-Za-z]+", q.lower()) if w} - _GENERIC
    own = {w for w in re.split(r"[^A-Za-z]+", component.lower()) if w} - _GENERIC
    return bool(words & own) or any(len(w) >= 3 and any(o.startswith(w) or w.startswith(o)
                                                        for o in own if len(o) >= 3)
                                    for w in words)


def _configured(node: cst.BaseExpression) -> bool:
    """An expression that reads a value (a name, an attribute, a subscript, a ``get``), not a
    literal or a computation."""
    if isinstance(node, cst.Call):
        return isinstance(node.func, (cst.Attribute, cst.Name)) and \
            (_last(node.func) in ("get", "getattr"))
    return isinstance(node, (cst.Name, cst.Attribute, cst.Subscript))


def _default_used(project: Project, path: str, fact: WeightDef) -> bool:
    """Some call of the function leaves the parameter to its default. A function nothing calls
    (a loss class never instantiated) sets no weight of the program; a call that unpacks
    ``*args`` / ``**kwargs`` may set it."""
    fn = function_of(project, path, fact.span.line)
    if fn is None or fact.name not in fn.params:
        return True  # not a parameter of a function the project knows: judged as a constant
    for _, event in callers_of(project, fn.qualname):
        if any(a.startswith("*") for a in event.args):
            continue
        if fact.name not in {param for param, _ in bindings(event, fn)}:
            return True
    return False


def _only_logged(event: Event, totals: set[str]) -> bool:
    """A later use of a component that does not feed the optimisation: logging, or a return next
    to the total (``return loss, {"normal": l_normal.item()}``)."""
    if any(w in event.text for w in LOG_WORDS):
        return True
    return event.kind == "return" and bool(set(event.uses) & totals)


def _guarded_by(fn: FunctionInfo, weight: ConfiguredWeight) -> bool:
    """The weighted term is added only under a test of the weight itself being non-zero
    (``if self.w_vis > 0:``, ``if w:``, ``if w != 0:``): an optional term a zero turns off."""
    own = re.escape(weight.text)
    test = re.compile(rf"{own}|{own}\s*(>|!=)\s*0(\.0*)?|0(\.0*)?\s*(<|!=)\s*{own}")
    return any(test.fullmatch(c.strip()) for e in fn.events if e.span.line == weight.span.line
               for c in e.conditions)
