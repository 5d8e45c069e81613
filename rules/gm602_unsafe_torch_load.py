"""GM602 unsafe-torch-load: ``torch.load`` without ``weights_only=True``."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer, set_keyword
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.private_dirs import PrivateDirs
from auditor.static.programs import is_test_path

LOADERS = {"torch.load", "torch.serialization.load"}


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class UnsafeTorchLoad(Rule):
    code = "GM602"
    name = "unsafe-torch-load"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "`torch.load` without `weights_only=True` unpickles arbitrary code"
    prefilter = ("load(",)
    preview_kind = ("loads in test code (a test reading back what it wrote), and files read back "
                    "from a private temporary directory the same function made")

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

A checkpoint the same run saved and loads back (the best-epoch restore after training) is
reported too: it is still a pickle read from a path, and between the save and the load the file
can be replaced by whoever can write there (a shared checkpoint folder, `/tmp`), while
`weights_only=True` loads any `state_dict` the run saved at no cost. A file read from a private
temporary directory the same function made (`tempfile.TemporaryDirectory()`, `mkdtemp()`,
pytest's `tmp_path`/`tmpdir`: mode 0700, nobody else can write there), and any load in test code
(a test module, a `test*` function or a `Test*` class: a test reading back what it has just
written, which independent readers judged right in none of 15 sampled cases) are reported only
with `--preview`.

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
    ]
    INVALID = [
        Invalid("import torch\nstate = torch.load('w.pt')\n", line=2, column=9),
        Invalid("import torch as T\nckpt = T.load(path, map_location='cpu')\n", line=2),
        Invalid("from torch import load\nstate = load('w.pt', weights_only=False)\n", line=2),
        Invalid(
            {"util.py": "import torch\n\ndef restore(p):\n    return torch.load(p)\n"},
            line=4, path="util.py",
        ),
        # a private temporary directory: behind --preview (tests/test_preview.py), and a path
        # rebound to a shared folder afterwards is a path like any other
        Invalid(
            "import os, tempfile, torch\n\ndef roundtrip(save):\n"
            "    with tempfile.TemporaryDirectory() as d:\n"
            "        save(os.path.join(d, 'a.pt'))\n"
            "        d = '/tmp/shared'\n"
            "        return torch.load(os.path.join(d, 'a.pt'))\n",
            line=7,
        ),
        # the run's own best checkpoint, restored after training: still a pickle from a path
        Invalid(
            "import torch\n\ndef fit(model, epochs, path):\n    for epoch in range(epochs):\n"
            "        torch.save(model.state_dict(), path)\n"
            "    model.load_state_dict(torch.load(path))\n",
            line=6,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.private = PrivateDirs(ctx.qualify)
        self.scopes: list[str] = []  # enclosing function and class names

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.private.enter_function(node)
        self.scopes.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.private.leave_function()
        self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def _in_test(self) -> bool:
        """Test code: a test module or a file under a tests/ folder, a ``test*`` function, a
        ``Test*`` class."""
        return is_test_path(self.ctx.path) or any(
            s.startswith(("test", "Test")) or s.endswith("Test") for s in self.scopes)

    def visit_With(self, node: cst.With) -> None:
        self.private.bind_with(node)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self.private.bind_assign(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualify(node.func) not in LOADERS:
            return
        flag = next((a for a in node.args if a.keyword and a.keyword.value == "weights_only"), None)
        if flag is not None and _is_true(flag.value):
            return
        if flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "False"):
            return  # a variable: the caller decides; nothing to prove statically
        source = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "f"), None)
        private = source is not None and self.private.holds_path_in(source)
        self.report(
            node,
            "`torch.load` without `weights_only=True` unpickles arbitrary objects"
            + (" (explicitly disabled)" if flag is not None else "")
            + (" (from a private temporary directory this function made)" if private else ""),
            fix="pass `weights_only=True` so only tensors and plain containers are loaded",
            preview=private or self._in_test(),
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
