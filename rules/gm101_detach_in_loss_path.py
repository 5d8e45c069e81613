"""GM101 detach-in-loss-path: a prediction cut from the autograd graph before the loss."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Status
from auditor.fix import Fix, Fixer
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static import dataflow as df
from auditor.static.context import FileContext, dotted
from auditor.static.facts import Event, FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.training import NON_DIFFERENTIABLE, Training, detached_text
from auditor.static.values import NUMBER, kind_at

NO_GRAD = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
           "torch.autograd.grad_mode.no_grad")
CUTS = ("detach", "detach_")
# Each judgement follows the function's data flow (linear in its size): a generated function with
# thousands of stop-gradients (one 180 KB line of `model(a).detach()`) would make the stage
# quadratic. Real training code has a handful; past these many the rest go unjudged, and the
# file is reported as truncated (an `errors` entry), never silently.
MAX_CUTS_PER_FUNCTION = 128
STOP_GRADIENT_NAME = re.compile(r"stop|(^|_)sg(_|$)|detach|no_?grad", re.I)
MAX_CUTS_PER_STATEMENT = 8  # each judgement also scans its statement's calls


def _under_no_grad(context: Iterable[str]) -> Optional[str]:
    for item in context:
        if item.removesuffix("()") in NO_GRAD:
            return item.removesuffix("()")
    return None


# `x.data`, not the `data` module of dgl / torch.utils / torch_geometric. The literal comes
# first: the search then jumps between its occurrences, not trying lookbehinds at every position
_DATA_ATTRIBUTE = re.compile(r"\.data\b(?<!dgl\.data)(?<!utils\.data)(?<!geometric\.data)(?!set|loader)")


# a DGL graph's node and edge views, whose `.data` is the feature frame (`g.nodes["paper"].data`)
DGL_VIEWS = ("nodes", "edges", "srcnodes", "dstnodes")

# what a tensor is asked for that is no tensor: `p.data.size()` cuts nothing that flows on
SHAPE_QUERIES = ("size", "shape", "numel", "nelement", "dim", "ndim", "dtype", "device", "is_cuda")

# a GraphMAE2-style step: a reconstruction term and a latent term against an EMA-like target,
# the stop-gradient written as a helper (lines: the helper's cut 6, the decoder's input 18, the
# latent term 20)
_TWO_TERMS = (
    "import torch.nn as nn\nimport torch.nn.functional as F\n"
    "def stopgrad(t):\n    return t.detach()\n"
    "def sce(x, y):\n"
    "    x = F.normalize({x}, dim=-1)\n"
    "    y = F.normalize(y, dim=-1)\n"
    "    return (1 - (x * y).sum(-1)).pow(2).mean()\n"
    "class MAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = nn.Linear(8, 8)\n"
    "        self.decoder = nn.Linear(8, 8)\n"
    "        self.predictor = nn.Linear(8, 8)\n"
    "        self.teacher = nn.Linear(8, 8)\n"
    "    def forward(self, x, mask):\n"
    "        h = self.encoder(x * mask)\n"
    "        recon = self.decoder({h})\n"
    "        target = self.teacher(x).detach()\n"
    "        lat = sce({pred}, {target})\n"
    "        return sce(recon[mask], x[mask]) + lat\n"
    "def train(model, x, mask, opt):\n"
    "    loss = model(x, mask)\n"
    "    loss.backward()\n"
)
_TWO_TERMS_OK = dict(x="x", h="h", pred="self.predictor(h)", target="stopgrad(target)")


class DetachInLossPath(Rule):
    code = "GM101"
    name = "detach-in-loss-path"
    fix_safety = "unsafe"
    summary = "a module's output is detached on its way into the loss"
    prefilter = (".detach(", ".detach_(")
    runs_beside = True  # the loss-path data flow: the stage's heaviest query

    @classmethod
    def matches_text(cls, text: str) -> bool:
        return any(p in text for p in cls.prefilter) or bool(_DATA_ATTRIBUTE.search(text))
    doc = """
