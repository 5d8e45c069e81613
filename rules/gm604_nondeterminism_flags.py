"""GM604 nondeterminism-flags: cuDNN autotuning or nondeterministic algorithms switched on in a
pipeline that seeds for reproducibility, and assignments to backend flags that do not exist."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.facts import Span
from auditor.static.project import Project
from auditor.static.values import Constants
from auditor.static.rng import project_seeding

if TYPE_CHECKING:  # the probe's evidence types cost a check run's start; used in annotations only
    from auditor.probe.evidence import Evidence

# Every attribute of these backend namespaces that a program can meaningfully assign (torch 2.x).
# `torch.backends.cuda` and `torch.backends.mps` have no assignable flags of their own: their
# switches live in `cuda.matmul`, `cuda.cufft_plan_cache` or are functions (`enable_flash_sdp()`).
REAL_FLAGS: dict[str, frozenset[str]] = {
    "torch.backends.cudnn": frozenset(
        {"enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32"}
    ),
    "torch.backends.cuda": frozenset(),
    "torch.backends.cuda.matmul": frozenset(
        {"allow_tf32", "allow_fp16_reduced_precision_reduction",
         "allow_bf16_reduced_precision_reduction"}
    ),
    "torch.backends.cuda.cufft_plan_cache": frozenset({"max_size"}),
    "torch.backends.mps": frozenset(),
}
ALL_FLAGS = sorted(f"{ns}.{flag}" for ns, flags in REAL_FLAGS.items() for flag in flags)


@dataclass
class FlagSet:
    """A reproducibility-relevant flag set to a literal: ``benchmark = True`` and friends."""

    what: str  # "cudnn.benchmark = True" | "cudnn.deterministic = False" | "use_deterministic_algorithms(False)"
    span: Span


def suggest(qualified: str) -> Optional[str]:
    """The real flag a misspelled ``torch.backends...`` assignment most likely meant: a close
    flag name under the same namespace first (``cuda.allow_tf32`` -> ``cuda.matmul.allow_tf32``),
    else the closest full path."""
    namespace, _, flag = qualified.rpartition(".")
    below = {f.rsplit(".", 1)[1]: f for f in ALL_FLAGS if f.startswith(namespace + ".")}
    close = difflib.get_close_matches(flag, below, n=1, cutoff=0.75)
    if close:
        return below[close[0]]
    close = difflib.get_close_matches(qualified, ALL_FLAGS, n=1, cutoff=0.75)
    return close[0] if close else None


def _literal(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value
    return None


class NondeterminismFlags(Rule):
    code = "GM604"
    name = "nondeterminism-flags"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "cuDNN benchmark / nondeterministic algorithms in a seeded run, or a misspelled backend flag"
    prefilter = ("backends", "cudnn", "use_deterministic_algorithms", "seed(")
    doc = """
## What it does
Finds, on the `torch.backends.cudnn`, `torch.backends.cuda` and `torch.backends.mps` namespaces:

* assignments to an attribute that is not a real flag (`torch.backends.cudnn.determinstic = True`)
  — an error, with the flag it was most likely meant to be. The real flags are
  `cudnn.{enabled, benchmark, benchmark_limit, deterministic, allow_tf32}`,
  `cuda.matmul.{allow_tf32, allow_fp16_reduced_precision_reduction,
  allow_bf16_reduced_precision_reduction}` and `cuda.cufft_plan_cache.max_size`; `cuda` and `mps`
  themselves have none;
* `cudnn.benchmark = True`, `cudnn.deterministic = False` and
  `torch.use_deterministic_algorithms(False)` in a project that seeds an RNG (the seeding is
  followed into helpers such as `set_seed()` across files) — a warning. A project that seeds
  nothing asks for no reproducibility, and these flags are then its own business.

