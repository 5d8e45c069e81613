"""GM502 per-batch-normalisation: features standardised with the statistics of the current batch
(or sample) instead of the dataset's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.dataflow import derives_from_module, function_of, statement_at
from auditor.static.facts import FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.stages import COLLATE, GETITEM, TRANSFORM, per_batch_functions, stage_of
from auditor.static.training import Training

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

CENTER = {"mean", "nanmean", "median", "min", "amin"}
SPREAD = {"std", "nanstd", "var", "max", "amax", "norm"}
_LIBS = ("torch.", "numpy.")


@dataclass
class Normalisation:
    span: Span
    what: str  # the expression, shortened
    base: str = ""  # the name of the tensor normalised (``x`` of ``x[:, :3]``), when known


def _key(ctx, node: cst.CSTNode) -> str:
    return "".join(ctx.code(node, 200).split())


def _root(key: str) -> str:
    """``x[...,:3]`` -> ``x``: the tensor a subscripted view belongs to."""
    return key.split("[")[0]


def _is_zero(node: Optional[cst.BaseExpression]) -> bool:
    if node is None:
        return True  # no axis: statistics over the whole batch tensor
    if isinstance(node, (cst.Tuple, cst.List)) and node.elements:
        node = node.elements[0].value
    return isinstance(node, cst.Integer) and node.value == "0"


def _axis_arg(call: cst.Call, positional: int) -> tuple[bool, Optional[cst.BaseExpression]]:
    """(given, value) of the reduction axis: keyword dim/axis or the ``positional``-th argument."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("dim", "axis"):
            return True, arg.value
    plain = [a for a in call.args if a.keyword is None]
    if len(plain) > positional:
        return True, plain[positional].value
    return False, None


# what keeps a statistic the statistic: a floor against division by zero, a cast, a move
_KEEPS = {"clamp", "clamp_min", "clip", "float", "double", "to", "detach", "sqrt"}


