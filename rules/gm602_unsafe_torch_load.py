"""GM602 unsafe-torch-load: ``torch.load`` without ``weights_only=True``."""

from __future__ import annotations

import re
from typing import Any, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer, set_keyword
from auditor.rule import Invalid, Rule, Valid, Verdict

LOADERS = {"torch.load", "torch.serialization.load"}
SAVERS = {"torch.save", "torch.serialization.save"}


def _path_text(code: str) -> str:
    return re.sub(r"\s+", "", code)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class UnsafeTorchLoad(Rule):
    code = "GM602"
    name = "unsafe-torch-load"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "`torch.load` without `weights_only=True` unpickles arbitrary code"
    prefilter = ("load(",)

    @classmethod
    def matches_text(cls, text: str) -> bool:
        # resolving a call to torch.load needs torch imported in the same file
        return "load(" in text and "torch" in text
    doc = """
## What it does
Finds calls to `torch.load` that do not pass `weights_only=True`, or that pass
`weights_only=False`.

## Why is this bad?
Without `weights_only=True`, `torch.load` unpickles the file: a checkpoint downloaded with a
"pretrained GraphMAE" can run any code on the machine that loads it. Before torch 2.6 this is the
default. In a pipeline that reconstructs badly, the load is also where foreign weights enter the
model (see GM601): loading tensors only keeps that step auditable.

Not reported: a load, later in the same function, of the very path expression that function
wrote with `torch.save` (the best-epoch checkpoint saved in the training loop and restored after
it). That file holds what this run pickled itself a moment before; whoever can replace it in
between can write the program's own files, code included, so the load adds no exposure. A load
in another function (a `load_checkpoint` method, a resume at start-up) may read a file a previous
run or someone else left there, and is reported.

## Example
```python
state = torch.load("pretrained.pt")
model.load_state_dict(state)
```

## Use instead
```python
state = torch.load("pretrained.pt", weights_only=True)
model.load_state_dict(state)
```

## Fix safety
Safe: adds `weights_only=True`. A checkpoint holding pickled Python objects other than tensors and
plain containers will then fail to load, loudly, instead of executing code.

## References
- https://pytorch.org/docs/stable/generated/torch.load.html
"""

    VALID = [
        Valid("import torch\nstate = torch.load('w.pt', weights_only=True)\n"),
        Valid("import numpy as np\narr = np.load('x.npy')\n"),
        Valid("from torch import load\nstate = load('w.pt', map_location='cpu', weights_only=True)\n"),
        Valid("import pickle\nobj = pickle.load(open('x.pkl', 'rb'))\n"),
        Valid("def load(path):\n    return path\nload('x')\n"),
        # the best-epoch checkpoint this function wrote, restored after training
        Valid(
            "import torch\n\ndef fit(model, epochs, path):\n    for epoch in range(epochs):\n"
            "        torch.save(model.state_dict(), path)\n"
            "    model.load_state_dict(torch.load(path))\n"
        ),
    ]
    INVALID = [
        Invalid("import torch\nstate = torch.load('w.pt')\n", line=2, column=9),
        Invalid("import torch as T\nckpt = T.load(path, map_location='cpu')\n", line=2),
        Invalid("from torch import load\nstate = load('w.pt', weights_only=False)\n", line=2),
        Invalid(
            {"util.py": "import torch\n\ndef restore(p):\n    return torch.load(p)\n"},
            line=4, path="util.py",
        ),
        # saved to one path, loaded from another (a file from elsewhere)
        Invalid("import torch\ntorch.save(sd, 'out.pt')\nsd = torch.load(args.init)\n", line=3),
        # saved when training, loaded when not: the file is a previous run's
        Invalid(
            "import torch\n\ndef run(model, train, path):\n    if train:\n"
            "        torch.save(model.state_dict(), path)\n    else:\n"
            "        model.load_state_dict(torch.load(path))\n",
            line=7,
        ),
        # saved by one method, loaded by another: the file may be a previous run's
        Invalid(
            "import torch\n\nclass Stopper:\n"
            "    def save(self, model):\n        torch.save(model.state_dict(), self.filename)\n"
            "    def load(self, model):\n        model.load_state_dict(torch.load(self.filename))\n",
            line=7,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # per enclosing function (innermost last): the path expressions its `torch.save` calls
        # have written so far, in source order, each with the `if` branches it ran under
        self.saved: list[set[tuple[str, tuple]]] = [set()]
        self.branches: list[tuple[int, str]] = []  # (id of an `if`, "body" | "else")
        self._ifs: list[cst.If] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.saved.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.saved.pop()

    def visit_If(self, node: cst.If) -> None:
        if self.branches and self.branches[-1][0] == id(self._ifs[-1]) and \
                self._ifs[-1].orelse is node:
            self.branches[-1] = (self.branches[-1][0], "else")  # an `elif`
        self._ifs.append(node)
        self.branches.append((id(node), "body"))

    def leave_If(self, original_node: cst.If) -> None:
        self._ifs.pop()
        self.branches.pop()

    def visit_Else(self, node: cst.Else) -> None:
        if self._ifs and self._ifs[-1].orelse is node:
            self.branches[-1] = (self.branches[-1][0], "else")

    def _saved_on_path(self, path: str) -> bool:
        """A save of ``path`` earlier in this function on every path to here: its branches are
        a prefix of the current ones (not the `if` side of an `if save / else load`)."""
        here = tuple(self.branches)
        return any(p == path and here[:len(under)] == under for p, under in self.saved[-1])

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified in SAVERS:
            target = next((a.value for a in node.args if a.keyword and a.keyword.value == "f"),
                          node.args[1].value if len(node.args) > 1 else None)
            if target is not None:
                self.saved[-1].add((_path_text(self.ctx.code(target)), tuple(self.branches)))
            return
        if qualified not in LOADERS:
            return
        flag = next((a for a in node.args if a.keyword and a.keyword.value == "weights_only"), None)
        if flag is not None and _is_true(flag.value):
            return
        if flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "False"):
            return  # a variable: the caller decides; nothing to prove statically
        source = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "f"),
                      None)
        if flag is None and source is not None \
                and self._saved_on_path(_path_text(self.ctx.code(source))):
            return  # the checkpoint this function saved above (best-epoch restore): see the doc
        self.report(
            node,
            "`torch.load` without `weights_only=True` unpickles arbitrary objects"
            + (" (explicitly disabled)" if flag is not None else ""),
            fix="pass `weights_only=True` so only tensors and plain containers are loaded",
        )

    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """Pass ``weights_only=True`` (or turn an explicit ``False`` into ``True``)."""
        src = fixer.source(finding.path)
        call = src.node_at(finding, cst.Call) if src else None
        if src is None or not isinstance(call, cst.Call):
            return None
        return Fix("pass `weights_only=True` to `torch.load`",
                   [src.replace(call, lambda c: set_keyword(c, "weights_only", cst.Name("True")))])

    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        """Confirmed when the load at this line ran without ``weights_only=True``."""
        loads = [f for f in evidence.loads_at(finding.path, finding.line, finding.end_line)
                 if f.kind == "torch.load"]
        if not loads:
            return None  # the line did not run: the probe reports it unexercised
        unsafe = [f for f in loads if f.weights_only is not True]
        if not unsafe:
            return Verdict(Status.REFUTED, [f"torch.load ran {len(loads)} time(s), always "
                                            "with weights_only=True"])
        return Verdict(Status.CONFIRMED, [f"torch.load ran {len(unsafe)} time(s) with "
                                          f"weights_only={unsafe[0].weights_only}: the file was "
                                          "unpickled with arbitrary objects allowed"])
