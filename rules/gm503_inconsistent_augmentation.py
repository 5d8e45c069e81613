"""GM503 inconsistent-augmentation: training-time augmentation that breaks the geometry of the
points (coordinates rotated without their tangents and normals, noise on unit vectors) or mutates
cached samples in place so that it compounds across epochs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.dataflow import function_of
from auditor.static.facts import FunctionInfo, Span
from auditor.static.project import Project
from auditor.static.stages import stage_of
from auditor.static.training import Training
from auditor.static.values import GRAD, kind_at

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

XYZ, TANGENT, NORMAL, ALL = "coordinates", "tangents", "normals", "all features"
REST = "channels after them"  # `x[..., 3:]`: whatever follows the coordinates (the directions)
_SLICES = ((re.compile(r"(?<![\d.])0?\s*:\s*3\s*\]"), XYZ), (re.compile(r"3\s*:\s*6"), TANGENT),
           (re.compile(r"(\.\.\.|:)\s*,\s*3\s*:\s*\]"), REST),
           (re.compile(r"6\s*:\s*9"), NORMAL),
           # `pts[..., j : j + 3]` in a loop over the 3-vectors of a point: every channel
           (re.compile(r"\b([A-Za-z_]\w*)\s*:\s*\1\s*\+\s*3\b"), ALL))
_NAMES = ((re.compile(r"tan", re.I), TANGENT),
          (re.compile(r"normal(?!i[sz])|nrm|\bnor\b|\bn_", re.I), NORMAL),
          (re.compile(r"xyz|pos|coord|\bpts\b|points?\b|\bp\b", re.I), XYZ))
# what builds a rotation matrix: a rotation helper or scipy's `Rotation(...).as_matrix()`, the Q of
# a QR decomposition (a random orthogonal matrix), sines and cosines of an angle
ROTATION_BUILT = re.compile(r"rotat|as_matrix|\bqr\(|ortho_group|\b(cos|sin)\(", re.I)
# a matrix handed in from elsewhere (a parameter, an attribute) is taken for one by its name
ROTATION_NAME = re.compile(r"\brot|rotation|\bR\b", re.I)
RANDOM = re.compile(r"rand|normal\(|uniform|noise|jitter|gauss", re.I)
# calls whose result is floating-point noise (integer draws `randint`/`randperm` are indices)
NOISE_CALL = re.compile(r"(^|\.)(randn|randn_like|rand|rand_like|normal|normal_|uniform|uniform_|"
                        r"gauss|normalvariate|laplace)$|noise|jitter", re.I)
RENORMALISE = re.compile(r"normali[sz]e|\.norm\(|linalg\.norm", re.I)
COPY = re.compile(r"\.clone\(|\.copy\(|deepcopy|\.detach\(\)\.clone|local_var")
# prefilter, over whole files: the text draws random numbers (RANDOM's words, any case), and
# augmentation touches geometry (a matmul, a rotation), adds Gaussian noise, or changes a dataset
# item. Substring tests: a regex with a leading class or IGNORECASE tries every position
RANDOM_WORDS = ("rand", "normal(", "uniform", "noise", "jitter", "gauss")
AUGMENTING_WORDS = ("rotat", "matmul", "einsum", "bmm", "noise", "jitter", "augment", "randn", "normal(",
                    "__getitem__")
MATMUL_OPERATOR = re.compile(r"[\w)\]]\s*@\s*[\w(]")


def channel(text: str) -> Optional[str]:
    """Which part of the point features an expression is: slices first, then names."""
    for pattern, what in _SLICES:
        if pattern.search(text):
            return what
    for pattern, what in _NAMES:
        if pattern.search(text):
            return what
    return None


@dataclass
class Augmentation:
    kind: str  # rotation | jitter | cached
    span: Span
    message: str
    base: str = ""  # jitter: the name the noise is added to


@dataclass
class _Scope:
    rotated: dict[str, Span] = field(default_factory=dict)  # channel -> first rotation
    jitters: list[tuple[str, Span, str]] = field(default_factory=list)  # channel, span, base
    renormalised_after: list[int] = field(default_factory=list)  # lines of renormalisations
    cached: set[str] = field(default_factory=set)
    sliced: set[str] = field(default_factory=set)  # channels read by a slice (`x[..., 3:]`)
    mutations: list[tuple[str, Span]] = field(default_factory=list)
    draws: bool = False
    values: dict[str, cst.BaseExpression] = field(default_factory=dict)  # name -> last value
    rotated_slices: set[str] = field(default_factory=set)  # channels rotated as `x[..., 3:6]`
    params: set[str] = field(default_factory=set)


class InconsistentAugmentation(Rule):
    code = "GM503"
    name = "inconsistent-augmentation"
    severity = Severity.ERROR
    summary = "augmentation that rotates coordinates but not tangents/normals, jitters unit vectors, or mutates cached samples"
    prefilter = ("rand", "noise", "jitter", "augment")

    @classmethod
    def matches_text(cls, text: str) -> bool:
        # augmentation is random, and touches geometry (a matmul, a rotation) or a dataset item
        lowered = text.lower()
        return any(w in lowered for w in RANDOM_WORDS) and (
            any(w in text for w in AUGMENTING_WORDS) or ("@" in text and bool(MATMUL_OPERATOR.search(text))))
    doc = """