## Why is this bad?
The way a broken GraphMAE pipeline is debugged is by running it next to the minimal script that
works with the same seeds and finding the first tensor that differs. With `cudnn.benchmark = True`
cuDNN picks its convolution algorithms by timing them, and with deterministic algorithms off
scatter/index-add kernels (the message passing of a GAT layer) sum in a different order on every
run: two runs with the same seed drift apart from the first step, and a real divergence cannot be
told from noise. A misspelled flag is worse: the module accepts any attribute, so
`cudnn.determinstic = True` silently creates a new attribute and the run is as nondeterministic
as before while the code claims otherwise.

## Example
```python
torch.manual_seed(0)
torch.backends.cudnn.determinstic = True
torch.backends.cudnn.benchmark = True
```

## Use instead
```python
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
```

## Fix safety
Safe: renaming a misspelled flag to the real one, or setting `benchmark = False` /
`deterministic = True`, changes only speed and run-to-run determinism, not what is computed.

## References
- https://pytorch.org/docs/stable/notes/randomness.html
- https://pytorch.org/docs/stable/backends.html
"""

    VALID = [
        Valid(
            "import torch\ntorch.manual_seed(0)\n"
            "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n"
        ),
        # no seeding at all: autotuning for speed is a legitimate choice
        Valid("import torch\ntorch.backends.cudnn.benchmark = True\n"),
        Valid("from torch.backends import cudnn\ncudnn.allow_tf32 = False\n"),
        Valid("import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n"),
        Valid("import torch\ntorch.manual_seed(0)\ntorch.use_deterministic_algorithms(True)\n"),
        # a flag taken from the command line: the user decides
        Valid("import torch\ntorch.manual_seed(0)\ntorch.backends.cudnn.benchmark = args.benchmark\n"),
        # an unrelated object with the same attribute name
        Valid("import random\nrandom.seed(0)\nopts.benchmark = True\n"),
        # the seeding helper is defined but never called: nothing asks for reproducibility
        Valid({
            "utils.py": "import torch\n\ndef set_seed(s):\n    torch.manual_seed(s)\n",
            "train.py": "import torch\ntorch.backends.cudnn.benchmark = True\n",
        }),
    ]
    INVALID = [
        Invalid("import torch\ntorch.backends.cudnn.determinstic = True\n", line=2, column=1,
                message_contains="torch.backends.cudnn.deterministic"),
        Invalid("import torch.backends.cudnn as cudnn\ncudnn.benchmarks = False\n", line=2,
                message_contains="benchmark"),
        Invalid("import torch\ntorch.backends.cuda.allow_tf32 = False\n", line=2,
                message_contains="torch.backends.cuda.matmul.allow_tf32"),
        Invalid("import torch\ntorch.backends.mps.deterministic = True\n", line=2),
        Invalid("import torch\ntorch.manual_seed(0)\ntorch.backends.cudnn.benchmark = True\n", line=3),
        Invalid("import torch\ntorch.manual_seed(0)\ntorch.use_deterministic_algorithms(False)\n", line=3),
        Invalid(
            {
                "utils.py": "import random\nimport numpy as np\nimport torch\n\n"
                "def set_seed(s):\n    random.seed(s)\n    np.random.seed(s)\n    torch.manual_seed(s)\n",
                "train.py": "import torch\nfrom utils import set_seed\n\n"
                "def main():\n    set_seed(0)\n    torch.backends.cudnn.deterministic = False\n\n"
                "main()\n",
            },
            line=6, path="train.py",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # `benchmark = cfg.get("benchmark", True)`: the value a flag gets, through constants
        self.constants = Constants()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.constants.enter_function(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.constants.leave_function()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.constants.assigned(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target, node.value)
        self.constants.assigned(node)

    def _check_target(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute):
            return
        qualified = self.ctx.qualify(target)
        namespace, _, flag = qualified.rpartition(".")
        if namespace not in REAL_FLAGS:
            return
        if flag not in REAL_FLAGS[namespace]:
            meant = suggest(qualified)
            hint = f"; did you mean `{meant}`?" if meant else ""
            self.report(
                target,
                f"`{qualified}` is not a flag of `{namespace}`: the assignment silently creates a "
                f"new attribute and changes nothing{hint}",
                fix=f"assign `{meant}` instead" if meant else f"remove the assignment; `{namespace}` "
                "has no such flag (see https://pytorch.org/docs/stable/backends.html)",
            )
            return
        literal = _literal(value)
        if literal is None:
            known = self.constants.evaluate(value, fallback=True)
            literal = str(known) if isinstance(known, bool) else None
        if (flag, literal) in (("benchmark", "True"), ("deterministic", "False")):
            self.fact(FlagSet(f"cudnn.{flag} = {literal}", self.ctx.span(target)))

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualify(node.func) != "torch.use_deterministic_algorithms" or not node.args:
            return
        if _literal(node.args[0].value) == "False":
            self.fact(FlagSet("torch.use_deterministic_algorithms(False)", self.ctx.span(node)))

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        flags = list(project.rule_facts(cls.code))
        if not flags:
            return []
        seeding = project_seeding(project)
        if not seeding.seeded:
            return []
        out = []
        for facts, flag in flags:
            # only the seeding of the programs that set the flag: another script's seeding says
            # nothing about this one's reproducibility
            calls = seeding.run_with(project, facts.path)
            if not calls:
                continue
            seeded = {f for c in calls for f in c.families}
            where = calls[0].function.qualname
            finding = cls.make_finding(
                facts.path, flag.span,
                f"`{flag.what}` makes runs nondeterministic, but the pipeline seeds "
                f"{', '.join(sorted(seeded))} (in `{where}`) to be reproducible: two runs with the "
                "same seed, or the pipeline and its reference, drift apart from the first step",
                fix="use `torch.backends.cudnn.benchmark = False`, "
                "`torch.backends.cudnn.deterministic = True` and "
                "`torch.use_deterministic_algorithms(True)` where reproducibility matters",
            )
            finding.severity = Severity.WARNING
            out.append(finding)
        return out

    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """A misspelled flag renamed to the real one under the same namespace (as written:
        ``cudnn.determinstic`` -> ``cudnn.deterministic``); ``benchmark = True`` set to False and
        ``deterministic = False`` to True. ``use_deterministic_algorithms(False)`` is left alone:
        switching it on raises at run time on ops without a deterministic kernel."""
        src = fixer.source(finding.path)
        target = src.node_at(finding, cst.Attribute) if src else None
        assign = src.enclosing(target, (cst.Assign,)) if src and target else None
        if src is None or not isinstance(target, cst.Attribute) or not isinstance(assign, cst.Assign):
            return None
        qualified = src.qualify(target)
        namespace, _, flag = qualified.rpartition(".")
        if namespace not in REAL_FLAGS:
            return None
        if flag not in REAL_FLAGS[namespace]:
            meant = suggest(qualified)
            if meant is None or not meant.startswith(namespace + "."):
                return None  # another namespace altogether: which flag was meant is a guess
            spelled = src.code(target.value) + meant[len(namespace):]
            return Fix(f"assign `{meant}` instead of the misspelled `{qualified}`",
                       [src.replace(target, cst.parse_expression(spelled))])
        value = {"benchmark": ("True", "False"), "deterministic": ("False", "True")}.get(flag)
        if value is None or _literal(assign.value) != value[0]:
            return None
        return Fix(f"set `cudnn.{flag} = {value[1]}` for reproducible runs",
                   [src.replace(assign.value, cst.Name(value[1]))])

    @classmethod
    def confirm(cls, finding: Finding, evidence: Evidence) -> Optional[Verdict]:
        """Confirmed when the assignment (or call) ran: the flag was set at run time."""
        if not evidence:
            return None
        hits = evidence.hits(finding.path, finding.line, finding.end_line)
        if hits:
            return Verdict(Status.CONFIRMED, [f"the flag was set at run time ({hits}x)"])
        return Verdict(Status.UNEXERCISED, ["the flag assignment never ran"])
