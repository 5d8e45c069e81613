"""GM401 reduction-sum: a summed reconstruction loss backpropagated without a count."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Status
from auditor.fix import Fix, Fixer
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static import dataflow as df
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.conditions import normalise
from auditor.static.config_truth import (never_runs, returns_through, set_in_file, switched_on,
                                         switched_on_through)
from auditor.static.config_values import LITERAL, Source, values_of
from auditor.static.training import Training
from auditor.static.values import fixed_size_name, varying_count

# a division whose divisor is not a bare number: `/ n`, `/ mask.sum()`, `.div(len(x))`, `/=`
NORMALISED = re.compile(
    r"(?:/=?|\.div_?\(|torch\.div\(|\.true_divide\()(?!\s*[\d.]+\s*(?:$|[)\],;#]))"
)
# a reconstruction error: difference, square, absolute value, norm, or a named loss/error
ERROR_TEXT = re.compile(r"(?<![-+*/(,=\[]\s)(?<![-+*/(,=\[])-(?!\s*1\b)|\*\*\s*2|\.pow\(|\.abs\(|"
                        r"square|norm\(|loss|err|diff|\bdists?\b|cdist|distance|mse|sce",
                        re.IGNORECASE)

# a difference of two plain names (not a call's or a subscript's prefix): `pos - neg`
DIFFERENCE = re.compile(r"([A-Za-z_][\w.]*)\s*-\s*([A-Za-z_][\w.]*)(?![\w.(\[])")


def _margin_only(project: Project, fn: FunctionInfo, texts: list[str], index: int) -> bool:
    """The summed value's only error-like part is a difference of two of the model's outputs
    (``pos_scores - neg_scores`` under a log-sigmoid): a ranking margin compares the model with
    itself, not a reconstruction with its target."""
    if any(m.group(0) != "-" for t in texts for m in ERROR_TEXT.finditer(t)):
        return False
    pairs = [m.groups() for t in texts for m in DIFFERENCE.finditer(t)]
    return bool(pairs) and all(df.derives_from_module(project, fn, [side], index) is not None
                               for pair in pairs for side in pair)


def _normalised(fn: FunctionInfo, stmt: df.Statement, hit: set[str]) -> bool:
    if not stmt.text.endswith("…"):
        return NORMALISED.search(stmt.text) is not None
    # a long statement's text is its beginning: a division seen there counts when its divisor
    # starts with a name or a bracket (`/ self.args.batch`), not a number the cut may continue
    shown = stmt.text[:-1]
    return any(re.match(r"\s*[A-Za-z_(]", shown[m.end():]) for m in NORMALISED.finditer(shown))


# `functools.partial(F.mse_loss, reduction="sum")`: a loss called later, where its rows are
PARTIALS = ("functools.partial",)
# what follows a division sign: the divisor as written (a name, an attribute chain, a subscript)
DIVISOR = re.compile(r"\s*([A-Za-z_][\w.]*(?:\[[^\[\]]*\])?)")


def _constant_divisors(project: Project, fn: FunctionInfo, stmt: df.Statement) -> list[str]:
    """The divisors of the statement, each with the value it is configured to, when every one is
    a fixed number (``/ cfg.batch_size`` with ``batch_size: 32``): a constant factor, like
    ``/ 2``, not the count of what was summed; else []."""
    divisors = [DIVISOR.match(stmt.text, d.end()) for d in NORMALISED.finditer(stmt.text)]
    if not divisors or None in divisors:
        return []  # `/ (n * d)`, `/ len(x)`: a divisor this does not read may be the count
    out = []
    for text in (m.group(1) for m in divisors if m is not None):
        values = values_of(project, fn, text, stmt.head.span.line)
        if not values or not all(isinstance(v.value, (int, float)) and not isinstance(v.value, bool)
                                 for v in values):
            return []
        out.append(f"`{text}` = {' or '.join(sorted({str(v.value) for v in values}))} "
                   f"({values[0].source.where})")
    return out


_LAMBDA = re.compile(r"\blambda\b[^:]*:")


def _lambda_bound(fn: FunctionInfo, stmt: df.Statement, call: Event) -> bool:
    """The call sums names the statement binds itself (a lambda's parameters): its arguments,
    or for ``(a - b).pow(2).sum()`` the names it reads, neither ``fn``'s parameters nor
    assigned in ``fn``."""
    names = [a for a in call.args if re.fullmatch(r"[A-Za-z_]\w*", a)]
    if not names and _LAMBDA.search(stmt.text):
        names = [u for u in call.uses if re.fullmatch(r"[A-Za-z_]\w*", u)]
    return bool(names) and not any(a in fn.params or df.definitions(fn, a, stmt.index)
                                   for a in names)


def _is_full_sum(call: Event) -> bool:
    """``x.sum()`` / ``torch.sum(x)`` reducing everything (not ``sum(dim=-1)``)."""
    if call.method == "sum" and call.receiver and not call.args:
        return not any(k in call.kwargs for k in ("dim", "axis"))
    if call.func.removesuffix("()") == "torch.sum" and len(call.args) == 1:
        return not any(k in call.kwargs for k in ("dim", "axis"))
    return False


def _varying_rows(project: Project, fn: FunctionInfo, stmt: df.Statement, call: Event,
                  module_flow: Optional[df.Flow]) -> Optional[str]:
    """The selection that makes the summed rows vary (``x[mask_nodes]``), looked for in what is
    summed: the receiver of ``.sum()``, the arguments of a loss called with
    ``reduction='sum'``, or, for a loss module (``module_flow``: where the module object
    flows), the arguments of every call of it."""
    if module_flow is None:
        texts = [call.receiver] if call.method == "sum" else list(call.args)
        return varying_count(project, fn, texts, stmt.index)
    for step in module_flow.steps:
        for inner in step.stmt.calls:
            if df.callee_text(inner) in step.hit or inner.func.removesuffix("()") in step.hit:
                found = varying_count(project, step.fn, list(inner.args), step.stmt.index)
                if found:
                    return found
    return None


def _moved_to(found: Finding, source: Source, why: str) -> Finding:
    """``found`` reported at the setting ``source`` that decides it, saying why and where the
    sum is."""
    return dataclasses.replace(
        found, path=source.path, line=source.line, column=1, end_line=source.line, end_column=1,
        message=f"{why}: at {found.path}:{found.line}, {found.message}",
        fix="set it to the mean reduction, or divide the sum by the number of reconstructed nodes")


# calls that build a configuration object: a `reduction=` given to them is a setting, not a loss's
CONFIG_OBJECTS = ("dict", "types.SimpleNamespace", "argparse.Namespace", "collections.namedtuple")

# a training loop calling a criterion `crit` on the masked rows (the examples below)
_CRIT_LOOP = (
    "    for g, x in loader:\n"
    "        recon, mask = model(g, x)\n"
    "        loss = crit(recon[mask], x[mask])\n"
    "        opt.zero_grad()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)


# a criterion made by a factory from the configuration, called on the masked rows (the examples:
# divided by the configured batch size, or by the count)
_CRITERION_FACTORY = (
    "import torch.nn.functional as F\n"
    "CFG = {'batch_size': 32, 'lr': 0.01}\n"
    "def make_criterion(cfg):\n"
    "    return lambda pred, target: F.mse_loss(pred, target, reduction='sum') / cfg['batch_size']\n"
    "def train(model, loader, opt):\n"
    "    crit = make_criterion(CFG)\n"
    + _CRIT_LOOP
)


# a loss function made partial with reduction='sum', called on the masked rows (the examples)
_PARTIAL_LOSS = (
    "import functools\n"
    "import torch.nn.functional as F\n"
    "def train(model, loader, opt):\n"
    "    crit = functools.partial(F.mse_loss, reduction='sum')\n"
    + _CRIT_LOOP
)


# a loss whose `reduction == "sum"` branch a configuration table decides: no configured run
# takes it, or every run does
def _configured_reduction(value: str) -> dict[str, str]:
    return {
        "losses.py": (
            "import torch.nn.functional as F\n"
            "def sce(x, y, reduction='mean'):\n"
            "    per = (1 - F.cosine_similarity(x, y)).pow(2)\n"
            "    if reduction == 'sum':\n"
            "        return per.sum()\n"
            "    return per.mean()\n"
        ),
        "config.py": f"CONFIG = {{'lr': 0.01, 'reduction': '{value}'}}\n",
        "train.py": (
            "import torch\nfrom losses import sce\nfrom config import CONFIG\n"
            "def train(model, data):\n"
            "    opt = torch.optim.Adam(model.parameters(), lr=CONFIG['lr'])\n"
            "    for g, x, mask in data:\n"
            "        loss = sce(model(g, x)[mask], x[mask], reduction=CONFIG['reduction'])\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


class UnnormalisedSumLoss(Rule):
    code = "GM401"
    name = "reduction-sum"
    fix_safety = "unsafe"
    summary = "a summed reconstruction loss reaches backward without being divided by a count"
    prefilter = ("reduction", ".sum()", "torch.sum(", "size_average")
    runs_beside = True  # beside GM101: the same data flow over every function's statements
    doc = """
## What it does
Finds loss functions and loss modules called with `reduction='sum'` (or the legacy
`size_average=False`), and reconstruction errors reduced with a full `.sum()` /
`torch.sum(...)`, whose value reaches the backward (`loss.backward()`, a scaler, a Lightning
`training_step`), across functions and files, without being divided by a count on the way
(number of masked nodes, `numel()`, batch size, `len(...)`, `mask.sum()`), when the number of
rows summed depends on the data: the values summed (followed through assignments and into the
arguments callers pass) are a mask or index selection (`x[mask]`, `pred[mask_nodes]`) or the
node data of a batched graph (`bg.ndata[...]` of a graph a loader yields). A sum over a
loader's fixed-size batch or over a whole tensor of constant size is a constant factor and is
not reported. A division by a number (`/ 2`), or by a value every configured run sets to a
fixed number (`/ cfg.batch_size` with `batch_size: 32`, a count of graphs dividing a sum over
their nodes), is no count of the rows summed: it is still reported, with the value and where it
is set. The probe confirms from the run: the weight per summed row does not shrink as the rows
grow, or, at one row count, the sum is divided by far less than the rows.

## Why is this bad?
GraphMAE's loss is taken on the masked nodes only, and their number changes with every batch (a
fraction of the nodes of every graph in the batch). A summed loss grows with that number: the
gradient scale, and so the effective learning rate of SGD, follows the batch composition; with
Adam, the summed term swamps every other (averaged) term of the loss, so the tangent and normal
components of the reconstruction are effectively dropped. The loss curve still goes down.