## What it does
Finds augmentation that runs per sample or per batch while training (in `__getitem__`, a
transform, a collate function, a forward or the training step, followed across files) and:

* rotates the coordinates (`xyz @ R.T`, `torch.matmul(pts[..., :3], rot)`, `np.dot`, `einsum`)
  without rotating the tangents and normals that the same features carry;
* adds random noise to tangents or normals (or to whole feature vectors that contain them)
  without renormalising them afterwards;
* modifies a sample the dataset keeps in memory (`g = self.graphs[idx]; g.ndata["feat"] += noise`)
  instead of a copy, so the augmentation piles up epoch after epoch.

A rotation is a product with a matrix built as one (a rotation helper, scipy's
`Rotation.as_matrix()`, the Q of a QR decomposition, sines and cosines), directly or through the
local names holding it; a matrix handed in as a parameter or attribute counts when its name says
rotation. Noise is a floating-point draw (`randn`, `normal`, `uniform`, a noise helper), not an
integer id or a comparison. A rotation applied to every channel (`for j in range(0, 9, 3): pts[..., j:j+3] @= R.T`) on a copy
is not reported, nor is augmentation in one-off data generation.

## Why is this bad?
A node's features are points *with their frame*: xyz, unit tangent, unit normal. Rotating only the
coordinates produces samples whose tangents point the wrong way; the decoder is trained on
geometry that does not exist and its reconstructions of real parts are scattered. Noise on unit
vectors makes them non-unit, while the scaled cosine error only looks at directions: the targets
become inconsistent with what evaluation compares against. In-place augmentation of cached samples
compounds: after 20 epochs the training parts are rotated or jittered 20 times and drift away from
the held-out distribution, while the loss curve still goes down normally. And since GraphMAE
reconstructs its own input, noise on the input is noise on the reconstruction target.

## Example
```python
def __getitem__(self, idx):
    g = self.graphs[idx]
    pts = g.ndata["feat"].view(-1, 12, 9)
    pts[..., :3] = pts[..., :3] @ random_rotation().T
    return g
```

## Use instead
```python
def __getitem__(self, idx):
    g = self.graphs[idx].clone()
    pts = g.ndata["feat"].view(-1, 12, 9).clone()
    R = random_rotation().T
    for j in (0, 3, 6):  # xyz, tangent, normal
        pts[..., j:j + 3] = pts[..., j:j + 3] @ R
    g.ndata["feat"] = pts.view(len(pts), -1)
    return g
```

## Fix safety
No automatic fix: whether the reference used augmentation at all, and of which kind, decides.