def _unwrap(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x.min(0)[0]`` / ``x.max(0).values`` / ``x.std(0).clamp_min(eps)`` / ``x.std(0) + eps``
    -> the reduction call."""
    if isinstance(node, cst.Subscript):
        return node.value
    if isinstance(node, cst.Attribute) and node.attr.value in ("values", "data"):
        return node.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in _KEEPS:
        return _unwrap(node.func.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) \
            and isinstance(node.right, (cst.Float, cst.Integer, cst.Name)):
        return _unwrap(node.left)
    return node


# a collate object that standardises the batched features (`{normalise}`), built from the
# training split and passed by name
# statistics computed by a helper: once over the training split (right), or by the collate
# function over each batch (`{stats}`)
_STATS_HELPER = (
    "import dgl\n"
    "import torch\n"
    "def feature_stats(graphs):\n"
    "    x = torch.cat([g.ndata['x'] for g in graphs], 0)\n"
    "    return {{'mean': x.mean(0), 'std': x.std(0) + 1e-6}}\n"
    "def normalize(x, stats):\n"
    "    return (x - stats['mean']) / stats['std']\n"
    "def make_collate(train_graphs):\n"
    "    stats = feature_stats(train_graphs)\n"
    "    def collate(items):\n"
    "        bg = dgl.batch(items)\n"
    "        bg.ndata['x'] = normalize(bg.ndata['x'],\n"
    "                                  {stats})\n"
    "        return bg\n"
    "    return collate\n"
)


_COLLATE_OBJECT = (
    "import dgl\nimport torch\n"
    "class Normalizer:\n"
    "    def __init__(self, graphs):\n"
    "        feats = torch.cat([g.ndata['feat'] for g in graphs])\n"
    "        self.mean, self.std = feats.mean(0), feats.std(0).clamp_min(1e-6)\n"
    "    def __call__(self, graphs):\n"
    "        bg = dgl.batch(graphs)\n"
    "        feat = bg.ndata['feat']\n"
    "        {normalise}\n"
    "        return bg\n"
    "def loaders(train_set):\n"
    "    norm = Normalizer(train_set.graphs)\n"
    "    return dgl.dataloading.GraphDataLoader(train_set, batch_size=32, collate_fn=norm)\n"
)


class PerBatchNormalisation(Rule):
    code = "GM502"
    name = "per-batch-normalisation"
    severity = Severity.ERROR
    summary = "features normalised with per-batch statistics instead of dataset statistics"
    prefilter = (".mean(", ".std(", ".var(", "fit_transform", "torch.mean", "np.mean", ".min(0",
                 ".amin(")
    doc = """
## What it does
Finds features standardised with statistics of the data at hand — `x - x.mean(0)`,
`(x - x.mean(dim=0)) / x.std(dim=0)`, `x /= x.std(0)`, a min-max over dimension 0,
`scaler.fit_transform(batch)` — in code that runs per batch or per sample while training: a
collate function, a dataset's `__getitem__` or transform, a module's `forward`, or the training
step itself (anything it calls before the backward). The statistics must be taken over the first
(node / batch) dimension, or over the whole tensor; per-point normalisation over another
dimension (`dim=-1`) is not reported.

Severity: an error in a collate function, a forward or the training step (statistics of the batch:
they depend on which graphs were batched together); a warning in `__getitem__` and transforms,
where each sample is normalised by its own statistics — a design choice only if the reference and
the evaluation do exactly the same.

Statistics computed once over the dataset (a `compute_stats()` called from a dataset's
constructor, the `NormStats` of the fixtures), `nn.LayerNorm` / `nn.BatchNorm1d` modules and
evaluation metrics are not reported; nor is the model's own normalisation of its hidden values:
a module's output standardised by the method (CCA-SSG whitens its embeddings), or a hand-written
normalisation layer that other modules of the project build, applied to their activations.

## Why is this bad?
GraphMAE reconstructs the masked nodes' coordinates in the units of its input. With per-batch
statistics those units change from batch to batch: the same part is shifted and scaled differently
depending on which other parts share its batch (and with `batch_size=1`, by its own centroid), so
the decoder is asked for a moving target and the reconstructions come out scattered while the loss,
measured in each batch's own units, goes down normally. Held-out data normalised with the training
set's statistics is then in different units from anything the model saw.

## Example
```python
def collate(graphs):
    g = dgl.batch(graphs)
    x = g.ndata["feat"]
    g.ndata["feat"] = (x - x.mean(dim=0)) / x.std(dim=0)
    return g
```

## Use instead
```python
stats = train_set.compute_stats()  # once, over the training split

def collate(graphs):
    g = dgl.batch(graphs)
    g.ndata["feat"] = (g.ndata["feat"] - stats.mean) / stats.std
    return g
```

## Fix safety
No automatic fix: the dataset statistics have to be computed and passed in.

## References
- Hou et al., GraphMAE: Self-Supervised Masked Graph Autoencoders, KDD 2022.
- https://scikit-learn.org/stable/modules/preprocessing.html#standardization-or-mean-removal-and-variance-scaling
"""

    VALID = [
        # dataset statistics, computed once in the constructor and applied per sample
        Valid(
            "import numpy as np\nfrom torch.utils.data import Dataset\n\nclass Parts(Dataset):\n"
            "    def __init__(self, parts):\n        self.parts = parts\n"
            "        xyz = np.concatenate(parts)\n        self.mean = xyz.mean(axis=0)\n"
            "        self.std = xyz.std(axis=0)\n\n    def __getitem__(self, i):\n"
            "        return (self.parts[i] - self.mean) / self.std\n"
        ),
        # per-point normalisation over the last dimension
        Valid(
            "import dgl\n\ndef collate(graphs):\n    g = dgl.batch(graphs)\n    x = g.ndata['feat']\n"
            "    g.ndata['feat'] = x - x.mean(dim=-1, keepdim=True)\n    return g\n"
        ),
        # an evaluation metric: the mean baseline of the targets
        Valid(
            "def metrics(pred, target):\n    mean = target.mean(dim=0, keepdim=True)\n"
            "    return (mean - target).norm(dim=-1).mean()\n"
        ),
        # a module does the normalising
        Valid(
            "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.norm = nn.LayerNorm(16)\n\n"
            "    def forward(self, x):\n        return self.norm(x)\n"
        ),
        # the method standardises its embeddings (CCA-SSG); a hand-written LayerNorm in the encoder
        Valid(
            "import torch\nfrom torch import nn\n\nclass LayerNorm(nn.Module):\n"
            "    def __init__(self, d):\n        super().__init__()\n"
            "        self.weight = nn.Parameter(torch.ones(d))\n"
            "    def forward(self, x):\n        x = x - x.mean()\n"
            "        return x / (x.std() + 1e-5) * self.weight\n\n"
            "class CCA(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.lin = nn.Linear(8, 8)\n        self.norm = LayerNorm(8)\n"
            "    def forward(self, x1, x2):\n        h1 = self.norm(self.lin(x1))\n"
            "        h2 = self.norm(self.lin(x2))\n"
            "        z1 = (h1 - h1.mean(0)) / h1.std(0)\n        z2 = (h2 - h2.mean(0)) / h2.std(0)\n"
            "        return (z1.T @ z2).pow(2).sum()\n"
        ),
        # one-off preprocessing script, not per batch
        Valid("import numpy as np\nx = np.load('a.npy')\nx = (x - x.mean(0)) / x.std(0)\nnp.save('b.npy', x)\n"),
        # the same collate object with the training split's statistics
        Valid({
            "data.py": _COLLATE_OBJECT.format(normalise="bg.ndata['x'] = (feat - self.mean) / self.std"),
        }),
        # the collate function applies the training split's statistics the helper computed once
        Valid({"data.py": _STATS_HELPER.format(stats="stats")}),
    ]
    INVALID = [
        # the model standardises the input features it is called with
        Invalid(
            "import torch\nfrom torch import nn\n\nclass MAE(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.enc = nn.Linear(9, 9)\n"
            "    def forward(self, x):\n        x = (x - x.mean(0)) / x.std(0)\n"
            "        return (self.enc(x) - x).pow(2).mean()\n\n"
            "def train(model, loader, opt):\n    for x in loader:\n        loss = model(x)\n"
            "        loss.backward()\n        opt.step()\n",
            line=9,
        ),
        Invalid(
            "import dgl\n\ndef collate(graphs):\n    g = dgl.batch(graphs)\n    x = g.ndata['feat']\n"
            "    g.ndata['feat'] = (x - x.mean(dim=0)) / x.std(dim=0)\n    return g\n",
            line=6, column=23,
        ),
        # the batches of a library dataset's loader (a `...Dataset` class is no module: what its
        # split indexes is the data, not a model's output)
        Invalid(
            "import torch\nfrom ogb.graphproppred import DglGraphPropPredDataset, collate_dgl\n"
            "from torch.utils.data import DataLoader\n"
            "def train(model, loader, opt):\n"
            "    for bg, labels in loader:\n"
            "        e = bg.edata['feat']\n"
            "        e = (e - e.mean(0)) / (e.std(0) + 1e-6)\n"
            "        loss = torch.nn.functional.cross_entropy(model(bg, e), labels)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "def main(model, opt):\n"
            "    dataset = DglGraphPropPredDataset(name='ogbg-ppa')\n"
            "    split = dataset.get_idx_split()\n"
            "    loader = DataLoader(dataset[split['train']], batch_size=32, collate_fn=collate_dgl)\n"
            "    train(model, loader, opt)\n",
            line=7,
        ),
        Invalid(
            "import torch\n\ndef train(model, loader, opt):\n    for g in loader:\n"
            "        x = g.ndata['feat']\n        mu = x.mean(0, keepdim=True)\n        sd = x.std(0)\n"
            "        x = (x - mu) / sd\n        loss = model(g, x)\n        loss.backward()\n"
            "        opt.step()\n",
            line=8,
        ),
        Invalid(
            "from torch.utils.data import Dataset\n\nclass Parts(Dataset):\n"
            "    def __getitem__(self, i):\n        pts = self.parts[i]\n"
            "        pts -= pts.mean(axis=0)\n        return pts\n",
            line=6, message_contains="sample",
        ),
        # the normalising helper lives in another file; the training step calls it
        Invalid(
            {
                "prep.py": "def standardise(x):\n    return (x - x.mean(0)) / (x.std(0) + 1e-6)\n",
                "train.py": "from prep import standardise\n\ndef step(model, g, opt):\n"
                "    x = standardise(g.ndata['feat'])\n    loss = model(g, x)\n    loss.backward()\n"
                "    opt.step()\n",
            },
            line=2, path="prep.py",
        ),
        Invalid(
            "from sklearn.preprocessing import StandardScaler\n\ndef collate_fn(batch):\n"
            "    feats = StandardScaler().fit_transform(batch)\n    return feats\n",
            line=4,
        ),
        # a collate object standardising each batch with the batch's own statistics
        Invalid({
            "data.py": _COLLATE_OBJECT.format(
                normalise="mean, std = feat.mean(0), feat.std(0).clamp_min(1e-6)\n"
                          "        bg.ndata['x'] = (feat - mean) / std"),
        }, path="data.py", line=11),
        # the statistics helper that gives the training split's statistics, handed the batch
        Invalid({"data.py": _STATS_HELPER.format(stats="feature_stats(items)")}, path="data.py", line=13,
                message_contains="statistics of the current batch"),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bound: list[dict[str, tuple[str, str]]] = [{}]  # per function: name -> (base, stat)

    # -- scopes and bindings ---------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.bound.pop()

    def _reduction(self, node: cst.BaseExpression) -> Optional[tuple[str, str]]:
        """(base, stat) when ``node`` is a reduction over dim 0 (or all dims) of ``base``."""
        node = _unwrap(node)
        if isinstance(node, cst.Name):
            return self.bound[-1].get(node.value)
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return None
        stat = node.func.attr.value
        if stat not in CENTER | SPREAD:
            return None
        qualified = self.ctx.qualify(node.func)
        if qualified.startswith(_LIBS) and qualified.rsplit(".", 1)[-1] == stat:
            if not node.args or node.args[0].keyword is not None:
                return None
            base = node.args[0].value
            given, axis = _axis_arg(node, 1)
        else:
            base = node.func.value
            given, axis = _axis_arg(node, 0)
        if stat == "norm" and not given:
            return None  # a vector norm, not a statistic
        if not _is_zero(axis):
            return None
        return _key(self.ctx, base), stat

    def _same(self, base: str, node: cst.BaseExpression) -> bool:
        return _root(_key(self.ctx, node)) == _root(base)

    def _contains_spread(self, node: cst.CSTNode, base: str) -> bool:
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, cst.BaseExpression):
                red = self._reduction(cur)
                # std/var, or a range `x.max(0) - x.min(0)`, of the same tensor
                if red is not None and red[1] in SPREAD | {"min", "amin"} and _root(red[0]) == _root(base):
                    return True
            stack.extend(cur.children)
        return False

    def _centered(self, node: cst.BaseExpression) -> Optional[str]:
        """The base of ``x - center(x)``, else None."""
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            red = self._reduction(node.right)
            if red is not None and red[1] in CENTER and self._same(red[0], node.left):
                return red[0]
        return None

    def _normalised(self, node: cst.BaseExpression) -> Optional[str]:
        """The tensor ``node`` standardises with its own statistics, else None."""
        centered = self._centered(node)
        if centered is not None:
            return centered
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            base = self._centered(node.left) or _key(self.ctx, node.left)
            return base if self._contains_spread(node.right, base) else None
        return None

    def _check_value(self, node: Optional[cst.BaseExpression]) -> None:
        base = self._normalised(node) if node is not None else None
        if node is not None and base is not None:
            self.fact(Normalisation(self.ctx.span(node), self.ctx.code(node, 80), _root(base)))

    # -- statements ------------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        self._check_value(node.value)
        if len(node.targets) != 1:
            return
        target, value = node.targets[0].target, node.value
        # `mean, std = x.mean(0), x.std(0)`: each name with its own value
        pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)] \
            if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) \
            and len(target.elements) == len(value.elements) else [(target, value)]
        for name, v in pairs:
            if not isinstance(name, cst.Name):
                continue
            red = self._reduction(v)
            if red is not None:
                self.bound[-1][name.value] = red
            else:
                self.bound[-1].pop(name.value, None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        red = self._reduction(node.value)
        if red is None or not self._same(red[0], node.target):
            return
        if (isinstance(node.operator, cst.SubtractAssign) and red[1] in CENTER) or (
            isinstance(node.operator, cst.DivideAssign) and red[1] in SPREAD
        ):
            self.fact(Normalisation(self.ctx.span(node), self.ctx.code(node, 80), _root(red[0])))

    def visit_Return(self, node: cst.Return) -> None:
        self._check_value(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            self._check_value(arg.value)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "fit_transform":
            self.fact(Normalisation(self.ctx.span(node), self.ctx.code(node, 80)))

    # -- project stage ---------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        facts = list(project.rule_facts(cls.code))
        out = cls._statistics_of_the_batch(project)
        for file, norm in facts:
            fn = function_of(project, file.path, norm.span.line)
            stage = stage_of(project, fn.qualname) if fn is not None else None
            if stage is None or (fn is not None and _model_internal(project, fn, norm)):
                continue
            where = {"getitem": "`__getitem__`", "collate": "the collate function",
                     "transform": "a per-sample transform", "forward": "a module's forward",
                     "train_step": "the training step"}[stage]
            if stage in (GETITEM, TRANSFORM):
                message = (f"`{norm.what}` normalises each sample with its own statistics in "
                           f"{where}: every part ends up in different units, unlike statistics "
                           "computed once over the training split")
            else:
                message = (f"`{norm.what}` normalises with the statistics of the current batch in "
                           f"{where} (`{fn.display}`): the units change with the batch's "
                           "composition, so the reconstruction target moves from batch to batch")
            finding = cls.make_finding(
                file.path, norm.span, message,
                fix="compute mean and std once over the training split (as a dataset attribute) "
                "and apply those everywhere: training, evaluation and the reference script",
            )
            if stage in (GETITEM, TRANSFORM):
                finding.severity = Severity.WARNING
            out.append(finding)
        return out

    @classmethod
    def _statistics_of_the_batch(cls, project: Project) -> list[Finding]:
        """A collate function handing its batch to a project helper that returns the batch's
        statistics (``normalize(x, feature_stats(items))``, where the same helper gives the
        training split's statistics elsewhere): reported at the call."""
        out: list[Finding] = []
        for qual, stage in per_batch_functions(project).items():
            fn = project.functions.get(qual)
            if stage != COLLATE or fn is None or project.returned_closures(qual):
                continue  # a factory (`make_collate`) runs once: the function it returns per batch
            for e in fn.events:
                if e.kind != "call" or not e.args or e.args[0] not in fn.params:
                    continue
                helper = next((h for t in project.resolve_call(e, fn)
                               if (h := project.function(t)) is not None and _returns_statistics(h)),
                              None)
                if helper is None:
                    continue
                out.append(cls.make_finding(
                    fn.path, e.span,
                    f"`{e.func.rsplit('.', 1)[-1]}({e.args[0]}{', ...' if len(e.args) > 1 else ''})` computes the statistics of the current batch in "
                    f"the collate function (`{fn.display}`), and `{helper.display}` returns its "
                    "mean and spread: normalised with them, the units change with the batch's "
                    "composition, so the reconstruction target moves from batch to batch",
                    fix="compute the statistics once over the training split and pass those to "
                    "the collate function"))
        return out

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """From the statistics of the feature matrices entering the model's training forwards
        (first batches): with per-batch (or per-sample) statistics, the normalised columns have
        the same batch mean (or std, min, max) in every batch, while dataset statistics leave
        them varying from batch to batch. Refuted when the line ran and three or more batches
        show no such column."""
        if not evidence:
            return None
        calls = evidence.hits(finding.path, finding.line, finding.end_line)
        if not calls:
            return Verdict(Status.UNEXERCISED, ["the normalisation never ran"])
        pinned = evidence.pinned_inputs()
        if pinned:
            return Verdict(Status.CONFIRMED, [f"ran {calls}x while training",
                                              *(p.summary() for p in pinned[:2])])
        batches = max((len(v) for v in _batches(evidence).values()), default=0)
        if batches >= 3:
            return Verdict(Status.REFUTED, [
                f"ran {calls}x, but over {batches} training batches no input column has batch "
                "statistics pinned the way per-batch normalisation pins them"])
        return None


_STAT = r"\.{}\(\s*(0|dim\s*=\s*0|axis\s*=\s*0)\s*[,)]"
_RETURNED_CENTER = re.compile(_STAT.format("(mean|nanmean|median)"))
_RETURNED_SPREAD = re.compile(_STAT.format("(std|nanstd|var)"))


def _returns_statistics(fn: FunctionInfo) -> bool:
    """``fn`` returns column statistics: a mean and a spread over dim 0, in its return."""
    return any(e.kind == "return" and _RETURNED_CENTER.search(e.text) and _RETURNED_SPREAD.search(e.text)
               for e in fn.events)


def _model_internal(project: Project, fn: FunctionInfo, norm: Normalisation) -> bool:
    """The tensor standardised is the model's own, not the input features: a module's output
    (embeddings whitened by the method's objective, as CCA-SSG does), or the input of a layer
    that other modules of the project build (a hand-written LayerNorm on hidden activations).
    Either is part of the model, computed the same way at training and at evaluation."""
    stmt = statement_at(fn, norm.span.line)
    if not norm.base or stmt is None:
        return False
    if derives_from_module(project, fn, [norm.base], stmt.index) is not None:
        return True
    if fn.name != "forward" or norm.base not in fn.params or not fn.class_name:
        return False
    training = Training.of(project)
    return any(cls != fn.class_name and training.contains_class(cls, fn.class_name)
               for cls in list(project.classes))


def _batches(evidence: Evidence) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for x in evidence.inputs:
        out.setdefault((x.pid, x.module, x.input), []).append(x)
    return out