## Example
```python
criterion = nn.MSELoss(reduction="sum")
loss = criterion(recon[mask_nodes], x[mask_nodes])
loss.backward()
```

## Use instead
```python
criterion = nn.MSELoss()                      # mean over the reconstructed elements
loss = criterion(recon[mask_nodes], x[mask_nodes])
loss.backward()
```
or divide the sum by the count: `loss = err.sum() / mask_nodes.numel()`.

## Fix safety
Unsafe: the loss scale changes by the number of reconstructed elements; learning rates and
loss weights tuned against the summed loss must be revisited.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html
"""

    VALID = [
        # the sum branch returns only to the call passing "sum", which divides by the count; the
        # other call leaves the default (the mean), and one hands its own `reduction` on
        Valid(
            "import torch.nn.functional as F\n"
            "def sce(x, y, reduction='mean'):\n"
            "    per_node = 1 - F.cosine_similarity(x, y)\n"
            "    if reduction == 'sum':\n"
            "        return per_node.sum()\n"
            "    return per_node.mean()\n"
            "def latent(x, y, reduction='mean'):\n"
            "    return sce(x, y.detach(), reduction=reduction)\n"
            "def step(model, g, x, mask):\n"
            "    recon, pred, target = model(g, x)\n"
            "    loss = sce(recon[mask], x[mask], 'sum') / mask.numel() + sce(pred[mask], x[mask])\n"
            "    loss = loss + latent(pred[mask], target[mask])\n"
            "    loss.backward()\n"
        ),
        # a gradient smoke test sums the raw output of a (wrapped) model: no target, no error
        Valid(
            "import torch\n"
            "from torch.nn.parallel import DistributedDataParallel\n"
            "def check_grads(model, batch):\n"
            "    net = DistributedDataParallel(model)\n"
            "    loss = net(batch).sum()\n"
            "    loss.backward()\n"
        ),
        Valid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask], x[mask], reduction='sum') / mask.sum()\n"
            "    loss.backward()\n"
        ),
        Valid(
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    err = ((recon[mask] - x[mask]) ** 2).sum()\n"
            "    n = mask.sum()\n"
            "    loss = err / n\n"
            "    loss.backward()\n"
        ),
        # a sum used only for logging, and counts summed
        Valid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x, mask, log):\n"
            "    recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask], x[mask])\n"
            "    loss.backward()\n"
            "    log.info('sq err %f n %d', ((recon - x) ** 2).sum().item(), mask.sum())\n"
            "    total = F.mse_loss(recon, x, reduction='sum').item()\n"
        ),
        # normalised in the caller, in another module
        Valid({
            "losses.py": (
                "import torch.nn as nn\n"
                "class SumMSE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.crit = nn.MSELoss(reduction='sum')\n"
                "    def forward(self, pred, target):\n"
                "        return self.crit(pred, target)\n"
            ),
            "train.py": (
                "from losses import SumMSE\n"
                "def run(model, batches, opt):\n"
                "    crit = SumMSE()\n"
                "    for g, x, mask in batches:\n"
                "        loss = crit(model(g, x)[mask], x[mask]) / len(mask)\n"
                "        loss.backward()\n"
            ),
        }),
        # a margin loss summed over a loader's fixed-size batch: a constant factor
        Valid(
            "import torch.nn as nn\n"
            "class Trainer:\n"
            "    def __init__(self, model, opt, margin):\n"
            "        self.model, self.opt = model, opt\n"
            "        self.criterion = nn.MarginRankingLoss(margin, reduction='sum')\n"
            "    def train_epoch(self, loader):\n"
            "        for batch in loader:\n"
            "            pos, neg, target = batch\n"
            "            score_pos, score_neg = self.model(pos), self.model(neg)\n"
            "            loss = self.criterion(score_pos.squeeze(), score_neg.mean(dim=1), target)\n"
            "            self.opt.zero_grad()\n"
            "            loss.backward()\n"
            "            self.opt.step()\n"
        ),
        # a squared error summed over the whole training tensor, the same every epoch
        Valid(
            "import torch\n"
            "def fit(model, opt, graph, feats, pairs, epochs):\n"
            "    labels = torch.unsqueeze(pairs[:, 3], 1)\n"
            "    for _ in range(epochs):\n"
            "        scores = model(graph, feats, pairs)\n"
            "        loss = ((scores - labels) ** 2).sum()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # a BPR sum over one user's selected items: a margin between two of the model's scores
        Valid(
            "def step(model, g, emb, user_ids, item_ids, neg_ids, opt):\n"
            "    users = model(g, emb)[user_ids]\n"
            "    items = model(g, emb)\n"
            "    pos_scores = (users * items[item_ids]).sum(dim=-1)\n"
            "    neg_scores = (users * items[neg_ids]).sum(dim=-1)\n"
            "    loss = -(pos_scores - neg_scores).sigmoid().log().sum()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a BPR sum over selected users, divided by the batch size in a later, long statement
        Valid(
            "import torch.nn as nn\n"
            "def step(model, emb, users, items, opt, batch, beta):\n"
            "    pos, neg = model.predict(emb[users], emb[items])\n"
            "    bpr_loss = - nn.LogSigmoid()(pos - neg).sum()\n"
            "    reg = emb[users].norm() ** 2\n"
            "    loss = ((bpr_loss + reg * beta) / batch) + model.contrastive_loss * model.contrastive_weight "
            "+ model.meta_regularisation_loss * model.meta_regularisation_weight\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # the criterion a factory returns divides by the number of elements it is handed
        Valid(_CRITERION_FACTORY.replace("/ cfg['batch_size']", "/ pred.numel()")),
        # divided by the configured constant and, in brackets, by the count too
        Valid(_CRITERION_FACTORY.replace("/ cfg['batch_size']", "/ cfg['batch_size'] / (pred.numel())")),
        # the partial loss's sum divided by the count where it is called
        Valid(_PARTIAL_LOSS.replace("x[mask])\n", "x[mask]) / mask.sum()\n")),
        # the sum branch no configured run takes (every caller passes 'mean')
        Valid(_configured_reduction("mean")),
        # the sum branch of a conditional expression that no call takes (the default is the mean)
        Valid(
            "import torch.nn.functional as F\n"
            "def sce(x, y, reduction='mean'):\n"
            "    loss = 1 - F.cosine_similarity(x, y)\n"
            "    return loss.mean() if reduction == 'mean' else loss.sum()\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = sce(recon[mask], x[mask])\n"
            "    loss.backward()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask], x[mask], reduction='sum')\n"
            "    loss.backward()\n",
            line=4, column=45, message_contains="example.py:5",
        ),
        # divided by a constant only: still scales with the number of masked nodes
        Invalid(
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = ((recon[mask] - x[mask]) ** 2).sum() / 2\n"
            "    loss.backward()\n",
            line=3,
        ),
        # a loss module built in one file with reduction='sum', used by a Trainer in another
        Invalid({
            "losses.py": (
                "import torch.nn as nn\n"
                "class Recon(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.crit = nn.MSELoss(reduction='sum')\n"
                "    def forward(self, pred, target):\n"
                "        return self.crit(pred, target)\n"
            ),
            "trainer.py": (
                "from losses import Recon\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model, self.opt = model, opt\n"
                "        self.loss_fn = Recon()\n"
                "    def step(self, g, x, mask):\n"
                "        loss = self.loss_fn(self.model(g, x)[mask], x[mask])\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
            ),
        }, line=5, path="losses.py", message_contains="trainer.py:9"),
        # the nodes of batched graphs of varying size, summed
        Invalid(
            "import torch.nn.functional as F\n"
            "def fit(model, loader, opt):\n"
            "    for bg in loader:\n"
            "        x = bg.ndata['feat']\n"
            "        recon = model(bg, x)\n"
            "        loss = F.mse_loss(recon, x, reduction='sum')\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=6, message_contains="batched graph `bg`",
        ),
        # a loss helper that rebinds its inputs (normalised) before summing the error
        Invalid(
            "import torch.nn as nn\nimport torch.nn.functional as F\n"
            "def cos_loss(x, y):\n"
            "    x = F.normalize(x, dim=-1)\n"
            "    y = F.normalize(y, dim=-1)\n"
            "    loss = (1 - (x * y).sum(dim=-1)).pow_(2)\n"
            "    return loss.sum()\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Linear(8, 8)\n"
            "    def forward(self, x, mask_nodes):\n"
            "        return cos_loss(self.enc(x)[mask_nodes], x[mask_nodes])\n"
            "def fit(model, x, masks, opt):\n"
            "    for mask in masks:\n"
            "        loss = model(x, mask)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=7, message_contains="mask_nodes",
        ),
        # a loss module returned by a factory, called on the masked nodes in the model
        Invalid(
            "import torch.nn as nn\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Linear(8, 8)\n"
            "        self.criterion = self.setup_loss_fn()\n"
            "    def setup_loss_fn(self):\n"
            "        criterion = nn.MSELoss(reduction='sum')\n"
            "        return criterion\n"
            "    def forward(self, x, mask_nodes):\n"
            "        x_rec = self.enc(x)\n"
            "        return self.criterion(x_rec[mask_nodes], x[mask_nodes])\n"
            "def fit(model, x, masks, opt):\n"
            "    for mask in masks:\n"
            "        loss = model(x, mask)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=8, message_contains="mask_nodes",
        ),
        # the model from a factory, trained by a helper it is handed to
        Invalid({
            "models.py": (
                "import torch.nn as nn\n"
                "class PreModel(nn.Module):\n"
                "    def __init__(self, loss_fn):\n"
                "        super().__init__()\n"
                "        self.enc = nn.Linear(8, 8)\n"
                "        if loss_fn == 'mse':\n"
                "            criterion = nn.MSELoss(reduction='sum')\n"
                "        else:\n"
                "            criterion = nn.L1Loss()\n"
                "        self.criterion = criterion\n"
                "    def forward(self, x, mask_nodes):\n"
                "        return self.criterion(self.enc(x)[mask_nodes], x[mask_nodes])\n"
                "def build_model(args):\n"
                "    model = PreModel(args.loss_fn)\n"
                "    return model\n"
            ),
            "main.py": (
                "from models import build_model\n"
                "def pretrain(model, x, masks, opt):\n"
                "    for mask in masks:\n"
                "        loss = model(x, mask)\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "def main(args, x, masks, opt):\n"
                "    model = build_model(args)\n"
                "    pretrain(model, x, masks, opt)\n"
            ),
        }, path="models.py", line=7, message_contains="main.py:6"),
        # a registry of loss functions looked up by a configured name
        Invalid(
            "import torch.nn.functional as F\n"
            "def sce(pred, target):\n"
            "    return (1 - F.cosine_similarity(pred, target)).mean()\n"
            "def mse(pred, target):\n"
            "    return F.mse_loss(pred, target, reduction='sum')\n"
            "LOSSES = {'sce': sce, 'mse': mse}\n"
            "def step(model, g, x, mask, cfg):\n"
            "    recon = model(g, x)\n"
            "    loss = LOSSES[cfg['loss']](recon[mask], x[mask])\n"
            "    loss.backward()\n",
            line=5,
        ),
        # a registry filled by a decorator in another file
        Invalid({
            "losses.py": (
                "import torch.nn.functional as F\n"
                "LOSSES = {}\n"
                "def register(name):\n"
                "    def deco(fn):\n"
                "        LOSSES[name] = fn\n"
                "        return fn\n"
                "    return deco\n"
                "@register('mse')\n"
                "def mse(pred, target):\n"
                "    return F.mse_loss(pred, target, reduction='sum')\n"
            ),
            "train.py": (
                "from losses import LOSSES\n"
                "def step(model, g, x, mask, cfg, opt):\n"
                "    recon = model(g, x)\n"
                "    loss = LOSSES[cfg['loss']](recon[mask], x[mask])\n"
                "    opt.zero_grad()\n"
                "    loss.backward()\n"
                "    opt.step()\n"
            ),
        }, path="losses.py", line=10, message_contains="train.py:6"),
        # a node-level sum divided by the configured batch size (a number of graphs), in the
        # criterion a factory returns
        Invalid(_CRITERION_FACTORY, line=4, message_contains="`cfg['batch_size']` = 32"),
        # reduction='sum' bound by functools.partial, the rows given where the partial is called
        Invalid(_PARTIAL_LOSS, line=4, message_contains="rows selected by `mask`"),
        # the loss a model keeps as a functools.partial, copied by the trainer that calls it
        Invalid({
            "model.py": (
                "from functools import partial\nimport torch.nn.functional as F\nfrom torch import nn\n"
                "def sce(pred, target, alpha=2.0):\n"
                "    cos = (F.normalize(pred, dim=-1) * F.normalize(target, dim=-1)).sum(-1)\n"
                "    return (1 - cos).pow(alpha).sum()\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.lin = nn.Linear(4, 4)\n"
                "        self.criterion = partial(sce, alpha=3.0)\n"
                "    def forward(self, x, mask):\n"
                "        return self.lin(x), mask\n"
                "def build():\n"
                "    model = MAE()\n"
                "    return model\n"
            ),
            "train.py": (
                "import torch\nfrom model import build\n"
                "class Trainer:\n"
                "    def __init__(self, model):\n"
                "        self.model = model\n"
                "        self.criterion = model.criterion\n"
                "        self.opt = torch.optim.Adam(model.parameters())\n"
                "    def fit(self, data):\n"
                "        for x, mask in data:\n"
                "            out, m = self.model(x, mask)\n"
                "            loss = self.criterion(out[m], x[m])\n"
                "            self.opt.zero_grad()\n"
                "            loss.backward()\n"
                "            self.opt.step()\n"
                "Trainer(build()).fit(load())\n"
            ),
        }, path="model.py", line=6),
        # the configuration switches the sum branch on for every run: reported at the setting
        Invalid(_configured_reduction("sum"), path="config.py", line=1, message_contains="this setting"),
        # the sum reaches the backward in the wrapper a decorator factory made, divided only by
        # the factory's accumulation count (a constant)
        Invalid(
            "import torch.nn.functional as F\n"
            "def accumulate(n):\n"
            "    def deco(fn):\n"
            "        def wrapper(*args):\n"
            "            loss = fn(*args)\n"
            "            (loss / n).backward()\n"
            "            return loss\n"
            "        return wrapper\n"
            "    return deco\n"
            "def sce(x, y, reduction='mean'):\n"
            "    per_node = 1 - F.cosine_similarity(x, y)\n"
            "    if reduction == 'sum':\n"
            "        return per_node.sum()\n"
            "    return per_node.mean()\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    return sce(recon[mask], x[mask], 'sum')\n"
            "def train(model, batches):\n"
            "    run = accumulate(2)(step)\n"
            "    for g, x, mask in batches:\n"
            "        run(model, g, x, mask)\n",
            line=13, message_contains="reaches the backward at example.py:6"),
        # a notebook's parameters cell sets the reduction, a dataclass carries it to the loss:
        # reported at the setting, once (the dataclass's own `reduction=` is no loss)
        Invalid(
            "import dataclasses\nimport torch.nn.functional as F\n"
            "reduction = 'sum'\n"
            "@dataclasses.dataclass\n"
            "class Config:\n"
            "    reduction: str = 'mean'\n"
            "cfg = Config(reduction=reduction)\n"
            "def step(model, g, x, mask):\n"
            "    recon = model(g, x)\n"
            "    loss = F.mse_loss(recon[mask], x[mask], reduction=cfg.reduction)\n"
            "    loss.backward()\n",
            line=3, message_contains="this setting"),
        # a lambda summing per-node errors, called on the masked rows
        Invalid(
            "def step(model, g, x, mask):\n"
            "    mse_fn = lambda a, b: (a - b).pow(2).mean(-1).sum()\n"
            "    recon = model(g, x)\n"
            "    loss = mse_fn(recon[mask], x[mask])\n"
            "    loss.backward()\n",
            line=2, message_contains="rows selected by `mask`"),
    ]

    # -- per file: the `reduction=` arguments, for precise positions
    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is None or node.keyword.value not in ("reduction", "size_average"):
            return
        value = node.value
        read = ""  # a reduction read from configuration: its value is the project's question
        if node.keyword.value == "reduction":
            if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
                read = self.ctx.code(value)
            elif not (isinstance(value, cst.SimpleString) and value.evaluated_value == "sum"):
                return
        elif not (isinstance(value, cst.Name) and value.value == "False"):
            return
        span = self.ctx.span(node)
        self.fact((span.line, span.column, span.end_line, span.end_column, self.ctx.code(node), read))

    # -- project stage -----------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        findings: list[Finding] = []
        # a literal `reduction='sum'` passed down to a loss's parameter is judged where it is written
        literal = {(facts.path, fact[0]) for facts, fact in project.rule_facts(cls.code) if not fact[5]}
        training = Training.of(project)
        for facts, (line, col, end_line, end_col, text, read) in project.rule_facts(cls.code):
            fn = df.function_of(project, facts.path, line)
            if fn is None:
                continue
            if read:
                summed = [v for v in values_of(project, fn, read, line) if v.value == "sum"
                          and (v.source.path, v.source.line) not in literal]
                if not summed:
                    continue
                what = f"`{text}` ('sum': {summed[0].source.what} at {summed[0].source.where})"
            else:
                what = f"`{text}`"
            call = next((e for e in fn.events if e.kind == "call" and df.contains(
                e.span, Span(line, col, end_line, end_col))
                and any(k in e.kwargs for k in ("reduction", "size_average"))), None)
            stmt = df.statement_of(fn, call) if call is not None else None
            if call is None or stmt is None:
                continue
            if read in fn.params and any(not t.endswith(".__init__")
                                         for t in df.call_targets(project, fn, call)):
                continue  # handed on to a project loss (`reduction=reduction`): its sum is judged there
            mine = [c for c in df.constructed_class(project, call) if c in project.classes]
            if call.func in CONFIG_OBJECTS or mine and not any(training.is_module_class(c) for c in mine):
                continue  # a configuration object holding the setting (a dataclass), not a loss
            found = cls._judge(project, fn, stmt, call, what, Span(line, col, end_line, end_col))
            if found and read:
                found = cls._at_read_setting(found, stmt, summed)
            if found:
                findings.append(found)
        for fn in list(project.functions.values()):
            for stmt in df.statements(fn):
                for call in stmt.calls:
                    if not _is_full_sum(call) or never_runs(project, fn, call) \
                            or not cls._is_error(project, fn, stmt, call):
                        continue  # (a `reduction == "sum"` branch no configured run takes)
                    what = f"`{call.receiver}.sum()`" if call.method == "sum" else "`torch.sum(...)`"
                    found = cls._judge(project, fn, stmt, call, what, call.span)
                    if found:
                        findings.append(cls._at_setting(project, fn, call, found))
        return findings

    @staticmethod
    def _at_read_setting(found: Finding, stmt: df.Statement, summed: list) -> Finding:
        """A ``reduction=`` read whose "sum" every run gets from one setting written elsewhere
        (a configuration file, a parameters cell, an option's default): the setting is what
        to change, and every loss reading it is reported there once."""
        sources = {(v.source.path, v.source.line) for v in summed}
        source = summed[0].source
        if len(sources) != 1 or source.path == found.path and \
                stmt.head.span.line <= source.line <= stmt.head.span.end_line:
            return found
        return _moved_to(found, source, f"this setting gives a loss 'sum' as its reduction ({source.what})")

    @staticmethod
    def _at_setting(project: Project, fn: FunctionInfo, call: Event, found: Finding) -> Finding:
        """A sum under a test that a setting written elsewhere (a configuration file, a
        defaults table) turns on for every configured run, or that a configuration file turns
        on for the runs it configures: the setting is what to change."""
        setting = switched_on(project, fn, call)
        if setting is not None and (setting[1].path == fn.path or setting[1].what == LITERAL):
            setting = None
        runs = "every configured run"
        if setting is None:
            setting = set_in_file(project, fn, call)
            runs = f"the runs {setting[1].path} configures" if setting is not None else ""
        if setting is None:
            # the test reads parameters: the calls that switch it on, each by the same setting
            # written elsewhere (`sce(x, y, self.reduction)` where the defaults say "sum")
            through = [switched_on_through(project, fn, call, caller, site)
                       for caller, site in df.callers_of(project, fn.qualname)
                       if returns_through(project, fn, call, caller, site)]
            sources = {(s[1].path, s[1].line) for s in through if s is not None}
            if through and None not in through and len(sources) == 1 \
                    and through[0][1].path != fn.path and through[0][1].what != LITERAL:
                setting, runs = through[0], "the runs that reach it"
        if setting is None:
            return found
        test, source = setting
        return _moved_to(found, source, f"this setting makes `{normalise(test)}` hold on {runs} ({source.what})")

    @classmethod
    def _is_error(cls, project: Project, fn: FunctionInfo, stmt: df.Statement, call: Event) -> bool:
        """The summed value is a reconstruction error derived from a module's output."""
        operand = call.receiver if call.method == "sum" else call.args[0]
        if _lambda_bound(fn, stmt, call):  # what is summed is what the lambda is called with
            return bool(ERROR_TEXT.search(operand))
        names = [u for u in call.uses if df.mentions(operand, u)]
        # what the summed names were computed from: the right-hand sides, and never a module
        # construction (`net = DistributedDataParallel(...)` makes `net(x).sum()` no error)
        texts = [operand] + [
            d.text.split("=", 1)[-1] for n in names for d in df.definitions(fn, n, stmt.index)
            if not any(df.constructed_class(project, c) for c in d.calls)
        ]
        if not any(ERROR_TEXT.search(t) for t in texts) or _margin_only(project, fn, texts, stmt.index):
            return False
        if names and all(fixed_size_name(fn, n, stmt.index) for n in names):
            return False  # a sum over a feature x feature matrix: no count to divide by
        inner = [c for c in stmt.calls if c is not call and df.contains(call.span, c.span)]
        if any(df.is_module_output(project, fn, c) for c in inner):
            return True
        return df.derives_from_module(project, fn, names, stmt.index) is not None

    @classmethod
    def _judge(cls, project: Project, fn: FunctionInfo, stmt: df.Statement, call: Event, what: str,
               span: Span) -> Optional[Finding]:
        def normalised(f: FunctionInfo, s: df.Statement, hit: set[str]) -> bool:
            return _normalised(f, s, hit) and not _constant_divisors(project, f, s)

        if normalised(fn, stmt, set()) or df.is_scalar_conversion(stmt):
            return None
        func = call.func.removesuffix("()")
        constructs = bool(df.constructed_class(project, call)) and not df.LOSS_FUNC_RE.match(func) \
            or func.rsplit(".", 1)[-1].endswith("Loss") or func in PARTIALS
        if constructs:  # a loss module or a partial loss: follow the object to where it is called
            names = stmt.targets
            flow = df.flows_to(project, fn, names, stmt.index, stop=normalised) if names else df.Flow()
        else:
            # a sum under `if reduction == "sum":` returns only to the calls passing "sum"
            flow = df.flows_from(project, fn, call, stop=normalised,
                                 returns_to=lambda *site: returns_through(project, *site))
        if not flow.sinks:
            return None
        selection = _varying_rows(project, fn, stmt, call, flow if constructs else None)
        if selection is None and not constructs and _lambda_bound(fn, stmt, call):
            # `lambda pred, target: F.mse_loss(pred, target, reduction="sum")`: the rows are
            # those of the arguments where the returned callable is called
            selection = _varying_rows(project, fn, stmt, call, flow)
        if selection is None:
            return None  # a fixed-size batch or a whole tensor: the sum is a constant factor
        sink = flow.sinks[0]
        constants = _constant_divisors(project, fn, stmt) if _normalised(fn, stmt, set()) else []
        divided = (f"divided only by {' and '.join(constants)}, a fixed number and not a count"
                   if constants else "without being divided by a count")
        message = (
            f"{what} sums the reconstruction error over {selection}, whose number depends on the "
            f"data, and the sum reaches the backward at {sink.where} "
            f"{divided}: the loss and its gradient grow with the number "
            f"of selected (masked) nodes"
        )
        fix = ("use the default `reduction='mean'`, or divide the sum by the number of reconstructed "
               "elements (`mask_nodes.numel()`, `mask.sum()`, the batch size) before backward")
        return cls.make_finding(fn.path, span, message, fix)

    # -- autofix -----------------------------------------------------------------------------------
    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """``reduction='sum'`` (or ``size_average=False``) -> ``reduction='mean'``; a full
        ``x.sum()`` / ``torch.sum(x)`` -> ``x.mean()`` / ``torch.mean(x)``: the error divided by
        the number of its elements."""
        src = fixer.source(finding.path)
        node = src.node_at(finding, cst.Arg, cst.Call) if src else None
        if src is None or node is None:
            return None
        if isinstance(node, cst.Arg) and node.keyword is not None:
            quote = node.value.quote if isinstance(node.value, cst.SimpleString) else "'"
            mean = node.with_changes(keyword=cst.Name("reduction"),
                                     value=cst.SimpleString(f"{quote}mean{quote}"))
            return Fix("use `reduction='mean'`", [src.replace(node, mean)])
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "sum":
            return Fix("average instead of summing: `.sum()` -> `.mean()`",
                       [src.replace(node.func.attr, cst.Name("mean"))])
        return None

    # -- runtime -----------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        """From the sums the backpropagated loss contained at the finding's lines
        (``Evidence.sums_at``): confirmed when the loss grows with the rows summed, refuted when
        it divides the sum by their count; else from the loss calls' reduction."""
        sites = evidence.sums_at(finding.path, finding.line, finding.end_line)
        if sites:
            growing = [s for s in sites if s.grows]
            return Verdict(Status.CONFIRMED if growing else Status.REFUTED,
                           [s.why + (": the loss grows with them" if s.grows else
                                     ": the loss divides the sum by its count")
                            for s in (growing or sites)[:2]])
        losses = [lc for lc in evidence.losses
                  if lc.path == finding.path and finding.line <= lc.line <= finding.end_line]
        if losses:
            summed = [lc for lc in losses if lc.reduction == "sum"]
            if summed:
                sizes = sorted({lc.numel for lc in summed if lc.numel})
                return Verdict(Status.CONFIRMED, [
                    f"loss called with reduction='sum' {len(summed)} times over "
                    f"{sizes[0]}..{sizes[-1]} elements" if sizes else "loss called with reduction='sum'"
                ])
            return Verdict(Status.REFUTED, [f"loss ran with reduction='{losses[0].reduction}'"])
        if not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        return None