## References
- Hou et al., GraphMAE: Self-Supervised Masked Graph Autoencoders, KDD 2022.
"""

    VALID = [
        # every 3-vector of the features rotated in the training step; rows sliced, not channels
        Valid(
            "import torch\n\ndef train(model, opt, loader):\n    for g, x in loader:\n"
            "        rot = torch.linalg.qr(torch.randn(3, 3))[0]\n"
            "        x = torch.cat([x[..., :3] @ rot, x[..., 3:6] @ rot, x[..., 6:9] @ rot], dim=-1)\n"
            "        x = x[3:]\n        loss = model(g, x)\n        opt.zero_grad()\n"
            "        loss.backward()\n        opt.step()\n",
        ),
        # every channel rotated, on a copy
        Valid(
            "import torch\n\nclass DS:\n    def __getitem__(self, i):\n"
            "        pts = self.parts[i].clone()\n        R = random_rotation()\n"
            "        pts[..., 0:3] = pts[..., 0:3] @ R.T\n        pts[..., 3:6] = pts[..., 3:6] @ R.T\n"
            "        pts[..., 6:9] = pts[..., 6:9] @ R.T\n        return pts\n"
        ),
        Valid(
            "import torch\n\nclass DS:\n    def __getitem__(self, i):\n"
            "        xyz, tangent, normal = self.load(i)\n        rot = random_rotation()\n"
            "        return xyz @ rot.T, tangent @ rot.T, normal @ rot.T\n"
        ),
        # every channel rotated in a loop over the point's 3-vectors
        Valid(
            "import torch\n\ndef rotate_part(feat, k, rotation):\n"
            "    pts = feat.reshape(feat.shape[0], k, 9).clone()\n"
            "    for j in range(0, 9, 3):\n"
            "        pts[..., j : j + 3] = pts[..., j : j + 3] @ rotation.T\n"
            "    return pts.reshape(feat.shape[0], -1)\n\n"
            "class DS:\n    def __getitem__(self, i):\n"
            "        return rotate_part(self.feats[i], 12, random_rotation())\n"
        ),
        # jitter on directions, renormalised
        Valid(
            "import torch\nimport torch.nn.functional as F\n\ndef collate(batch):\n"
            "    normals = batch['normal'] + 0.01 * torch.randn_like(batch['normal'])\n"
            "    normals = F.normalize(normals, dim=-1)\n    return normals\n"
        ),
        # data generation, not training-time augmentation
        Valid(
            "import numpy as np\n\ndef generate_part(rng):\n    pts = make_profile(rng)\n"
            "    R = random_rotation(rng)\n    pts[..., :3] = pts[..., :3] @ R.T\n    return pts\n"
        ),
        # coordinate-only features: nothing else to rotate
        Valid(
            "class DS:\n    def __getitem__(self, i):\n        pos = self.pos[i].clone()\n"
            "        return pos @ random_rotation().T\n"
        ),
        # attention scores of learned projections (point features: xyz, tangent, normal): no
        # rotation, whatever the operands are called
        Valid(
            "import torch\nfrom torch import nn\n\nclass PointAttention(nn.Module):\n"
            "    def forward(self, pts):  # per point: xyz, tangent, normal\n"
            "        pts = pts + 0.01 * torch.randn_like(pts) if self.training else pts\n"
            "        Q = self.w_q(pts).transpose(1, 2)\n        K = self.w_k(pts).transpose(1, 2)\n"
            "        attn = torch.matmul(Q, K.transpose(-2, -1)) / self.scale\n"
            "        return attn.softmax(-1)\n\n"
            "def train(model, opt, loader):\n"
            "    for pts in loader:\n"
            "        loss = model(pts).sum()\n"
            "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
        ),
        # integer ids shifted past the true one (negative sampling): index arithmetic, not noise
        Valid(
            "import torch\n\ndef negatives(triplets, num_ent, tangent_feats):\n"
            "    rand_idxs = torch.randint(0, num_ent - 1, (len(triplets),))\n"
            "    rand_idxs += rand_idxs >= triplets[:, 0]\n"
            "    return rand_idxs\n\n"
            "def score(emb, rel, idx):\n"
            "    return emb[idx] @ rel.T\n\n"
            "def train(model, opt, triplets):\n"
            "    for step in range(10):\n"
            "        loss = model(negatives(triplets, 100, None)).sum()\n"
            "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
        ),
        # a VAE's reparameterisation: noise on a module's output (the latent code), not on data;
        # the embeddings of points with tangents and normals
        Valid(
            "import torch\nfrom torch import nn\n\nclass VAE(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.mean = nn.Linear(9, 4)\n        self.log_var = nn.Linear(9, 4)\n"
            "    def forward(self, pts):  # per point: xyz, tangent, normal\n"
            "        mu = self.mean(pts)\n        log_var = self.log_var(pts)\n"
            "        epsilon = torch.randn_like(mu)\n"
            "        z = mu + torch.exp(log_var / 2) * epsilon\n"
            "        return z\n\n"
            "model = VAE()\nopt = torch.optim.Adam(model.parameters())\n"
            "for pts in loader:\n"
            "    loss = model(pts).pow(2).mean()\n"
            "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
        ),
        # xyz and normals (then a mask): both 3-vectors rotated, nothing left to rotate
        Valid(
            "import torch\n\ndef rotate_grid(inp, rotation):\n"
            "    R = torch.tensor(rotation.as_matrix()).float()\n"
            "    inp[..., :3] = torch.mm(inp[..., :3].view(-1, 3), R).view(inp[..., :3].size())\n"
            "    inp[..., 3:6] = torch.mm(inp[..., 3:6].view(-1, 3), R).view(inp[..., :3].size())"
            "  # normals\n"
            "    return inp\n\n"
            "class DS:\n    def __getitem__(self, i):\n"
            "        return rotate_grid(self.grids[i].clone(), random_rotation())\n\n"
            "for grid in DS():\n    loss = model(grid)\n    loss.backward()\n"
        ),
    ]
    INVALID = [
        # a callable object passed as the loader's collate_fn rotates the coordinates only
        Invalid({
            "data.py": (
                "import dgl\nimport torch\n\nCOORD = slice(0, 24)\nTANGENT = slice(24, 48)\n\n"
                "class RandomRotation:\n"
                "    def __call__(self, graphs):\n"
                "        g = dgl.batch(graphs)\n"
                "        feat = g.ndata['feat'].clone()\n"
                "        rot = random_rotation()\n"
                "        feat[:, COORD] = (feat[:, COORD].reshape(len(feat), -1, 3) @ rot.T).reshape(len(feat), -1)\n"
                "        g.ndata['feat'] = feat\n"
                "        return g\n\n"
                "def make_loader(graphs, collate_fn=dgl.batch):\n"
                "    return torch.utils.data.DataLoader(graphs, batch_size=8, collate_fn=collate_fn)\n"
            ),
            "train.py": (
                "from data import RandomRotation, make_loader\n"
                "def train(model, opt, graphs):\n"
                "    for g in make_loader(graphs, collate_fn=RandomRotation()):\n"
                "        loss = model(g, g.ndata['feat'])\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
            ),
        }, path="data.py", line=12, message_contains="tangents"),
        # the coordinates rotated in the training step, the rest of each feature vector not
        Invalid(
            "import torch\n\ndef train(model, opt, loader):\n    for g, x in loader:\n"
            "        rot = torch.linalg.qr(torch.randn(3, 3))[0]\n"
            "        x = torch.cat([x[..., :3] @ rot, x[..., 3:]], dim=-1)\n"
            "        loss = model(g, x)\n        opt.zero_grad()\n        loss.backward()\n"
            "        opt.step()\n",
            line=6, message_contains="channels after them",
        ),
        Invalid(
            "import torch\n\nclass DS:\n    def __getitem__(self, i):\n"
            "        pts = self.parts[i].clone()  # xyz, tangent, normal\n        R = random_rotation()\n"
            "        pts[..., :3] = pts[..., :3] @ R.T\n        return pts\n",
            line=7, message_contains="tangents",
        ),
        Invalid(
            "import torch\n\nclass DS:\n    def __getitem__(self, i):\n"
            "        xyz, tangent, normal = self.load(i)\n        rot = random_rotation()\n"
            "        return xyz @ rot.T, tangent @ rot.T, normal\n",
            line=7, message_contains="normals",
        ),
        Invalid(
            "import torch\n\ndef collate(batch):\n"
            "    normals = batch['normal'] + 0.01 * torch.randn_like(batch['normal'])\n"
            "    return normals\n",
            line=4, message_contains="unit",
        ),
        Invalid(
            "import torch\n\nclass DS:\n    def __getitem__(self, idx):\n        g = self.graphs[idx]\n"
            "        g.ndata['feat'] += 0.01 * torch.randn_like(g.ndata['feat'])\n        return g\n",
            line=6, message_contains="in place",
        ),
        # augmentation helper in another file, called from the dataset
        Invalid(
            {
                "aug.py": "import torch\n\ndef augment(feat):\n    pts = feat.view(feat.shape[0], -1, 9)\n"
                "    R = random_rotation()\n    pts[..., 0:3] = pts[..., 0:3] @ R.T\n"
                "    pts[..., 3:6] = pts[..., 3:6] @ R.T  # normals forgotten\n    return feat\n",
                "data.py": "from aug import augment\n\nclass DS:\n    def __getitem__(self, i):\n"
                "        return augment(self.feats[i].clone())\n",
            },
            line=6, path="aug.py", message_contains="normals",
        ),
        # the noise drawn into a name first, then added to the normals
        Invalid(
            "import torch\n\ndef collate(batch):\n"
            "    noise = 0.01 * torch.randn_like(batch['normal'])\n"
            "    normals = batch['normal'] + noise\n"
            "    return normals\n",
            line=5, message_contains="unit",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.scopes: list[_Scope] = [_Scope()]
        self.names: list[str] = ["<module>"]
        source = ctx.source
        self.has = {TANGENT: bool(re.search(r"tan|3\s*:\s*6", source, re.I)),
                    NORMAL: bool(re.search(r"normal(?!i[sz])|nrm|6\s*:\s*9", source, re.I))}
        # the code itself shows a third 3-vector per point (a `6:9` slice, a view to 9 channels):
        # without one, a rotated `3:6` slice may be the normals (UV-Net: xyz, normal, mask)
        code = "\n".join(line.split("#", 1)[0] for line in source.splitlines())
        self.nine_wide = bool(re.search(r"6\s*:\s*9|[,(]\s*9\s*\)", code))

    # -- scopes ----------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        self.scopes.append(_Scope(params={p.name.value for p in params}))
        self.names.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        scope = self.scopes.pop()
        name = self.names.pop()
        self._conclude(scope, name)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._conclude(self.scopes[0], "<module>")

    def _conclude(self, scope: _Scope, name: str) -> None:
        if XYZ in scope.rotated:
            missing = [c for c in (TANGENT, NORMAL) if self.has[c] and c not in scope.rotated]
            if TANGENT in scope.rotated_slices and not self.nine_wide:
                missing = [c for c in missing if c != NORMAL]
            if REST in scope.sliced and REST not in scope.rotated and not missing \
                    and not {TANGENT, NORMAL} <= set(scope.rotated):
                missing = [REST]  # the features go on past the coordinates, unrotated
            if missing and ALL not in scope.rotated:
                self.fact(Augmentation(
                    "rotation", scope.rotated[XYZ],
                    f"the coordinates are rotated but the {' and '.join(missing)} are not: the "
                    "augmented samples carry a frame that does not match their points"))
        for what, span, base in scope.jitters:
            if any(r > span.line for r in scope.renormalised_after):
                continue
            self.fact(Augmentation(
                "jitter", span,
                f"random noise is added to {what} (unit vectors) without renormalising them: the "
                "directions stop being unit length and the reconstruction target is perturbed",
                base))
        if name == "__getitem__" and scope.draws:
            for text, span in scope.mutations:
                self.fact(Augmentation(
                    "cached", span,
                    f"`{text}` augments a sample the dataset keeps in memory, in place: the change "
                    "compounds every epoch"))

    # -- statements ------------------------------------------------------------------------------
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            self._rotation(node, [node.left, node.right])

    def visit_Subscript(self, node: cst.Subscript) -> None:
        what = channel(self.ctx.code(node, 120))
        if what == REST:
            self.scopes[-1].sliced.add(what)

    def visit_Call(self, node: cst.Call) -> None:
        func = self.ctx.qualify(node.func) or self.ctx.code(node.func, 60)
        scope = self.scopes[-1]
        if RANDOM.search(func) or "augment" in func.lower() or "rotat" in func.lower():
            scope.draws = True
        if RENORMALISE.search(func):
            scope.renormalised_after.append(self.ctx.span(node).line)
        last = func.rsplit(".", 1)[-1]
        if last in ("matmul", "dot", "einsum", "mm", "bmm"):
            self._rotation(node, [a.value for a in node.args if not isinstance(a.value, cst.SimpleString)])
        if isinstance(node.func, cst.Attribute) and last.endswith("_") and not last.startswith("_"):
            self._mutation(node.func.value, node)

    def _rotation(self, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> None:
        texts = [self.ctx.code(o, 120) for o in operands]
        rotations = [t for o, t in zip(operands, texts) if self._is_rotation(o, t)]
        if not rotations:
            return
        for text in texts:
            if text in rotations:
                continue
            what = channel(text) or ALL
            self.scopes[-1].rotated.setdefault(what, self.ctx.span(node))
            if any(pattern.search(text) for pattern, _ in _SLICES):
                self.scopes[-1].rotated_slices.add(what)

    def _is_rotation(self, operand: cst.BaseExpression, text: str, depth: int = 0) -> bool:
        """The operand holds a rotation matrix, by what built it: a call building one here, a
        local name last assigned one (through copies and transposes), or, for a matrix that
        comes from outside the function, its name. Attention scores `Q @ K.T` of learned
        projections are no rotation, whatever the letters."""
        if ROTATION_BUILT.search(text):
            return True
        root = _root(text)
        scope = self.scopes[-1]
        value = scope.values.get(root)
        if value is not None:
            return depth < 4 and self._is_rotation(value, self.ctx.code(value, 200), depth + 1)
        if root == "self" or root in scope.params:
            return bool(ROTATION_NAME.search(text))
        return False

    def _noise(self, added: cst.BaseExpression, depth: int = 0) -> bool:
        """The added value is floating-point noise: it calls a draw of noise, or reads a local
        name last assigned one. A comparison (`idx >= true_id`) is a boolean, an integer draw an
        index: neither is noise on features."""
        if isinstance(added, cst.Comparison) or depth > 4:
            return False
        scope = self.scopes[-1]
        todo: list[cst.CSTNode] = [added]
        while todo:
            sub = todo.pop()
            if isinstance(sub, cst.Call):
                func = self.ctx.qualify(sub.func) or self.ctx.code(sub.func, 60)
                if NOISE_CALL.search(func):
                    return True
                # `randn(n).to(device)`: a method of noise is noise; what another function (a
                # generator module) makes of noise it is given is not noise added to the data
                if isinstance(sub.func, cst.Attribute):
                    todo.append(sub.func.value)
                continue
            if isinstance(sub, cst.Name) and sub.value in scope.values:
                if self._noise(scope.values[sub.value], depth + 1):
                    return True
            todo.extend(sub.children)
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        scope = self.scopes[-1]
        value = self.ctx.code(node.value, 200)
        for target in node.targets:
            text = self.ctx.code(target.target, 80)
            if RENORMALISE.search(value):
                scope.renormalised_after.append(self.ctx.span(node).line)
            # `t = t + noise`: jitter on this channel
            if isinstance(node.value, cst.BinaryOperation) and isinstance(node.value.operator, cst.Add):
                self._jitter(text, node.value.right, node, _root(self.ctx.code(node.value.left, 80)))
            if isinstance(target.target, cst.Name) and self._from_cache(node.value):
                scope.cached.add(target.target.value)
            elif isinstance(target.target, cst.Name) and _root(value) in scope.cached and not COPY.search(value):
                scope.cached.add(target.target.value)  # a view of a cached sample
            elif not isinstance(target.target, cst.Name):
                self._mutation(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        text = self.ctx.code(node.target, 80)
        if isinstance(node.operator, cst.AddAssign):
            self._jitter(text, node.value, node, _root(text))
        self._mutation(node.target, node)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        # after the value was visited: a matmul in it read the names' earlier values
        for target in original_node.targets:
            if isinstance(target.target, cst.Name):
                self.scopes[-1].values[target.target.value] = original_node.value

    def _jitter(self, target: str, added_node: cst.BaseExpression, node: cst.CSTNode,
                base: str) -> None:
        if not self._noise(added_node):
            return
        added = self.ctx.code(added_node, 120)
        what = channel(target) or channel(added)
        if what in (TANGENT, NORMAL) or (what is None and (self.has[TANGENT] or self.has[NORMAL])):
            span = self.ctx.span(node)
            self.scopes[-1].jitters.append((what or ALL, span, base))

    def _from_cache(self, value: cst.BaseExpression) -> bool:
        """``self.graphs[idx]`` (no copy): the object the dataset keeps."""
        return isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) and \
            self.ctx.code(value.value, 60).startswith("self.")

    def _mutation(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        scope = self.scopes[-1]
        text = self.ctx.code(target, 80)
        root = _root(text)
        if root in scope.cached or (text.startswith("self.") and "[" in text):
            scope.mutations.append((self.ctx.code(node, 60), self.ctx.span(node)))

    # -- project stage ---------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        out = []
        for file, aug in project.rule_facts(cls.code):
            if aug.kind != "cached":
                fn = function_of(project, file.path, aug.span.line)
                if fn is None or stage_of(project, fn.qualname) is None:
                    continue  # one-off data generation, not training-time augmentation
                if aug.kind == "jitter" and _learned(project, fn, aug):
                    continue  # noise on a module's output (a VAE's reparameterisation): no data
            out.append(cls.make_finding(
                file.path, aug.span, aug.message,
                fix={"rotation": "apply the same rotation to xyz, tangents and normals",
                     "jitter": "renormalise the directions after the noise (F.normalize), or "
                     "jitter only the coordinates",
                     "cached": "augment a copy (`.clone()`), never the cached sample"}[aug.kind],
            ))
        return out

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """From the point features entering the training forwards and the samples drawn again:
        a coordinate-only rotation leaves tangents that no longer follow the points (mean |cos|
        between a tangent and the step to the next point far below 1); noise on directions makes
        them non-unit; an in-place change of a cached sample returns the very same object with
        other values when it is drawn again (needs a run past one epoch)."""
        if not evidence:
            return None
        hits = evidence.hits(finding.path, finding.line, finding.end_line)
        if not hits:
            return Verdict(Status.UNEXERCISED, ["the augmentation never ran"])
        lines = [f"ran {hits}x while training"]
        drift = [f"{s.changed} of {s.refetched} {s.dataset} samples drawn again came back with "
                 f"other features ({s.inplace} of them the same object, changed in place)"
                 for s in evidence.samples if s.refetched]
        frames = [f for f in evidence.frames if f.batches]
        if "in place" in finding.message:
            inplace = [s for s in evidence.samples if s.inplace]
            if inplace:
                return Verdict(Status.CONFIRMED, lines + drift)
            if any(s.refetched for s in evidence.samples):
                return Verdict(Status.REFUTED, lines + drift)
            return None  # no sample was drawn twice: the run stopped within the first epoch
        if "rotated" in finding.message:
            aligned = [f for f in frames if f.unit_directions and f.tangent_alignment is not None]
            bad = [f for f in aligned if f.tangent_alignment < ALIGNED_BROKEN]
            if bad:
                return Verdict(Status.CONFIRMED, lines + drift + [
                    f"tangents of input `{f.input}` follow their points with mean |cos| "
                    f"{f.tangent_alignment:.2f} (a consistent frame gives about 1)" for f in bad[:2]])
            if aligned and all(f.tangent_alignment >= ALIGNED_OK for f in aligned):
                return Verdict(Status.REFUTED, lines + [
                    f"tangents follow their points (mean |cos| {aligned[0].tangent_alignment:.3f})"])
            return None
        if "noise" in finding.message:
            # every row off unit length (not a few masked rows): the noise reached the directions
            bad = [f for f in frames if f.noisy_directions]
            if bad:
                return Verdict(Status.CONFIRMED, lines + [
                    f"direction vectors of input `{f.input}` are not unit length (median "
                    f"|len - 1| {f.direction_typical_dev:.2g}, worst {f.direction_norm_dev:.2g})"
                    for f in bad[:2]])
            if frames:
                return Verdict(Status.REFUTED, lines + ["tangents and normals stay unit length"])
        return None


ALIGNED_BROKEN = 0.9  # mean |cos(tangent, step to the next point)| below this: frames rotated away
ALIGNED_OK = 0.97  # a consistent frame (lines exactly 1, arcs and curves about 0.99)


def _learned(project: Project, fn: FunctionInfo, aug: Augmentation) -> bool:
    """The jittered value is the output of a module (learned), not data."""
    index = next((i for i, e in enumerate(fn.events) if e.span.line >= aug.span.line), None)
    return bool(aug.base) and index is not None and \
        kind_at(Training.of(project), fn, aug.base, index) == GRAD


def _root(text: str) -> str:
    return re.split(r"[.\[(]", text, maxsplit=1)[0]