## What it does
Finds `.detach()`, `.detach_()` and `.data`, when the value comes from a module's output (a call
of an `nn.Module`, a `self.<submodule>(...)`, a model method) and flows, through assignments,
returns, arguments and attributes, across functions and files, into the loss that is
backpropagated (`loss.backward()`, `scaler.scale(loss).backward()`, `torch.autograd.backward`, a
Lightning `training_step`), and the cut is the only way from that module to the loss.
(Gradients turned off with `torch.no_grad()` / `inference_mode` are GM102's.)

A call of a project function named for stopping the gradient that only returns its argument
detached (`def stopgrad(t): return t.detach()`) is a cut where it is called. A prediction
detached inside a loss helper makes that term dead even when it is added to other, live terms. And where another term (a latent
prediction) still reaches the encoder, a cut before the decoder is still reported when the
decoded value is compared with the encoder's own input: the reconstruction no longer trains it.

It stays silent when the detached value is a *target*: it meets a prediction that still carries
gradient (an EMA/teacher target, a stop-gradient branch as in BYOL/SimSiam, an integer or argmax
label), and when it only goes to `.item()`, `.cpu().numpy()`, logging, metrics or lists kept for
plotting. It stays silent too when the module still reaches the loss with its gradient by
another path (a stop-gradient on a scale or an attention weight: `bw = d.data.mean()` then
`exp(-d / bw)`), and when the optimizers stepped after that backward hold only other modules'
parameters (a linear probe trained on frozen embeddings).

## Why is this bad?
GraphMAE learns by reconstructing the masked nodes' features from the graph. When the encoder's
embedding or the decoder's reconstruction is detached before the loss, the loss still goes down
(what remains of the graph, e.g. the decoder alone or nothing at all, is fitted), but the
parameters before the cut receive no gradient: the encoder stays at its random initialisation and
the reconstructions look scattered, while shapes, masks and value ranges all look fine.

## Example
```python
import torch.nn.functional as F
from torch import nn


class GraphMAE(nn.Module):
    def forward(self, g, x, mask):
        enc_rep = self.encoder(g, x)
        rep = self.encoder_to_decoder(enc_rep.detach())   # the encoder never learns
        recon = self.decoder(g, rep)
        return F.mse_loss(recon[mask], x[mask])


def train_step(model, optimizer, g, x, mask):
    loss = model(g, x, mask)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Use instead
```python
import torch.nn.functional as F
from torch import nn


class GraphMAE(nn.Module):
    def forward(self, g, x, mask):
        enc_rep = self.encoder(g, x)
        rep = self.encoder_to_decoder(enc_rep)
        recon = self.decoder(g, rep)
        return F.mse_loss(recon[mask], x[mask])


def train_step(model, optimizer, g, x, mask):
    loss = model(g, x, mask)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```
If a stop-gradient was intended (a teacher target), detach the *target*, never the prediction.

## Fix safety
Unsafe: removing the detach changes what is trained (and may raise the memory of the step);
review that the value was not meant to be a frozen target.

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html
- Hou et al., "GraphMAE: Self-Supervised Masked Graph Autoencoders", KDD 2022
"""

    VALID = [
        # the stop-gradient helper applied to the teacher's target
        Valid(_TWO_TERMS.format(**_TWO_TERMS_OK)),
        # detached target from a teacher: the student's output still carries gradient
        Valid(
            "import torch.nn.functional as F\n"
            "def step(student, teacher, g, x, opt):\n"
            "    target = teacher(g, x).detach()\n"
            "    pred = student(g, x)\n"
            "    loss = F.mse_loss(pred, target)\n"
            "    loss.backward()\n"
        ),
        # metrics and logging only
        Valid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x, opt, history):\n"
            "    pred = model(g, x)\n"
            "    loss = F.mse_loss(pred, x)\n"
            "    loss.backward()\n"
            "    history.append(pred.detach().cpu().numpy())\n"
            "    err = (pred.detach() - x).abs().mean().item()\n"
            "    print(loss.detach().item(), err)\n"
        ),
        # detaching an input (no parameter's gradient to cut)
        Valid(
            "import torch.nn.functional as F\n"
            "def step(model, g, opt):\n"
            "    x = g.ndata['feat'].detach()\n"
            "    loss = F.mse_loss(model(g, x), x)\n"
            "    loss.backward()\n"
        ),
        # evaluation under no_grad: never reaches a backward
        Valid(
            "import torch\n"
            "def evaluate(model, loader):\n"
            "    preds = []\n"
            "    with torch.no_grad():\n"
            "        for g in loader:\n"
            "            preds.append(model(g, g.ndata['feat']))\n"
            "    return torch.cat(preds)\n"
        ),
        # EMA teacher in a Trainer class, target built under no_grad in another module
        Valid({
            "ema.py": (
                "import torch\n"
                "@torch.no_grad()\n"
                "def ema_update(teacher, student, m=0.99):\n"
                "    for pt, ps in zip(teacher.parameters(), student.parameters()):\n"
                "        pt.data.mul_(m).add_(ps.data, alpha=1 - m)\n"
            ),
            "trainer.py": (
                "import copy\nimport torch\nimport torch.nn.functional as F\n"
                "from ema import ema_update\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model = model\n"
                "        self.teacher = copy.deepcopy(model)\n"
                "        self.opt = opt\n"
                "    def step(self, g, x):\n"
                "        with torch.no_grad():\n"
                "            target = self.teacher.encoder(g, x)\n"
                "        pred = self.model.encoder(g, x)\n"
                "        loss = F.mse_loss(pred, target)\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
                "        self.opt.step()\n"
                "        ema_update(self.teacher, self.model)\n"
            ),
        }),
        # stop-gradient on one branch of the same model (SimSiam/BYOL style)
        Valid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x1, x2):\n"
            "    z1, z2 = model(g, x1), model(g, x2)\n"
            "    loss = -F.cosine_similarity(z1, z2.detach()).mean()\n"
            "    loss.backward()\n"
        ),
        # truncated backpropagation through time: the state fed back into the same module
        Valid(
            "import torch.nn as nn\n"
            "class Seq(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.rnn, self.head = nn.GRU(4, 4), nn.Linear(4, 1)\n"
            "    def fit(self, chunks):\n"
            "        h = None\n"
            "        for x, y in chunks:\n"
            "            out, h = self.rnn(x, h)\n"
            "            loss = ((self.head(out) - y) ** 2).mean()\n"
            "            loss.backward()\n"
            "            h = h.detach()\n"
        ),
        # two heads over one stem, compared by a loss helper: the target head's output is
        # detached (a stop-gradient target), the other head's still trains the stem
        Valid(
            "import torch.nn as nn\nimport torch.nn.functional as F\n"
            "def sce_loss(x, y):\n"
            "    x = F.normalize(x, dim=-1)\n"
            "    y = F.normalize(y, dim=-1)\n"
            "    return (1 - (x * y).sum(dim=-1)).mean()\n"
            "class Twin(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.stem = nn.Linear(4, 4)\n"
            "        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)\n"
            "        self.act = nn.PReLU()\n"
            "    def forward(self, x):\n"
            "        h = self.stem(x)\n"
            "        z1 = self.act(self.a(h))\n"
            "        z2 = self.b(h)\n"
            "        z2 = self.act(z2)\n"
            "        return sce_loss(z1, z2.detach())\n"
            "def train(model, x, opt):\n"
            "    loss = model(x)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a straight-through estimator on a selection, written over two lines: the value is 1,
        # the gradient that of the undetached term
        Valid(
            "import torch\nimport torch.nn as nn\n"
            "class Sampler(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.score, self.out = nn.Linear(4, 1), nn.Linear(4, 1)\n"
            "    def forward(self, h, k):\n"
            "        logits = self.score(h).squeeze(-1)\n"
            "        logits = torch.softmax(logits, dim=0)\n"
            "        top = torch.topk(logits, k).indices\n"
            "        h = h[top] * (1 - logits[top].detach() + logits[\n"
            "            top]).unsqueeze(1)\n"
            "        return self.out(h).mean()\n"
            "def train(model, h, opt):\n"
            "    loss = model(h, 2)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # class weights computed in NumPy by a helper class from the predictions: a weight,
        # the prediction itself still reaches the loss whole
        Valid(
            "import numpy as np\nimport torch\nimport torch.nn as nn\n"
            "class Weight:\n"
            "    @staticmethod\n"
            "    def per_class(labels):\n"
            "        vec = labels.cpu().data.numpy()[:8, :]\n"
            "        return vec / np.maximum(vec.sum(0), 1.0)\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc, self.cls = nn.Linear(4, 4), nn.Linear(4, 3)\n"
            "    def forward(self, x):\n"
            "        h = self.enc(x)\n"
            "        return h, self.cls(h)\n"
            "def mmd(h, probs):\n"
            "    w = torch.from_numpy(Weight.per_class(probs)).float()\n"
            "    return (w.sum(1, keepdim=True) * h[:8]).pow(2).mean()\n"
            "def train(model, x, opt):\n"
            "    h, logits = model(x)\n"
            "    loss = mmd(h, torch.softmax(logits, dim=1))\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a recurrent cell unrolled in forward: the state cut each step, the outputs kept whole
        Valid(
            "import torch\nimport torch.nn as nn\n"
            "class Seq(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cell = nn.GRUCell(4, 4)\n"
            "    def forward(self, xs):\n"
            "        h, outs = None, []\n"
            "        for x in xs:\n"
            "            h = self.cell(x, h)\n"
            "            outs.append(h)\n"
            "            h = h.detach()\n"
            "        return torch.stack(outs)\n"
            "def train(model, xs, opt):\n"
            "    loss = model(xs).pow(2).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a custom autograd.Function defines the gradient by hand
        Valid(
            "import torch\n"
            "class Checkpoint(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, module, x):\n"
            "        ctx.module = module\n"
            "        with torch.no_grad():\n"
            "            out = module(x).detach_()\n"
            "        return out\n"
            "def step(model, x):\n"
            "    loss = Checkpoint.apply(model, x).sum()\n"
            "    loss.backward()\n"
        ),
        # linear probe: a frozen encoder's embeddings made once, a fresh head trained on them
        # for many epochs (without the cut the second backward would fail)
        Valid({
            "probe.py": (
                "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
                "def fit_head(head, feats, labels, opt, epochs):\n"
                "    for _ in range(epochs):\n"
                "        opt.zero_grad()\n"
                "        F.cross_entropy(head(feats), labels).backward()\n"
                "        opt.step()\n"
                "def probe(pretrained, g, x, labels, n_classes):\n"
                "    pretrained.eval()\n"
                "    with torch.no_grad():\n"
                "        feats = pretrained.encode(g, x)\n"
                "    head = nn.Linear(feats.shape[1], n_classes)\n"
                "    fit_head(head, feats, labels, torch.optim.SGD(head.parameters(), lr=0.1), 50)\n"
            ),
            "main.py": (
                "import torch.nn as nn\nfrom probe import probe\n"
                "class Encoder(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.lin = nn.Linear(4, 4)\n"
                "    def encode(self, g, x):\n"
                "        return self.lin(x)\n"
                "def main(g, x, labels):\n"
                "    enc = Encoder()\n"
                "    probe(enc, g, x, labels, 3)\n"
            ),
        }),
        # the method's embeddings, detached in a model method called once, probed after training
        Valid(
            "import torch\nimport torch.nn as nn\n"
            "class SSL(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.backbone = nn.Linear(8, 8)\n"
            "    def get_embedding(self, x):\n"
            "        out = self.backbone(x)\n"
            "        return out.detach()\n"
            "model = SSL()\n"
            "embeds = model.get_embedding(feats)\n"
            "logreg = nn.Linear(8, 3)\n"
            "opt = torch.optim.Adam(logreg.parameters())\n"
            "for epoch in range(100):\n"
            "    loss = nn.functional.cross_entropy(logreg(embeds), labels)\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def run(backbone, head, x, y, steps):\n"
            "    z = backbone(x).detach()\n"
            "    opt = torch.optim.Adam(head.parameters())\n"
            "    for _ in range(steps):\n"
            "        opt.zero_grad()\n"
            "        loss = F.mse_loss(head(z), y)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # integer node ids built with a tensor constructor, read through `.data` for a sampler
        Valid(
            "import torch\n"
            "def step(model, loader, subs, opt):\n"
            "    q_sub = torch.LongTensor(subs).cuda()\n"
            "    nodes = torch.cat([torch.arange(len(subs)).unsqueeze(1), q_sub.unsqueeze(1)], 1)\n"
            "    nodes = loader.get_neighbors(nodes.data.cpu().numpy())\n"
            "    loss = model(nodes).sum()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a target built by two frozen modules, both inside the no_grad block
        Valid(
            "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            "class Student(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.body, self.proj = nn.Linear(6, 6), nn.Linear(6, 3)\n"
            "        self.body_t, self.proj_t = nn.Linear(6, 6), nn.Linear(6, 3)\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            t = self.body_t(x)\n"
            "            t = self.proj_t(t)\n"
            "        return F.mse_loss(self.proj(self.body(x)), t)\n"
            "def train(model, x, opt):\n"
            "    loss = model(x)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # gradient mode is GM102's: an embedding computed under no_grad, then decoded (one
        # defect, one code)
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def step(model, g, x, opt):\n"
            "    with torch.no_grad():\n"
            "        z = model.encoder(g, x)\n"
            "    recon = model.decoder(g, z)\n"
            "    loss = F.mse_loss(recon, x)\n"
            "    loss.backward()\n"
        ),
        # an MMD kernel's bandwidth: a stop-gradient on a scale, the distances keep their gradient
        Valid(
            "import torch\n"
            "def kernel(source, target, mul=2.0):\n"
            "    total = torch.cat([source, target], dim=0)\n"
            "    d = ((total.unsqueeze(0) - total.unsqueeze(1)) ** 2).sum(2)\n"
            "    bandwidth = torch.sum(d.data) / (total.size(0) ** 2)\n"
            "    return torch.exp(-d / (bandwidth * mul))\n"
            "def step(model, xs, xt, opt):\n"
            "    loss = kernel(model(xs), model(xt)).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # task losses detached into attention weights over the same learner's outputs
        Valid(
            "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            "class Meta(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.learner = nn.Linear(4, 1)\n"
            "        self.aggregator = nn.Linear(4, 4)\n"
            "    def forward(self, tasks, xq, yq):\n"
            "        losses = {}\n"
            "        for t, (x, y) in enumerate(tasks):\n"
            "            pred = self.learner(x)\n"
            "            q_loss = F.mse_loss(pred, y)\n"
            "            losses[t] = q_loss.data\n"
            "        att = F.softmax(-torch.stack(list(losses.values())), dim=0)\n"
            "        weights = self.aggregator(att)\n"
            "        pred = self.learner(xq * weights)\n"
            "        return F.mse_loss(pred, yq)\n"
            "def train(model, tasks, xq, yq, opt):\n"
            "    loss = model(tasks, xq, yq)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # a straight-through estimator: the hard choice forward, the soft scores' gradient back
        Valid(
            "import torch.nn as nn\n"
            "class Sampler(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin, self.score, self.softmax = nn.Linear(4, 4), nn.Linear(4, 1), nn.Softmax(0)\n"
            "    def forward(self, x):\n"
            "        hidden = self.lin(x).clone()\n"
            "        prob = self.softmax(self.score(hidden).squeeze(-1))\n"
            "        hard = (x[:, 0] > 0).float()\n"
            "        mask = hard > 0\n"
            "        hidden[mask] *= (hard - prob.detach() + prob)[mask].unsqueeze(-1)\n"
            "        return hidden\n"
            "def train(model, x, opt):\n"
            "    loss = model(x).pow(2).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # pseudo-labels: an argmax cast to integers is the target of the loss
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def train(model, feats, opt, epochs):\n"
            "    for _ in range(epochs):\n"
            "        logits, att = model(feats)\n"
            "        label_predict = torch.argmax(att, dim=1)\n"
            "        logits = F.log_softmax(logits, dim=1)\n"
            "        loss = F.nll_loss(logits, label_predict.long().detach())\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
        # embeddings detached by a model method after training, fed to a separate probe whose
        # optimizer holds only the probe's parameters
        Valid({
            "model.py": (
                "import torch.nn as nn\n"
                "class MAE(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.encoder = nn.Linear(8, 8)\n"
                "    def forward(self, x):\n"
                "        return (self.encoder(x) - x).pow(2).mean()\n"
                "    def get_embeds(self, x):\n"
                "        emb = self.encoder(x)\n"
                "        return emb.detach()\n"
                "class LogReg(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.fc = nn.Linear(8, 3)\n"
                "    def forward(self, x):\n"
                "        return self.fc(x)\n"
            ),
            "trainer.py": (
                "import torch\nimport torch.nn.functional as F\n"
                "from model import MAE, LogReg\n"
                "def evaluate(embeds, labels):\n"
                "    log = LogReg()\n"
                "    opt = torch.optim.Adam(log.parameters())\n"
                "    for _ in range(200):\n"
                "        opt.zero_grad()\n"
                "        loss = F.cross_entropy(log(embeds), labels)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "def train_step(model, x, epochs):\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for _ in range(epochs):\n"
                "        opt.zero_grad()\n"
                "        loss = model(x)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "    return model.get_embeds(x)\n"
                "def main(x, labels):\n"
                "    model = MAE()\n"
                "    embeds = train_step(model, x, 10)\n"
                "    evaluate(embeds, labels)\n"
            ),
        }),
        # a GAN's discriminator step: the generator's sample detached; the generator's own
        # optimizer steps later in the iteration, but its zero_grad clears what this backward
        # left before the generator's backward, so this loss trains the discriminator only
        Valid(
            "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            "class Gen(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            "    def forward(self, z):\n"
            "        return self.lin(z)\n"
            "    def sample(self, z):\n"
            "        return self.lin(z).tanh()\n"
            "def train(loader):\n"
            "    gen = Gen()\n"
            "    disc = nn.Linear(4, 1)\n"
            "    opt_g = torch.optim.Adam(gen.parameters())\n"
            "    opt_d = torch.optim.Adam(disc.parameters())\n"
            "    for x, z in loader:\n"
            "        fake = gen.sample(z).detach()\n"
            "        d_loss = F.softplus(-disc(x)).mean() + F.softplus(disc(fake)).mean()\n"
            "        opt_d.zero_grad()\n"
            "        d_loss.backward()\n"
            "        opt_d.step()\n"
            "        g_loss = F.softplus(-disc(gen(z))).mean()\n"
            "        opt_g.zero_grad()\n"
            "        g_loss.backward()\n"
            "        opt_g.step()\n"
        ),
        # a parameter copied as a new leaf that gets its own gradient; a shape read off `.data`
        Valid(
            "import torch\n"
            "def step(model, emb, g, opt):\n"
            "    x = torch.clone(emb.weight).detach()\n"
            "    x.requires_grad = True\n"
            "    loss = model(g, x).sum()\n"
            "    n = 0\n"
            "    for p in model.parameters():\n"
            "        n += p.data.numel()\n"
            "    loss = loss / n\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
    ]
    INVALID = [
        # the GraphMAE bug: the encoder's embedding detached before the decoder
        Invalid(
            "import torch.nn as nn\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder = nn.Linear(8, 8)\n"
            "        self.decoder = nn.Linear(8, 8)\n"
            "    def forward(self, x):\n"
            "        h = self.encoder(x)\n"
            "        return self.decoder(h.detach())\n"
            "def train(model, x, opt):\n"
            "    loss = ((model(x) - x) ** 2).mean()\n"
            "    loss.backward()\n",
            line=9, message_contains="example.py:12",
        ),
        # every layer's output cut in the encoder's loop, then returned: fed back into the same
        # wrapper module, yet no output of the stack reaches the loss uncut
        Invalid(
            "import torch.nn as nn\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])\n"
            "        self.act, self.drop = nn.ReLU(), nn.Dropout(0.1)\n"
            "    def forward(self, x):\n"
            "        h = x\n"
            "        for layer in self.layers:\n"
            "            h = self.drop(self.act(layer(h)))\n"
            "            h = h.detach()\n"
            "        return h\n"
            "def train(model, x, opt):\n"
            "    loss = model(x).pow(2).mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=11,
        ),
        # the reconstruction detached in a helper module, backward in a Trainer method
        Invalid({
            "losses.py": (
                "import torch.nn.functional as F\n"
                "def masked_mse(pred, target, mask):\n"
                "    pred = pred[mask].detach()\n"
                "    return F.mse_loss(pred, target[mask])\n"
            ),
            "trainer.py": (
                "from losses import masked_mse\n"
                "class Trainer:\n"
                "    def __init__(self, model, opt):\n"
                "        self.model = model\n"
                "        self.opt = opt\n"
                "    def train_step(self, g, x, mask):\n"
                "        recon = self.model(g, x)\n"
                "        loss = masked_mse(recon, x, mask)\n"
                "        self.opt.zero_grad()\n"
                "        loss.backward()\n"
                "        self.opt.step()\n"
            ),
        }, line=3, path="losses.py", message_contains="trainer.py:10"),
        # `.data` on the prediction
        Invalid(
            "import torch.nn.functional as F\n"
            "def step(model, g, x, scaler):\n"
            "    out = model(g, x).data\n"
            "    loss = F.mse_loss(out, x)\n"
            "    scaler.scale(loss).backward()\n",
            line=3,
        ),
        # a Lightning module: the loss `training_step` returns is what Lightning backpropagates
        Invalid(
            "import pytorch_lightning as pl\nimport torch.nn.functional as F\n"
            "class LitMAE(pl.LightningModule):\n"
            "    def __init__(self, model):\n"
            "        super().__init__()\n"
            "        self.model = model\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        g, x = batch\n"
            "        recon = self.model(g, x).detach()\n"
            "        return F.mse_loss(recon, x)\n",
            line=9, message_contains="example.py:10",
        ),
        # the loss itself detached; the other outputs only logged after the backward
        Invalid(
            "import torch.nn as nn\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n"
            "        out = self.lin(x)\n"
            "        return out.pow(2).mean(), {'norm': out.norm()}\n"
            "def train(model, opt, loader, log):\n"
            "    for x in loader:\n"
            "        loss, parts = model(x)\n"
            "        loss = loss.detach()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        log.info('%s %s', loss.item(), parts)\n",
            line=12,
        ),
        # both views of a two-view model detached: neither carries gradient to the other
        Invalid(
            "import torch\n"
            "def train(model, opt, g1, x1, g2, x2, steps):\n"
            "    for _ in range(steps):\n"
            "        z1, z2 = model(g1, x1, g2, x2)\n"
            "        z1, z2 = z1.detach(), z2.detach()\n"
            "        loss = -torch.mm(z1.T, z2).diagonal().sum()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=5,
        ),
        # a criterion module's output and labels from the command line are not predictions
        Invalid(
            "import argparse\nimport torch.nn as nn\n"
            "args = argparse.ArgumentParser().parse_args()\n"
            "labels = load_labels(args.dataset)\n"
            "head = nn.Linear(16, 3)\n"
            "loss_fn = nn.CrossEntropyLoss()\n"
            "for epoch in range(100):\n"
            "    logits = head(embs).detach()\n"
            "    loss = loss_fn(logits, labels)\n"
            "    loss.backward()\n",
            line=8,
        ),
        # a loss divided by a count is a tensor still: only an outermost `.numel()` is a number
        Invalid(
            "def fit(model, crit, opt, loader):\n"
            "    for x, y in loader:\n"
            "        z = model(x).detach()\n"
            "        loss = crit(z, y) / y.numel()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=3,
        ),
        # a parameter a factory registers on a container module, read through `.data`: the
        # mask token never gets a gradient
        Invalid(
            "import torch\nfrom torch import nn\n"
            "def build():\n"
            "    m = nn.ModuleDict({'enc': nn.Linear(4, 4)})\n"
            "    m.register_parameter('mask_token', nn.Parameter(torch.zeros(1, 4)))\n"
            "    return m\n"
            "def mask_input(m, x, mask):\n"
            "    x_in = x.clone()\n"
            "    x_in[mask] += m.mask_token.data\n"
            "    return x_in\n"
            "model = build()\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x, mask in batches:\n"
            "    loss = model['enc'](mask_input(model, x, mask))[mask].pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=9, message_contains="mask_token"),
        # the model's own mask token read through `.data` by its masking method, the method
        # called from the training step before the forward
        Invalid(
            "import torch\nfrom torch import nn\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Linear(4, 4)\n"
            "        self.mask_token = nn.Parameter(torch.zeros(1, 4))\n"
            "    def mask_features(self, x, mask):\n"
            "        out = x.clone()\n"
            "        out[mask] = 0.0\n"
            "        out[mask] += self.mask_token.data\n"
            "        return out\n"
            "    def forward(self, x):\n"
            "        return self.enc(x)\n"
            "model = MAE()\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for x, mask in batches:\n"
            "    loss = model(model.mask_features(x, mask))[mask].pow(2).mean()\n"
            "    opt.zero_grad()\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=11, message_contains="mask_token"),
        # the loss helper detaches its prediction: both terms it computes carry no gradient
        Invalid(_TWO_TERMS.format(**{**_TWO_TERMS_OK, "x": "x.detach()"}), line=6),
        # the stop-gradient helper applied to the prediction instead of the target
        Invalid(_TWO_TERMS.format(**{**_TWO_TERMS_OK, "pred": "stopgrad(self.predictor(h))",
                                     "target": "target"}), line=20, message_contains="stopgrad("),
        # the encoder's output cut before the decoder: the latent term still trains the
        # encoder, the reconstruction no longer does
        Invalid(_TWO_TERMS.format(**{**_TWO_TERMS_OK, "h": "h.detach()"}), line=18,
                message_contains="reconstruction loss"),
    ]

    # -- per file: `.data` reads (writes such as `p.data.mul_()` and `p.data = ...` are skipped)
    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # `.data` nodes written to, met by their statement or call before the traversal reaches
        # them: their position is taken when it does (the position of a node not yet reached
        # costs a whole-file position pass)
        self._writes: set[cst.Attribute] = set()
        self._queried: set[cst.Attribute] = set()  # `.data` nodes only asked for their shape

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in SHAPE_QUERIES and isinstance(node.value, cst.Attribute):
            self._queried.add(node.value)  # `p.data.size()`: a shape, no tensor flows on
            return
        if node.attr.value != "data" or self.ctx.in_import or node in self._queried:
            return
        if node in self._writes:
            span = self.ctx.span(node)
            self.fact(("write", span.line, span.column))
        text = dotted(node.value)
        if text is not None and self.ctx.qualify(node.value) != text:
            return  # a module attribute: `dgl.data`, `torch.utils.data`
        if isinstance(node.value, cst.Subscript) and isinstance(node.value.value, cst.Attribute) \
                and node.value.value.attr.value in DGL_VIEWS:
            return  # `g.nodes[ntype].data`: a DGL graph's feature frame, no tensor
        span = self.ctx.span(node)
        self.fact(("data", span.line, span.column, span.end_line, span.end_column,
                   self.ctx.code(node.value, 80)))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value.endswith("_")
                and isinstance(func.value, cst.Attribute) and func.value.attr.value == "data"):
            self._writes.add(func.value)

    def _targets(self, targets: Iterable[cst.BaseExpression]) -> None:
        for target in targets:
            if isinstance(target, cst.Attribute) and target.attr.value == "data":
                self._writes.add(target)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets(t.target for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets([node.target])

    # -- project stage -----------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        findings: list[Finding] = []
        # a helper named for cutting the gradient (`stopgrad(t)`) is a tool: its `.detach()` is
        # judged where it is called, on each argument; any other helper's body is judged as code
        helpers = {fn.name: fn.qualname for fn in project.functions.values()
                   if STOP_GRADIENT_NAME.search(fn.name) and df.stop_gradient_parameter(fn)}
        for fn in list(project.functions.values()):
            if fn.class_name and df.is_autograd_function(project, fn.class_name) \
                    or fn.qualname in helpers.values():
                continue  # a custom autograd.Function defines its gradient by hand
            judged = skipped = 0
            for stmt in df.statements(fn):
                budget = min(MAX_CUTS_PER_STATEMENT, MAX_CUTS_PER_FUNCTION - judged)
                for call in stmt.calls:
                    cut = _cut_by(project, fn, call, helpers)
                    if cut is None:
                        continue
                    if budget <= 0:
                        skipped += 1
                        continue
                    budget -= 1
                    judged += 1
                    found = cls._judge(project, fn, stmt, call, f"`{cut[0]}`", call.span, cut_arg=cut[1])
                    if found:
                        findings.append(found)
            if skipped:
                local = fn.qualname.removeprefix(fn.module + ".")
                where = "at module level" if local == "<module>" else f"in `{local}`"
                project.truncate(fn.path, (
                    f"GM101 judged {judged} of the {judged + skipped} `.detach()` calls {where} "
                    f"(at most {MAX_CUTS_PER_STATEMENT} per statement and {MAX_CUTS_PER_FUNCTION} "
                    "per function keep the cross-file stage linear in the file's size)"))
        for facts, fact in project.rule_facts(cls.code):
            if fact[0] != "data":
                continue
            _, line, col, end_line, end_col, receiver = fact
            writes = {(f[1], f[2]) for _, f in project.rule_facts(cls.code)
                      if f[0] == "write" and _ is facts}
            if (line, col) in writes:
                continue
            fn = df.function_of(project, facts.path, line)
            if fn is not None and fn.class_name and df.is_autograd_function(project, fn.class_name):
                continue
            stmt = df.statement_at(fn, line) if fn is not None else None
            if fn is None or stmt is None or stmt.kind not in ("assign", "augassign", "return"):
                continue
            found = cls._judge(project, fn, stmt, None, f"`{receiver}.data`",
                               Span(line, col, end_line, end_col), receiver=receiver)
            if found:
                findings.append(found)
        return findings

    @classmethod
    def _judge(cls, project: Project, fn: FunctionInfo, stmt: df.Statement, call: Optional[Event],
               what: str, span: Span, receiver: str = "", cut_arg: str = "") -> Optional[Finding]:
        # 1. the cut value must come from a module's output
        origin: Optional[df.Origin]
        if call is not None:
            inner = [c for c in stmt.calls if c is not call and df.contains(call.span, c.span)]
            origin = next((df.Origin(fn, c, df.callee_text(c) + "(...)") for c in inner
                           if df.is_module_output(project, fn, c)), None)
            if origin is None:
                names = [u for u in call.uses if u not in {df.callee_text(c) for c in inner}]
                origin = df.derives_from_module(project, fn, names, stmt.index)
        else:
            inner = [c for c in stmt.calls if df.mentions(receiver, df.callee_text(c))]
            origin = next((df.Origin(fn, c, df.callee_text(c) + "(...)") for c in inner
                           if df.is_module_output(project, fn, c)), None)
            if origin is None:
                names = [receiver] + [u for u in stmt.uses if df.mentions(receiver, u) and u != receiver]
                origin = df.derives_from_module(project, fn, names, stmt.index)
        if origin is None:
            return None
        t = Training.of(project)
        cut = receiver or cut_arg or (call.receiver if call is not None else "")
        if cut and _carries_no_gradient(t, fn, stmt, cut):
            return None  # an integer target, an argmax: nothing to cut
        if _made_a_leaf(fn, stmt):
            return None  # `x = w.detach(); x.requires_grad = True`: a new leaf with its own gradient
        # 2. it must flow into a backpropagated loss, as the prediction (not as a target)
        if call is not None:
            flow = df.flows_from(project, fn, call)
        else:
            flow = df.flows_from_statement(project, fn, stmt)
        live = [s for s in flow.sinks if not _reused_across_steps(project, fn, stmt, s)
                and _may_train(t, origin, s)]
        if not live or _is_target(project, fn, stmt, flow, inner, call, receiver, origin, live):
            return None
        # 3. and the cut must be the only way from the module to the loss
        sink = live[0]
        message = (
            f"{what} cuts the gradient of {origin.what} ({origin.where}), and the value flows into "
            f"the loss backpropagated at {sink.where}: the parameters that produced it get no "
            f"gradient from this loss"
        )
        if _other_route(project, fn, stmt, cut, origin, what.strip("`") if cut_arg else ""):
            rebuilt = _reconstruction_cut(project, fn, flow, origin)
            if rebuilt is None:
                return None
            message = (
                f"{what} cuts the gradient of {origin.what} ({origin.where}) on the way to the "
                f"reconstruction loss at {rebuilt}, which compares the decoded value with that "
                f"module's own input: the module is trained by the other terms only, never by "
                f"reconstruction")
        fix = ("remove the detach so the loss trains the module that produced the value; "
               "if a stop-gradient target was meant, detach the target, not the prediction")
        return cls.make_finding(fn.path, span, message, fix)

    # -- autofix -----------------------------------------------------------------------------------
    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """``x.detach()`` / ``x.data`` -> ``x`` inside an expression."""
        src = fixer.source(finding.path)
        node = src.node_at(finding, cst.Call, cst.Attribute) if src else None
        if src is None or node is None:
            return None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in CUTS and not node.args:
            if isinstance(src.parent(node), cst.Expr):
                return None  # `x.detach_()` as a statement: nothing to unwrap
            kept = node.func.value
        elif isinstance(node, cst.Attribute) and node.attr.value == "data":
            kept = node.value
        else:
            return None
        return Fix(f"drop the `{src.code(node)[len(src.code(kept)):]}` on the loss path",
                   [src.replace(node, kept.with_changes(lpar=node.lpar, rpar=node.rpar)
                                if node.lpar else kept)])

    # -- runtime -----------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        """Confirmed: the cut ran on a tensor requiring grad and parameters used in the forward
        were unreachable from the loss; refuted: it never cut a gradient, or every parameter was
        reached anyway (the value was a target); unexercised: the line never ran."""
        cuts = [c for kind in ("detach", "data")
                for c in evidence.calls_at(finding.path, finding.line, kind, finding.end_line)]
        if not cuts and not evidence.ran(finding.path, finding.line, finding.end_line):
            return Verdict(Status.UNEXERCISED, ["the line never ran"])
        if cuts and True not in [v for c in cuts for v in c.values("requires_grad")]:
            return Verdict(Status.REFUTED, ["the detached tensor never required grad"])
        reach = [r for r in (evidence.param_reachability(s) for s in evidence.steps) if r is not None]
        blocked = [r for r in reach if r.unreached]
        if blocked:
            return Verdict(Status.CONFIRMED, [blocked[0].summary()])
        if reach:
            return Verdict(Status.REFUTED, [f"every parameter used in the forward and meant to train was reachable from "
                                            f"the loss ({len(reach)} steps)"])
        return None


def _cut_by(project: Project, fn: FunctionInfo, call: Event,
            helpers: dict[str, str]) -> Optional[tuple[str, str]]:
    """(how the cut reads, the value cut) when ``call`` cuts a value from the graph: ``x.detach()``,
    or a call of a stop-gradient helper of the project (``stopgrad(pred)``)."""
    if call.method in CUTS and not call.args and call.receiver:
        return f"{call.receiver}.{call.method}()", ""
    name = df.callee_text(call).rsplit(".", 1)[-1]
    if name in helpers and len(call.args) == 1 and not call.kwargs and not call.args[0].startswith("*") \
            and helpers[name] in df.call_targets(project, fn, call):
        return project.text_at(fn.path, call.span) or f"{name}({call.args[0]})", call.args[0]
    return None


def _carries_no_gradient(t: Training, fn: FunctionInfo, stmt: df.Statement, cut: str) -> bool:
    """The value cut has no autograd history to lose: an integer cast or an argmax
    (``labels.long().detach()``, the target of an ``nll_loss``), a Python number."""
    m = _LAST_METHOD.search(cut)
    if m is not None and m.group(1) in NON_DIFFERENTIABLE:
        return True
    index = fn.position(stmt.head)
    return re.fullmatch(r"\w+", cut) is not None and kind_at(t, fn, cut, index) == NUMBER


def _made_a_leaf(fn: FunctionInfo, stmt: df.Statement) -> bool:
    """What the statement assigns is made to require gradients afterwards in ``fn``
    (``x.requires_grad = True``, ``x.requires_grad_()``): the cut starts a new leaf on purpose
    (a copy whose gradient is read by hand, an adversarial input)."""
    if stmt.kind != "assign" or len(stmt.targets) != 1:
        return False
    name = stmt.targets[0]
    return any(e.span.line > stmt.head.span.line and (
        e.kind == "assign" and e.targets == [f"{name}.requires_grad"] and e.text.rstrip().endswith("True")
        or e.kind == "call" and e.receiver == name and e.method == "requires_grad_"
        and e.args[:1] in ([], ["True"])) for e in fn.events)


_LAST_METHOD = re.compile(r"\.(\w+)\((?:[^()]|\([^()]*\))*\)$")


def _may_train(t: Training, origin: df.Origin, sink: df.Sink) -> bool:
    """The optimizers stepped after the backward ``sink`` may hold the parameters of the module
    the cut value came from (a linear probe's optimizer over ``probe.parameters()`` on frozen
    embeddings does not: see Training.steps_module_of)."""
    return origin.event.kind != "call" or t.steps_module_of(
        origin.fn, origin.event, sink.fn, sink.fn.position(sink.event))


def _other_route(project: Project, fn: FunctionInfo, stmt: df.Statement, cut: str,
                 origin: df.Origin, cutting: str = "") -> bool:
    """The module still reaches the loss with its gradient by a path the cut is not on: the
    undetached value itself flows on (``bw = sum(d.data)``, then ``exp(-d / bw)``: a
    stop-gradient on a scale; ``hard - soft.detach() + soft``: a straight-through estimator), or the module that made it runs again into the loss (a
    meta-learner's task losses detached into attention weights over its own outputs)."""
    if re.fullmatch(r"[\w.]+(\[[^\[\]]*\])*", _tight(cut)) and cut not in stmt.targets:
        # the same value, undetached, beside the cut in the statement: a straight-through
        # estimator (`hard - soft.detach() + soft` passes the soft value's gradient; so does
        # `1 - p[idx].detach() + p[idx]`, the selection written over two lines)
        undetached = rf"(?<![\w.]){re.escape(_tight(cut))}(?!\w|\.(?:detach_?\(|data\b))"
        code = project.text_at(fn.path, stmt.head.span) or stmt.head.text
        code = re.sub(r"\"[^\"]*\"|'[^']*'", "''", code)  # `{"loss": loss.detach()}`: a key
        code = re.sub(r"\bfor\s+[\w\s,()]+?\s+in\b", " in", code)  # a comprehension binds it
        if re.search(undetached, _tight(code).replace(_tight(cutting) or "\0", "")):
            return True
        if re.fullmatch(r"[\w.]+", cut):
            # read again, undetached, on the way to a loss (an attribute's reads anywhere in its
            # class count: a `.data` read of it elsewhere is the same cut, no route)
            flow = df.flows_to(project, fn, [cut], stmt.index + 1)
            if flow.sinks and any(_reads_undetached(step.stmt.uses, cut) for step in flow.steps):
                return True
    callee = df.callee_text(origin.event) if origin.event.kind == "call" else ""
    for other in origin.fn.events if callee else ():
        if other is origin.event or other.kind != "call" or df.callee_text(other) != callee:
            continue
        flow = df.flows_from(project, origin.fn, other)
        if flow.sinks and not any(step.fn is fn and step.stmt is stmt for step in flow.steps):
            return True
    return False


# a name or attribute chain with its string-keyed entries (`x`, `g.ndata["feat"]`): a value read
_PRIMARY = re.compile(r"""(?<![\w.])[A-Za-z_][\w.]*(?:\[\s*["'][^"']*["']\s*\])*(?![\w(])""")


def _primaries(texts: Iterable[str]) -> set[str]:
    return {m.group(0) for t in texts for m in _PRIMARY.finditer(re.sub(r"\s+", "", t))
            if not m.group(0).endswith(".") and m.group(0) != "self"}


def _reconstruction_cut(project: Project, fn: FunctionInfo, flow: df.Flow,
                        origin: df.Origin) -> Optional[str]:
    """Where the cut value, decoded, is compared by a loss with what the module it came from
    was given (``rec(decode(h.detach())[m], x[m])`` with ``h = encoder(g, mask(x))``): a masked
    autoencoder whose reconstruction no longer trains the encoder, though another term (a
    latent one) still reaches it. A probe on the cut value compares it with labels instead."""
    if origin.event.kind != "call":
        return None
    made = project.text_at(origin.fn.path, origin.event.span) or origin.event.text
    given = _primaries([made[made.find("(") + 1:]]) if "(" in made else set()
    for step in flow.steps:
        if step.fn is not origin.fn and step.fn is not fn:
            continue
        for call in step.stmt.calls:
            args = [*call.args, *call.kwargs.values()]
            carrying = [a for a in args if any(df.mentions(a, h) for h in step.hit)
                        or (step.inner is not None and step.inner.span == call.span)]
            if not carrying or len(args) < 2 or not df.is_loss_call(project, step.fn, call):
                continue
            compared = _primaries(a for a in args if a not in carrying) - _primaries(carrying)
            if compared & given:
                return f"{step.fn.path}:{call.span.line}"
    return None


def _reads_undetached(uses: Iterable[str], cut: str) -> bool:
    """``uses`` read ``cut`` itself, or a part of it, not through ``.data`` / ``.detach``."""
    return any(u == cut or u.startswith(cut + ".") and not u.startswith((cut + ".data", cut + ".detach"))
               for u in uses)


def _tight(code: str) -> str:
    """``code`` without the spaces and line breaks around brackets, dots and commas."""
    return re.sub(r"\s*([\[\]().,])\s*", r"\1", code)


def _reused_across_steps(project: Project, fn: FunctionInfo, stmt: df.Statement,
                         sink: df.Sink) -> bool:
    """The cut value is made once and then backpropagated through at every iteration of a loop
    it was not made in (embeddings of a frozen encoder fed to a probe trained for many epochs).
    Without the cut the second backward would fail (the graph is freed after the first), so
    the cut is what makes the code run: the value is a fixed input, not a prediction."""
    if not sink.event.loop_ids or "retain_graph" in sink.event.text:
        return False
    if sink.fn is fn:
        return bool(set(sink.event.loop_ids) - set(stmt.head.loop_ids))
    # returned up to the function that trains on it, by a call made before that loop
    # (`embeds = model.get_embedding(g)` once, then a probe trained on them for many epochs)
    calls = project.call_sites(sink.fn.qualname, fn.qualname)
    if calls and all(set(sink.event.loop_ids) - set(c.loop_ids) for c in calls):
        return True
    # handed down to a function that trains on it in its own loop (not returned up to a loop)
    return (sink.fn.qualname in project.reachable_from(fn.qualname)
            and fn.qualname not in project.reachable_from(sink.fn.qualname))


def _trains_past(project: Project, fn: FunctionInfo, call: Event, fn_cut: FunctionInfo,
                 stmt_cut: df.Statement) -> bool:
    """The output of ``call`` reaches a backward by a way that does not pass the cut statement
    (an RNN's output beside its detached state); a stack of layers whose every output is cut
    (``h = layer(h).detach()`` in a loop, then returned) does not."""
    return bool(df.flows_from(project, fn, call,
                              stop=lambda f, s, _: f is fn_cut and s is stmt_cut).sinks)


def _helper_function(project: Project, fn: FunctionInfo, call: Event) -> bool:
    """``call`` runs a function of the project outside any module class
    (``sce_loss(pred, target.detach())``, a static method of a helper class): it owns no
    parameters, so what decides is what the cut value is given beside."""
    targets = [t for t in df.call_targets(project, fn, call) if not t.endswith(".__init__")]
    functions = [project.function(t) for t in targets]
    return bool(functions) and all(
        f is not None and not (f.class_name and df.is_module_class(project, f.class_name))
        for f in functions)


def _beside_live_value(project: Project, fn: FunctionInfo, stmt: df.Statement, call: Event,
                       step: df.Step) -> bool:
    """Another argument of ``call`` than the one carrying the cut value derives from a
    module's output (``sce_loss(z1, z2.detach())``)."""
    cut = step.inner.func if step.inner is not None else None
    args = [*call.args, *call.kwargs.values()]
    local = df.callee_text(step.inner) if step.inner is not None else ""
    # an argument that is itself a call reads shortened (`sce(self.pred(...), sg(...))`): the
    # call it shows stands for it
    nested = [c for c in stmt.calls if c is not call and df.contains(call.span, c.span)]
    entries = [c.span for c in nested if c is step.inner or any(
        df.mentions(a, h) for a in [*c.args, *c.kwargs.values()] for h in step.hit)]
    shown = {df.callee_text(c) + "(...)": c for c in nested}
    carrying = [a for a in args if (cut and cut in a) or any(df.mentions(a, h) for h in step.hit)
                or (local and df.mentions(a, local))
                or (a in shown and any(df.contains(shown[a].span, e) for e in entries))]
    others = [a for a in args if a not in carrying]
    if any(a in shown and df.is_module_output(project, fn, shown[a]) for a in others):
        return True
    # names the cut argument reads too (the mask both sides are indexed by) are not the other side
    names = [u for u in stmt.uses if any(df.mentions(a, u) for a in others)
             and not any(df.mentions(a, u) for a in carrying)]
    return bool(names) and df.derives_from_module(project, fn, names, stmt.index) is not None


def _is_target(project: Project, fn_cut: FunctionInfo, stmt_cut: df.Statement, flow: df.Flow,
               inner: list[Event], cut: Optional[Event], receiver: str, origin: df.Origin,
               sinks: list[df.Sink]) -> bool:
    """Decide, walking the flow in order, whether the cut value first meets a prediction that
    still carries gradient (a target: benign) or feeds a module (the cut hurts). Fed back into
    the very module that produced it (a recurrent state, truncated backpropagation through
    time) it is benign too when that module still gets its gradient from the new step: its
    new output reaches a backward without passing the cut again. Statements after the
    backward the value reaches (the loss logged beside other outputs) are not on its way to
    the loss. Once the value is reduced to a loss term (``.mean()``), the live terms it is added
    to are other terms of the loss, not predictions it is compared with."""
    reduced = False
    for step in flow.steps:
        stmt, fn = step.stmt, step.fn
        here = [s.event.span.line for s in sinks if s.fn.qualname == fn.qualname]
        if here and stmt.head.span.line > max(here):
            continue
        excluded = {id(c) for c in inner}
        if cut is not None:
            excluded.add(id(cut))
        if _under_no_grad(stmt.head.context):
            continue  # still inside the gradient-free region (a target built by a frozen head)
        callee_names = stmt.callee_names()
        # where the value enters the statement: the flow's expression, or the calls whose own
        # arguments name it; a call around one of those (`self.drop(self.act(norm(h)))`, whose
        # arguments read shortened) takes the value too
        entries = [step.inner.span] if step.inner is not None else []
        entries += [c.span for c in stmt.calls if any(
            df.mentions(a, h) for a in [*c.args, *c.kwargs.values()] for h in step.hit)]
        for call in stmt.calls:
            if id(call) in excluded or not df.is_module_output(project, fn, call):
                continue
            if not any(df.contains(call.span, e) for e in entries):
                continue
            if _helper_function(project, fn, call):
                if step.inner is not None and call.span == step.inner.span:
                    continue  # the helper that returned the cut value, not one given it
                # a loss helper given the cut value beside a module's output: the cut value is
                # the target the output is compared with
                return _beside_live_value(project, fn, stmt, call, step)
            # the cut value is an input of a module: its gradient is lost
            return df.callee_text(call) == origin.what.removesuffix("(...)") and \
                _trains_past(project, fn, call, fn_cut, stmt_cut)
        # calls around the flow's expression (`mse(student(x), <cut>)`) are live inputs; calls
        # inside it (`remask(self.proj(h))`, a callee's arguments) fed the cut value itself
        if reduced:
            continue
        reduced = _reduces(stmt, step.hit)
        live_calls = [c for c in stmt.calls if id(c) not in excluded and df.is_module_output(project, fn, c)
                      and (step.inner is None or not (df.contains(c.span, step.inner.span)
                                                      or df.contains(step.inner.span, c.span)))]
        if live_calls:
            return True
        cut_names = set(step.hit)
        if step.inner is not None:
            cut_names |= {u for u in step.inner.uses}
        if receiver:
            cut_names |= {u for u in stmt.uses if df.mentions(receiver, u)}
        value = stmt.text.split("=", 1)[-1] if stmt.kind == "assign" else stmt.text
        others = [u for u in stmt.uses if u not in cut_names and u not in callee_names
                  and not any(u.startswith(c + ".") for c in cut_names | callee_names)
                  and not any(c.startswith(u + ".") for c in cut_names)
                  and not detached_text(value, u)]  # `b.detach()` beside the cut: cut too
        if others and df.derives_from_module(project, fn, others, stmt.index) is not None:
            return True
    return False


def _reduces(stmt: df.Statement, names: Iterable[str]) -> bool:
    """``stmt`` reduces one of ``names`` to a number of the loss: a whole ``.mean()`` /
    ``.sum()`` of it."""
    for call in stmt.calls:
        if call.method in ("mean", "sum") and not call.args and not call.kwargs and \
                any(df.mentions(call.receiver, n) for n in names):
            return True
    return False
