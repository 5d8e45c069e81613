"""GM601 weight-loading: foreign, partial or aliased weights loaded into the model being trained."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Hashable, Iterable, Optional

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.fix import Fix, Fixer, keyword_arg
from auditor.rule import Invalid, Rule, Valid, Verdict
from auditor.static.conditions import innermost
from auditor.static.dataflow import statement_at
from auditor.static.facts import Event, FunctionInfo
from auditor.static.paths import (PathSearch, Step, call_sites_of, forward_use, in_one_program,
                                  is_backward, runs_before, trains_after)
from auditor.static.training import Training
from auditor.static.project import Project
from auditor.static.texts import dict_entries

FILE_LOADERS = {
    "torch.load", "torch.serialization.load", "torch.hub.load_state_dict_from_url",
    "torch.utils.model_zoo.load_url", "safetensors.torch.load_file",
}
# `{k: v for k, v in sd.items() if ...}`: a state dict with some keys dropped
STATE_OF = re.compile(r"^([\w.]+)\.state_dict\(\)$")
# `ckpt["model"]`: a named section of a loaded checkpoint
SECTION = re.compile(r"""(\w+)\[\s*["'](\w+)["']\s*\]""")
KEY_FILTER = re.compile(r"\bfor\s+\w+\s*,\s*\w+\s+in\s+[^:]*\.items\(\)\s+if\b")
# ... then `.state_dict()` of what the filter picked: a module chosen by key, loaded whole
_PICKED_THEN_WHOLE = re.compile(r"\)\s*\.\s*state_dict\(\s*\)")
# `{k[len(p):]: v for k, v in sd.items() if k.startswith(p)}`: one sub-module's keys, under the
# sub-module's own names (a prefix cut off): what it holds is taken whole, not some of it
_REBASED = re.compile(
    r"\{\s*(\w+)\s*(?:\[[^\]]*:\s*\]|\.\s*(?:removeprefix|replace|partition|split)\s*\()[^}]*"
    r"\bfor\s+\1\s*,\s*\w+\s+in\s+[^:]*\.items\(\)\s+if\s+\1\s*\.\s*startswith\(")


def filters_keys(text: str) -> bool:
    """Does ``text`` build a state dict without some of its keys (``{k: v for k, v in
    sd.items() if ...}``)? Not when the filter picks a module whose whole state dict is taken
    (``next(m for k, m in models.items() if ...).state_dict()``)."""
    found = KEY_FILTER.search(text)
    return found is not None and not _PICKED_THEN_WHOLE.search(text, found.end()) \
        and not _REBASED.search(text)
BY_REFERENCE = re.compile(r"^\s*([\w.]+)\s*=\s*([\w.]+)\.state_dict\(\)\s*$")
# a live state dict as a value: `model.state_dict()`
LIVE_STATE = re.compile(r"\s*[\w.]+\.state_dict\(\)\s*")
# an entry of a container read by a literal key: `best["state"]`, `best.get("state")`
_ENTRY = re.compile(r"""([\w.]+)(?:\[\s*(['"])(\w+)\2\s*\]|\.get\(\s*(['"])(\w+)\4\s*(?:,[^()]*)?\))""")
# identifiers a gate tests: args.pretrained, cfg["init_from"], config.get("resume")
GATE_NAME = re.compile(
    r"\b(?:args|opt|opts|cfg|config|conf|hparams|params|flags|options|settings)\s*"
    r"(?:\.\s*(\w+)|\[\s*[\"'](\w+)[\"']\s*\]|\.get\(\s*[\"'](\w+)[\"'])"
)
OFF_VALUES = {"None", "False", '""', "''", "0", "[]", "{}"}
MAX_UP = 3


# a trainer whose validation keeps the best state as `state = {kept}` in a dict on the instance,
# restored after the loop (the examples)
_KEPT_BEST = (
    "class Trainer:\n"
    "    def __init__(self, model, opt):\n"
    "        self.model, self.opt, self.best = model, opt, {{'loss': 1e9, 'state': None}}\n"
    "    def validate(self, loss):\n"
    "        if loss < self.best['loss']:\n"
    "            state = {kept}\n"
    "            self.best = {{'loss': loss, 'state': state}}\n"
    "    def fit(self, loader):\n"
    "        for g in loader:\n"
    "            loss = self.model(g)\n"
    "            self.opt.zero_grad()\n"
    "            loss.backward()\n"
    "            self.opt.step()\n"
    "            self.validate(loss.item())\n"
    "        self.model.load_state_dict(self.best['state'])\n"
)


def _probed_encoder(load: str) -> dict[str, str]:
    """A linear probe over an encoder whose keys are picked from a whole model's checkpoint
    (under the encoder's own names) and loaded by ``load``; the encoder runs frozen after it
    (the rule's examples)."""
    return {k: v.replace("{load}", load) for k, v in _PROBED_ENCODER.items()}


_PROBED_ENCODER = {
    "model.py":
        "from torch import nn\n"
        "class Enc(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        return self.lin(x)\n",
    "probe.py":
        "import torch\n"
        "from torch import nn\n"
        "from model import Enc\n"
        "def load_encoder(path):\n"
        "    enc = Enc()\n"
        "    sd = torch.load(path, weights_only=True)['model']\n"
        "    enc_sd = {k[len('encoder.'):]: v for k, v in sd.items() if k.startswith('encoder.')}\n"
        "    {load}\n"
        "    return enc\n"
        "def embed(enc, x):\n"
        "    with torch.no_grad():\n"
        "        return enc(x)\n"
        "def main(x, y, path):\n"
        "    enc = load_encoder(path)\n"
        "    enc.eval()\n"
        "    z = embed(enc, x)\n"
        "    head = nn.Linear(4, 2)\n"
        "    opt = torch.optim.Adam(head.parameters())\n"
        "    for _ in range(10):\n"
        "        opt.zero_grad()\n"
        "        loss = nn.functional.cross_entropy(head(z), y)\n"
        "        loss.backward()\n"
        "        opt.step()\n",
    "run.py":
        "import probe\n"
        "if __name__ == '__main__':\n"
        "    probe.main(None, None, 'pre.pt')\n",
}


def _section_checkpoint(load: str) -> dict[str, str]:
    """A trainer whose mixin saves ``{"model": self.model.state_dict(), ...}`` and a probe stage
    loading that section back by ``model.<load>`` (the rule's examples)."""
    files = {
        "trainer.py": (
            "import torch\n"
            "class CheckpointMixin:\n"
            "    def save_checkpoint(self, path):\n"
            "        state = {'model': self.model.state_dict(), 'step': self.step}\n"
            "        torch.save(state, path)\n"
            "class BaseTrainer:\n"
            "    def __init__(self, model):\n"
            "        self.model, self.step = model, 0\n"
            "class Trainer(CheckpointMixin, BaseTrainer):\n"
            "    def __init__(self, model):\n"
            "        super().__init__(model)\n"
        ),
        "model.py": (
            "from torch import nn\n"
            "class MAE(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder = nn.Linear(4, 4)\n"
            "        self.decoder = nn.Linear(4, 4)\n"
        ),
        "probe.py": (
            "import torch\nfrom model import MAE\nfrom trainer import Trainer\n"
            "def main(path, x):\n"
            "    Trainer(MAE()).save_checkpoint(path)\n"
            "    model = MAE()\n"
            "    state = torch.load(path, weights_only=True)\n"
            "    model.{load}\n"
            "    return model.encoder(x)\n"
            "if __name__ == '__main__':\n"
            "    main('c.pt', torch.ones(4))\n"
        ),
    }
    return {name: text.replace("{load}", load) for name, text in files.items()}


def _is_strict_false(event: Event) -> bool:
    return event.kwargs.get("strict") == "False" or event.args[1:2] == ["False"]


def _may_skip_keys(event: Event) -> bool:
    """Can this load leave keys out? A strict one (the default) loads every key or raises."""
    strict = event.kwargs.get("strict", event.args[1] if len(event.args) > 1 else "True")
    return strict != "True"


# the entries of a module's own state dict that a top-level name may be (`sd["weight"]`)
_PARAMETER_NAMES = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}


def _section_read(fn: FunctionInfo, name: str) -> Optional[Event]:
    """An event of ``fn`` reading ``name`` by a key no parameter has (``ckpt["iteration"]``,
    ``ckpt["model"]``): ``name`` is a checkpoint of named sections, not a state dict."""
    if not re.fullmatch(r"[\w.]+", name):
        return None
    read = re.compile(rf"\b{re.escape(name)}\s*\[\s*[\"'](\w+)[\"']\s*\]")
    return next((e for e in fn.events for m in read.finditer(e.text)
                 if m.group(1) not in _PARAMETER_NAMES), None)


def _saved_sections(project: Project) -> dict[str, list[tuple[FunctionInfo, int, str]]]:
    """Section name -> (function, event, module) of the checkpoints the project writes as a
    dict of sections (``torch.save({"model": m.state_dict(), "step": s}, path)``, or the dict
    built in a local first)."""
    memo = project.memo("gm601_sections")
    if "" not in memo:
        out: dict[str, list[tuple[FunctionInfo, int, str]]] = {}
        for fn, e in project.events("call"):
            if e.func != "torch.save" or not e.args:
                continue
            k = fn.events.index(e)
            texts = [e.args[0]]
            if re.fullmatch(r"\w+", e.args[0]):  # `state = {...}` then `torch.save(state, path)`
                texts += [x.text.split("=", 1)[1] for x in fn.events[:k]
                          if x.kind == "assign" and x.targets == [e.args[0]] and "=" in x.text]
            for text in texts:
                for key, value in dict_entries(text.strip()).items():
                    made = STATE_OF.match(value.strip())
                    if made is not None:
                        out.setdefault(key, []).append((fn, k, made.group(1)))
        memo[""] = out
    return memo[""]


def _whole_into_part(project: Project, fn: FunctionInfo, i: int, arg: str, target: str) -> Optional[str]:
    """Where the project saves, as the section ``arg`` reads (``state["model"]``), the state of
    a whole model that ``target`` is a part of (``model.encoder``): every key carries the
    part's prefix, none matches. None when not so, or not known."""
    section = SECTION.fullmatch(arg.strip())
    owner = target.rsplit(".", 1)[0] if "." in target.removeprefix("self.") else ""
    if section is None or not owner:
        return None
    t = Training.of(project)
    whole = t.origins(fn, owner, i)
    for f, k, module in _saved_sections(project).get(section.group(2), []):
        theirs = t.origins(f, module, k)
        if whole and all(o.known for o in whole + theirs) and {o.cls for o in whole} & {o.cls for o in theirs}:
            return f"{f.path}:{f.events[k].span.line}"
    return None


def _statement_text(project: Project, fn: FunctionInfo, event: Event) -> str:
    """The whole source of the statement an event belongs to (its summary keeps it shortened)."""
    if "…" not in event.text:
        return event.text
    stmt = statement_at(fn, event.span.line)
    return (project.text_at(fn.path, stmt.head.span) if stmt is not None else None) or event.text


def _keys_checked(project: Project, fn: FunctionInfo, event: Event) -> bool:
    """The load's answer (its missing and unexpected keys) is tested where it is made: the load
    sits in an ``assert``, or what it returns is asserted, tested or raised on afterwards
    (``missing, unexpected = m.load_state_dict(sd, strict=False)``, ``if missing: raise``)."""
    text = project.source_text(fn.path) or ""
    lines = text.splitlines()
    line = lines[event.span.line - 1] if 0 < event.span.line <= len(lines) else ""
    if re.match(r"\s*assert\b", line):
        return True
    names = [t for t in event.targets if re.fullmatch(r"\w+", t)]
    return any(re.match(rf"\s*(assert|if|elif|raise)\b.*\b{re.escape(n)}\b", e.text)
               for n in names for e in fn.events if e.span.line > event.span.line)


def _kept_in_entry(fn: FunctionInfo, arg: str, before: int) -> list[Event]:
    """Events before line ``before`` that store a live ``state_dict()`` in the entry ``arg``
    reads (``best["state"] = model.state_dict()``, ``best.update(state=model.state_dict())``,
    ``best = {"state": model.state_dict()}``)."""
    entry = _ENTRY.fullmatch(arg.strip())
    if entry is None:
        return []
    base, key = entry.group(1), entry.group(3) or entry.group(5)
    out = []
    for e in fn.events:
        if e.span.line >= before:
            continue
        if e.kind == "call" and e.receiver == base and e.method == "update":
            values = [e.kwargs.get(key, "")] + [dict_entries(a).get(key, "") for a in e.args[:1]]
        elif e.kind == "assign" and base in e.targets:
            values = [dict_entries(e.text.split("=", 1)[1]).get(key, "")] if e.targets == [base] else []
            out = []  # rebound (`state = torch.load(...)`): what was kept before is gone
        elif e.kind == "assign" and re.fullmatch(rf"{re.escape(base)}\[\s*(['\"]){key}\1\s*\]\s*=[^=].*",
                                                 e.text.split("\n", 1)[0].strip()):
            values = [e.text.split("=", 1)[1]]
        else:
            continue
        if any(LIVE_STATE.fullmatch(v) for v in values if v):
            out.append(e)
            continue
        # a name bound to the live state dict before (`state = net.state_dict()`): where it was
        out += [d for v in values if re.fullmatch(r"\s*\w+\s*", v or "-")
                for d in _derived_names(fn, v.strip(), e.span.line + 1) if d is not e and BY_REFERENCE.match(d.text)][:1]
    return out


def _derived_names(fn: FunctionInfo, name: str, before: int) -> list[Event]:
    """Events before line ``before`` that produced ``name`` (transitively through assigns)."""
    todo, seen, out = [name.split("[")[0]], set(), []
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        for e in fn.events:
            if e.span.line >= before or cur not in e.targets:
                continue
            out.append(e)
            if e.kind in ("assign", "augassign"):
                todo += [u for u in e.uses if "." not in u]
    return out


def program_files(project: Project, fn: FunctionInfo) -> list[str]:
    """The files of the program that runs ``fn``: its own, its callers' (up to the scripts that
    start it), and the project modules those import (a config module holding the parser).
    Another script's parser with a flag of the same name configures another program."""
    quals = [fn.qualname, *project.ancestors(fn.qualname)]
    paths = {project.functions[q].path for q in quals if q in project.functions}
    for path in list(paths):
        facts = project.files.get(path)
        for target in (facts.imports.values() if facts else ()):
            parts = target.split(".")
            for k in range(len(parts), 0, -1):
                module = project.modules.get(".".join(parts[:k]))
                if module is not None:
                    paths.add(module.path)
                    break
    return sorted(paths, key=lambda p: (p != fn.path, p))


def flag_default(project: Project, flag: str, fn: FunctionInfo) -> Optional[tuple[str, str]]:
    """(default value text, where) of a command-line flag / config key / settings field named
    ``flag``, searched in the files of the program that runs ``fn``; None when not found."""
    dashed = flag.replace("_", "-")
    patterns = [
        re.compile(r"add_argument\(\s*[\"']--(?:%s|%s)[\"'](?P<rest>[^)]*)\)" % (flag, dashed), re.S),
        re.compile(r"[\"']%s[\"']\s*:\s*(?P<value>[^,\n}]+)" % flag),
        re.compile(r"^\s*%s\s*(?::[^=\n]+)?=\s*(?P<value>[^\n#]+)" % flag, re.M),
    ]
    project.load_mentioning(flag)
    for path in program_files(project, fn):
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for pat in patterns:
            m = pat.search(text)
            if not m:
                continue
            line = text.count("\n", 0, m.start()) + 1
            if "rest" in m.groupdict():
                rest = m.group("rest")
                if re.search(r"action\s*=\s*[\"']store_true", rest):
                    return "False", f"{path}:{line}"
                d = re.search(r"default\s*=\s*([^,\n]+)", rest)
                return (d.group(1).strip() if d else "None"), f"{path}:{line}"
            return m.group("value").strip().rstrip(","), f"{path}:{line}"
    return None


class WeightLoading(Rule):
    code = "GM601"
    name = "weight-loading"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "weights loaded into the trained model: strict=False, partial, by default, aliased"
    prefilter = ("load_state_dict",)
    doc = """
## What it does
Finds `load_state_dict` calls that put other weights into the model the pipeline trains:

- `load_state_dict(..., strict=False)` on the trained model (missing and unexpected keys are
  silently ignored): an error when the keys are known to differ (a key-filtered state dict,
  the `state_dict()` of a module of another class), at `info` when no static pass can see them
  (a checkpoint file, a module whose making is not followed): `gm-audit probe` then confirms a
  load that skipped keys and refutes one that matched them all (a file loaded by default is
  still an error, as the checkpoint kind below);
- partial loads: a state dict whose keys were filtered (`{k: v for k, v in sd.items() if ...}`),
  also into a module the pipeline runs without training it (a frozen teacher, an EMA target:
  the dropped layers keep their random initialisation for good);
- a checkpoint or pretrained file (`torch.load`, `load_state_dict_from_url`) loaded into the
  model before training *by default*: unconditionally, whenever the file exists, or behind a flag
  whose default (argparse `default=`, a config dict value, a settings field) turns it on;
- a state dict kept by reference (`best = model.state_dict()` with no `copy.deepcopy` or
  `.clone()`) and later loaded back.

"The trained model" is followed across calls and files: a module that runs forward with
gradients before a backward after the load whose optimizer holds its parameters. A module the
pipeline runs without training it (a frozen feature extractor under a linear probe, a teacher)
is reported for a `strict=False` load at `info` when its keys cannot be seen, and for a
key-filtered one. Picking one sub-module's keys under its own names
(`{k[len(p):]: v for k, v in sd.items() if k.startswith(p)}`) is no partial load. Silent as
well: a strict resume of a checkpoint behind an opt-in flag whose default is off; `strict=False` between two modules built by the same constructor or
factory (every key matches); and, for the checkpoint kind, a load that restores what this run
trained or saved before it (the best epoch restored after the training loop, or a file written
by `torch.save` earlier in the run: `pretrain()` saves, `finetune()` loads) and a strict load of
a pretrained file into a component of the trained model (`model.gnn.load_state_dict(...)`, the
new head trained from scratch: fine-tuning by construction).

## Why is this bad?
GraphMAE's reconstruction depends on every layer: the mask token, the encoder, the
`encoder_to_decoder` projection and the decoder. A `strict=False` or key-filtered load mixes
pretrained layers with freshly initialised ones (typically after a renamed module or a
`module.` prefix from DDP, *no* key matches and nothing is loaded at all), and a stale default
checkpoint starts training from weights fitted to other data or another normalisation: the loss
still decreases, but the reconstructions are scattered compared with the minimal script. A state
dict kept by reference tracks the live parameters, so "restoring the best model" restores the
last one.

## Example
```python
import torch

parser.add_argument("--init-from", default="runs/pretrained.pt")
args = parser.parse_args()
state = torch.load(args.init_from, weights_only=True)
model.load_state_dict(state, strict=False)
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Use instead
```python
import torch

parser.add_argument("--init-from", default=None)
args = parser.parse_args()
if args.init_from:
    missing, unexpected = model.load_state_dict(torch.load(args.init_from, weights_only=True))
for g, x in loader:
    loss = model(g, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Fix safety
Unsafe: making a load strict turns silent mismatches into errors, and turning a default
checkpoint off changes what the run starts from; both change results on purpose.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict
- https://pytorch.org/tutorials/beginner/saving_loading_models.html
"""

    VALID = [
        # the same trainer keeping a copy of every tensor
        Valid(_KEPT_BEST.format(kept="{k: v.detach().clone() for k, v in self.model.state_dict().items()}")),
        # the same section loaded into the whole model: its keys
        Valid(_section_checkpoint("load_state_dict(state['model'], strict=False)")),
        # a sub-module's keys picked from a whole model's checkpoint and loaded strictly: every
        # key of the encoder is there, or the load raises
        Valid(_probed_encoder("enc.load_state_dict(enc_sd)")),
        # a module picked by key, its whole state dict loaded strictly: no key is dropped
        Valid(
            "import torch\nfrom torch import nn\n"
            "class Model(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.encoders = nn.ModuleDict({'a': nn.Linear(d, d), 'b': nn.Linear(d, d)})\n"
            "        self.encoder_ema = nn.Linear(d, d)\n"
            "        self.encoder_ema.load_state_dict(next(\n"
            "            (m for k, m in self.encoders.items() if k.startswith('a')), None).state_dict())\n"
            "        for p in self.encoder_ema.parameters():\n"
            "            p.requires_grad = False\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            target = self.encoder_ema(x)\n"
            "        return (self.encoders['a'](x) - target).pow(2).mean()\n"
        ),
        # the same through a name, in a statement long enough that its summary is shortened
        Valid(
            "import torch\nfrom torch import nn\n"
            "class Model(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.encoders_by_node_type = nn.ModuleDict({'a': nn.Linear(d, d), 'b': nn.Linear(d, d)})\n"
            "        self.encoder_ema = nn.Linear(d, d)\n"
            "        for node_type in ('a', 'b'):\n"
            "            weights_dict = next(\n"
            "                (module_of_type for key, module_of_type in self.encoders_by_node_type.items() if node_type in key),\n"
            "                None\n"
            "            ).state_dict()\n"
            "            self.encoder_ema.load_state_dict(weights_dict)\n"
            "        for p in self.encoder_ema.parameters():\n"
            "            p.requires_grad = False\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            target = self.encoder_ema(x)\n"
            "        return (self.encoders_by_node_type['a'](x) - target).pow(2).mean()\n"
        ),
        # strict resume behind an opt-in flag whose default is off
        Valid(
            "import argparse\nimport torch\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--resume', default=None)\n"
            "args = p.parse_args()\n"
            "if args.resume:\n"
            "    model.load_state_dict(torch.load(args.resume, weights_only=True))\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
        ),
        # best weights copied, reloaded after training for the final evaluation
        Valid(
            "import copy\n"
            "best = None\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    best = copy.deepcopy(model.state_dict())\n"
            "model.load_state_dict(best)\n"
        ),
        # opt-in through a config dict in another module, off by default
        Valid({
            "config.py": "CONFIG = {\n    'lr': 1e-3,\n    'init_from': None,\n}\n",
            "train.py":
                "import torch\nfrom config import CONFIG as cfg\n"
                "def main(model, loader):\n"
                "    if cfg['init_from']:\n"
                "        model.load_state_dict(torch.load(cfg['init_from'], weights_only=True))\n"
                "    for g in loader:\n"
                "        loss = model(g)\n"
                "        loss.backward()\n",
        }),
        # the encoder's best checkpoint restored after its own training; what trains next is a
        # probe with its own optimizer, on the encoder's detached output
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "def main(enc, head, x, y, epochs):\n"
            "    opt = torch.optim.Adam(enc.parameters())\n"
            "    for _ in range(epochs):\n"
            "        opt.zero_grad()\n"
            "        enc(x).pow(2).mean().backward()\n"
            "        opt.step()\n"
            "        torch.save(enc.state_dict(), 'best.pt')\n"
            "    head_opt = torch.optim.Adam(head.parameters())\n"
            "    enc.load_state_dict(torch.load('best.pt', weights_only=True))\n"
            "    z = enc(x).detach()\n"
            "    for _ in range(epochs):\n"
            "        head_opt.zero_grad()\n"
            "        loss = F.cross_entropy(head(z), y)\n"
            "        loss.backward()\n"
            "        head_opt.step()\n"
        ),
        # the best epoch restored after each stage's training loop (saved by an early-stopping
        # helper of this run), before the next stage trains
        Valid({
            "stopping.py":
                "import torch\n"
                "class EarlyStopping:\n"
                "    def __init__(self, path):\n"
                "        self.path = path\n"
                "        self.best = None\n"
                "    def step(self, loss, model):\n"
                "        if self.best is None or loss < self.best:\n"
                "            self.best = loss\n"
                "            torch.save(model.state_dict(), self.path)\n",
            "train.py":
                "import torch\nfrom stopping import EarlyStopping\n"
                "def run(build, loader, stages):\n"
                "    for stage in range(stages):\n"
                "        model = build()\n"
                "        opt = torch.optim.Adam(model.parameters())\n"
                "        stopper = EarlyStopping('best.pt')\n"
                "        for epoch in range(10):\n"
                "            for g in loader:\n"
                "                loss = model(g)\n"
                "                opt.zero_grad()\n"
                "                loss.backward()\n"
                "                opt.step()\n"
                "            stopper.step(loss.item(), model)\n"
                "        model.load_state_dict(torch.load('best.pt', weights_only=True))\n"
                "        print(model(loader[0]))\n",
        }),
        # pretrain() saves, finetune() loads that file: a handoff within one run
        Valid(
            "import torch\n"
            "class Flow:\n"
            "    def __init__(self, model, head, loader, path):\n"
            "        self.model = model\n"
            "        self.head = head\n"
            "        self.loader = loader\n"
            "        self.path = path\n"
            "    def pretrain(self):\n"
            "        opt = torch.optim.Adam(self.model.parameters())\n"
            "        for g in self.loader:\n"
            "            loss = self.model(g)\n"
            "            loss.backward()\n"
            "            opt.step()\n"
            "        torch.save(self.model.state_dict(), self.path)\n"
            "    def finetune(self):\n"
            "        state = torch.load(self.path, weights_only=True)\n"
            "        self.model.load_state_dict(state)\n"
            "        opt = torch.optim.Adam(list(self.model.parameters()) + list(self.head.parameters()))\n"
            "        for g in self.loader:\n"
            "            loss = self.head(self.model(g))\n"
            "            loss.backward()\n"
            "            opt.step()\n"
            "    def train(self):\n"
            "        self.pretrain()\n"
            "        self.finetune()\n"
            "Flow(build(), head(), loader(), 'pre.pt').train()\n"
        ),
        # fine-tuning: a pretrained GNN loaded (strictly) into the model's backbone by default,
        # its new head trained from scratch
        Valid(
            "import argparse\nimport torch\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--input-model-file', default='pretrained.pth')\n"
            "args = p.parse_args()\n"
            "model = Classifier(gnn=GIN(), num_tasks=12)\n"
            "if args.input_model_file:\n"
            "    model.gnn.load_state_dict(torch.load(args.input_model_file, weights_only=True))\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # strict=False between two instances the same factory built: every key matches
        Valid(
            "import torch\nfrom torch import nn\n"
            "class GraphMAE(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.enc = nn.Linear(d, d)\n"
            "    def forward(self, g):\n"
            "        return self.enc(g).pow(2).mean()\n"
            "def build_model(d):\n"
            "    return GraphMAE(d)\n"
            "model = build_model(8)\n"
            "eval_model = build_model(8)\n"
            "eval_model.load_state_dict(model.state_dict(), strict=False)\n"
            "opt = torch.optim.Adam(eval_model.parameters())\n"
            "for g in loader:\n"
            "    loss = eval_model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        ),
        # fine-tuning: the pretraining stage saves the state of a model the same factory
        # builds; strict=False lets the fine-tuning head (not in that file) keep its init
        Valid({
            "models.py":
                "from torch import nn\n"
                "class Model(nn.Module):\n"
                "    def __init__(self, backbone, head):\n"
                "        super().__init__()\n"
                "        self.backbone, self.head = backbone, head\n"
                "    def forward(self, x):\n"
                "        return self.head(self.backbone(x))\n"
                "def get_model(dim, num_class=None):\n"
                "    head = nn.Identity() if num_class is None else nn.Linear(dim, num_class)\n"
                "    return Model(nn.Linear(dim, dim), head)\n",
            "pretrain.py":
                "import torch\n"
                "from torch import nn\n"
                "from models import get_model\n"
                "def run(loader, save_path):\n"
                "    model = get_model(16)\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for x in loader:\n"
                "        loss = model(x).pow(2).mean()\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "    torch.save(model.state_dict(), save_path)\n",
            "adapt.py":
                "import torch\n"
                "import torch.nn.functional as F\n"
                "from models import get_model\n"
                "def run(loader, pretrained_file):\n"
                "    model = get_model(16, num_class=4)\n"
                "    model.load_state_dict(torch.load(pretrained_file, weights_only=True), strict=False)\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for x, y in loader:\n"
                "        loss = F.cross_entropy(model(x), y)\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n",
        }),
        # strict=False whose skipped keys are looked at: asserted empty, or raised on
        Valid(
            "import torch\nfrom torch import nn\n"
            "def load(path):\n"
            "    encoder = nn.Linear(4, 4)\n"
            "    assert not encoder.load_state_dict(torch.load(path, weights_only=True), strict=False).missing_keys\n"
            "    return encoder\n"
            "def probe(path, x):\n"
            "    return load(path)(x)\n"
        ),
        Valid(
            "import torch\nfrom torch import nn\n"
            "def load(path):\n"
            "    encoder = nn.Linear(4, 4)\n"
            "    missing, unexpected = encoder.load_state_dict(torch.load(path, weights_only=True), strict=False)\n"
            "    if missing:\n"
            "        raise KeyError(missing)\n"
            "    return encoder\n"
            "def probe(path, x):\n"
            "    return load(path)(x)\n"
        ),
    ]
    INVALID = [
        # the file the project saves comes from a model built elsewhere: keys may not match
        Invalid({
            "models.py":
                "from torch import nn\n"
                "class Model(nn.Module):\n"
                "    def __init__(self, backbone, head):\n"
                "        super().__init__()\n"
                "        self.backbone, self.head = backbone, head\n"
                "    def forward(self, x):\n"
                "        return self.head(self.backbone(x))\n"
                "def get_model(dim, num_class=None):\n"
                "    head = nn.Identity() if num_class is None else nn.Linear(dim, num_class)\n"
                "    return Model(nn.Linear(dim, dim), head)\n",
            "pretrain.py":
                "import torch\n"
                "from torch import nn\n"
                "from models import get_model\n"
                "def run(loader, save_path):\n"
                "    model = nn.Linear(16, 16)\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for x in loader:\n"
                "        loss = model(x).pow(2).mean()\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "    torch.save(model.state_dict(), save_path)\n",
            "adapt.py":
                "import torch\n"
                "import torch.nn.functional as F\n"
                "from models import get_model\n"
                "def run(loader, pretrained_file):\n"
                "    model = get_model(16, num_class=4)\n"
                "    model.load_state_dict(torch.load(pretrained_file, weights_only=True), strict=False)\n"
                "    opt = torch.optim.Adam(model.parameters())\n"
                "    for x, y in loader:\n"
                "        loss = F.cross_entropy(model(x), y)\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n",
        }, path="adapt.py", line=6, message_contains="strict=False"),
        Invalid(
            "import torch\n"
            "model.load_state_dict(torch.load('pre.pt', weights_only=True), strict=False)\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n",
            line=2, column=1, message_contains="strict=False",
        ),
        # a pretrained file by default: the flag's default is a path
        Invalid(
            "import argparse\nimport torch\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--init-from', default='runs/pretrained.pt')\n"
            "args = p.parse_args()\n"
            "if args.init_from:\n"
            "    model.load_state_dict(torch.load(args.init_from, weights_only=True))\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n",
            line=7, message_contains="default",
        ),
        # a helper in another module drops the decoder keys
        Invalid({
            "ckpt.py":
                "import torch\n"
                "def load_encoder(model, path):\n"
                "    state = torch.load(path, weights_only=True)\n"
                "    state = {k: v for k, v in state.items() if not k.startswith('decoder')}\n"
                "    own = model.state_dict()\n"
                "    own.update(state)\n"
                "    model.load_state_dict(own)\n",
            "train.py":
                "from ckpt import load_encoder\n"
                "def main(model, opt, loader):\n"
                "    load_encoder(model, 'enc.pt')\n"
                "    for g in loader:\n"
                "        loss = model(g)\n"
                "        loss.backward()\n"
                "        opt.step()\n",
        }, line=7, path="ckpt.py", message_contains="partial"),
        # the "best" state dict is a reference to the live parameters
        Invalid(
            "best = None\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    best = model.state_dict()\n"
            "model.load_state_dict(best)\n",
            line=5, message_contains="reference",
        ),
        # auto-resume: whatever checkpoint a previous run left behind
        Invalid(
            "import os\nimport torch\n"
            "if os.path.exists('ckpt/last.pt'):\n"
            "    model.load_state_dict(torch.load('ckpt/last.pt', weights_only=True))\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n",
            line=4, message_contains="exists",
        ),
        # auto-resume: the run saves the same file, but only after the load
        Invalid(
            "import os\nimport torch\n"
            "if os.path.exists('ckpt/last.pt'):\n"
            "    model.load_state_dict(torch.load('ckpt/last.pt', weights_only=True))\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    torch.save(model.state_dict(), 'ckpt/last.pt')\n",
            line=4, message_contains="exists",
        ),
        # strict=False from a module of another class
        Invalid(
            "import torch\nfrom torch import nn\n"
            "class Teacher(nn.Module):\n"
            "    pass\n"
            "class Student(nn.Module):\n"
            "    pass\n"
            "teacher = Teacher()\n"
            "model = Student()\n"
            "model.load_state_dict(teacher.state_dict(), strict=False)\n"
            "opt = torch.optim.Adam(model.parameters())\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            line=9, message_contains="strict=False",
        ),
        # an EMA target initialised from the encoder with the bias keys dropped: it is never
        # trained, so those layers stay random
        Invalid(
            "import copy\nimport torch\nfrom torch import nn\n"
            "class Model(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.encoder = nn.Linear(d, d)\n"
            "        self.encoder_ema = nn.Linear(d, d)\n"
            "        self.encoder_ema.load_state_dict(\n"
            "            {k: v for k, v in self.encoder.state_dict().items() if not k.endswith('bias')},\n"
            "            strict=False)\n"
            "        for p in self.encoder_ema.parameters():\n"
            "            p.requires_grad = False\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            target = self.encoder_ema(x)\n"
            "        return (self.encoder(x) - target).pow(2).mean()\n",
            line=9, message_contains="fresh initialisation",
        ),
        # the best weights restored after training without their biases, then evaluated through
        # a call in a return: the evaluated model mixes the best weights and the last biases
        Invalid(
            "import copy\nimport torch\n"
            "class Trainer:\n"
            "    def __init__(self, model):\n"
            "        self.model = model\n"
            "        self.opt = torch.optim.Adam(model.parameters())\n"
            "    def train(self, loader, epochs):\n"
            "        best = None\n"
            "        for epoch in range(epochs):\n"
            "            for g in loader:\n"
            "                loss = self.model(g)\n"
            "                self.opt.zero_grad()\n"
            "                loss.backward()\n"
            "                self.opt.step()\n"
            "            best = copy.deepcopy(self.model.state_dict())\n"
            "        final = self.model\n"
            "        final.load_state_dict({k: v for k, v in best.items() if 'bias' not in k}, strict=False)\n"
            "        return self.evaluate(final, loader)\n"
            "    def evaluate(self, model, loader):\n"
            "        with torch.no_grad():\n"
            "            return [model(g) for g in loader]\n",
            line=17, message_contains="the last training step's values",
        ),
        # a loader function returns the partially loaded model; its caller trains it
        Invalid(
            "import torch\nimport torch.nn as nn\n"
            "def load_pretrained(path):\n"
            "    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
            "    ckpt = torch.load(path, weights_only=True)\n"
            "    model.load_state_dict({k: v for k, v in ckpt.items() if 'bias' not in k}, strict=False)\n"
            "    return model\n"
            "def main(loader):\n"
            "    net = load_pretrained('pre.pt')\n"
            "    opt = torch.optim.Adam(net.parameters())\n"
            "    for x, y in loader:\n"
            "        loss = (net(x) - y).pow(2).mean()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n",
            line=6, message_contains="strict=False",
        ),
        # one sub-module's keys under its own names, loaded with strict=False into a frozen
        # feature extractor: not a partial load, but whether the keys match is the run's to show
        Invalid(_probed_encoder("enc.load_state_dict(enc_sd, strict=False)"),
                path="probe.py", line=8, message_contains="cannot be seen statically"),
        # a frozen teacher loaded leniently from a file: never trained, and what it holds after
        # the load (its targets) is the run's to show
        Invalid(
            "import torch\n"
            "teacher.load_state_dict(torch.load('t.pt', weights_only=True), strict=False)\n"
            "for g in loader:\n"
            "    with torch.no_grad():\n"
            "        t = teacher(g)\n"
            "    loss = model(g, t)\n"
            "    loss.backward()\n",
            line=2, message_contains="cannot be seen statically",
        ),
        # the whole checkpoint (sections "model", "iteration") given as the state dict: with
        # strict=False nothing matches and the best model is left as it was
        Invalid(
            "import torch\n"
            "def load_best(model, path):\n"
            "    ckpt = torch.load(path, weights_only=True)\n"
            "    model.load_state_dict(ckpt, strict=False)\n"
            "    return ckpt['iteration']\n"
            "def main(model, opt, loader, x):\n"
            "    for g in loader:\n"
            "        loss = model(g)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    torch.save({'model': model.state_dict(), 'iteration': 1}, 'best.pt')\n"
            "    load_best(model, 'best.pt')\n"
            "    return model(x)\n"
            "if __name__ == '__main__':\n"
            "    main(None, None, [], None)\n",
            line=4, message_contains="checkpoint of sections",
        ),
        # a whole model's section of a checkpoint the project writes (through a mixin whose
        # `self.model` the trainer's base sets) loaded into the model's encoder: no key matches
        Invalid(_section_checkpoint("encoder.load_state_dict(state['model'], strict=False)"),
                path="probe.py", line=8, message_contains="whole model it is part of (saved at trainer.py:5)"),
        # the best state kept in a dict's entry, by reference, then restored after the loop
        Invalid(
            "best = {'loss': 1e9, 'state': None}\n"
            "for g in loader:\n"
            "    loss = model(g)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    if loss.item() < best['loss']:\n"
            "        best.update(loss=loss.item(),\n"
            "                    state=model.state_dict())\n"
            "model.load_state_dict(best['state'])\n",
            line=8, message_contains="loaded back at example.py:9",
        ),
        # a trainer's validation keeps the best state on the instance, in a dict's entry, under
        # a name bound to the live state dict; fit restores it after the loop
        Invalid(
            _KEPT_BEST.format(kept='self.model.state_dict()'),
            line=6, message_contains="`self.model.state_dict()` keeps a reference",
        ),
    ]

    # -- static ------------------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        for fn in list(project.functions.values()):
            for i, event in enumerate(fn.events):
                if event.kind == "call" and event.method == "load_state_dict" and event.receiver:
                    finding = cls._check_load(project, fn, i, event)
                    if finding is not None:
                        yield finding

    @classmethod
    def _check_load(cls, project: Project, fn: FunctionInfo, i: int,
                    event: Event) -> Optional[Finding]:
        arg = event.args[0] if event.args else event.kwargs.get("state_dict", "")
        target = event.receiver
        origins = _derived_names(fn, arg, event.span.line) if arg else []
        updates = [e for e in fn.events if e.kind == "call" and e.method == "update"
                   and e.receiver == arg and e.span.line < event.span.line]
        for up in updates:
            origins += _derived_names(fn, up.args[0], up.span.line) if up.args else []

        by_ref = next((e for e in origins if BY_REFERENCE.match(e.text)
                       and not updates and cls._trained_between(project, fn, e, event)), None)
        if by_ref is None and arg:  # kept in a container's entry (`best["state"]`)
            by_ref = next((e for e in _kept_in_entry(fn, arg, event.span.line)
                           if cls._trained_between(project, fn, e, event)), None)
        if by_ref is None and arg.startswith("self.") and fn.class_name:
            # kept on the instance by one method, loaded back by another (in an entry of a
            # dict it keeps there too: `self.best = {"state": state}`)
            methods = [f for q, f in project.functions.items() if q.startswith(fn.class_name + ".") and f is not fn]
            by_ref = next((e for f in methods for e in f.events
                           if arg in e.targets and BY_REFERENCE.match(e.text)), None) \
                or next((e for f in methods for e in _kept_in_entry(f, arg, f.span.end_line + 1 if f.span else 10**9)),
                        None)
        if by_ref is not None:
            # reported where the reference is kept: that is where the copy goes
            owner = next((f for f in project.functions.values() if f.path == fn.path
                          and any(e is by_ref for e in f.events)), fn)
            taken = next((e for e in owner.events if e.kind == "call" and e.method == "state_dict"
                          and by_ref.span.line <= e.span.line <= by_ref.span.end_line), by_ref)
            return cls.make_finding(
                owner.path, taken.span,
                f"`{taken.receiver + '.state_dict()' if taken is not by_ref else arg}` keeps a reference to the "
                f"live parameters, and `{arg}` is loaded back at {fn.path}:{event.span.line}: that "
                "restores the current weights, not the ones kept then",
                fix=f"keep a copy: `copy.deepcopy({target}.state_dict())`",
            )

        # the argument, not the call's text; both are shortened when long: the call that is
        # the argument has its whole text
        start = " ".join(arg[:-1].split())
        whole = next((e.text for e in fn.events if arg.endswith("…") and "…" not in e.text
                      and " ".join(e.text.split()).startswith(start)), arg)
        filtered = event if arg and filters_keys(whole) else next(
            (e for e in origins if filters_keys(_statement_text(project, fn, e))), None)
        if not _may_skip_keys(event) and not updates:
            # loaded strictly, a filtered dict is a sub-module's whole state or an error; one
            # completed from the module's own (`own.update(filtered)`) keeps what it held
            filtered = None
        if _is_strict_false(event) and filtered is None and _keys_checked(project, fn, event):
            return None  # the keys it skipped are looked at: not silent
        trained = trains_after(project, fn, i, target)
        if trained is None and not cls._optimised_here(fn, target):
            if not cls._runs_later(project, fn, i, target):
                return None
            if filtered is None:
                # a frozen feature extractor or a teacher: with strict=False and keys no static
                # pass sees, what it runs with is the run's to show
                if not _is_strict_false(event):
                    return None
                keys = cls._keys_match(project, fn, i, arg, target)
                where = "on a module the pipeline runs after it"
                if keys is False:
                    return cls._lenient(fn, event, target, where, _section_read(fn, arg),
                                        _whole_into_part(project, fn, i, arg, target))
                return cls._unseen_keys(fn, event, target, where) if keys is None else None
            # a frozen teacher or an EMA target: the dropped layers are never trained at all
            return cls.make_finding(
                fn.path, event.span,
                f"partial load: the state dict loaded into `{target}` was filtered by key "
                f"({fn.path}:{filtered.span.line}); `{target}` runs in the pipeline without being "
                "trained after it, so the dropped layers keep what they held before the load (a "
                "fresh initialisation, or the last training step's values) instead of the loaded ones",
                fix="load the whole state dict strictly (or copy the module)",
            )
        if cls._file_loads(project, fn, event, origins) and _section_read(fn, arg) is None \
                and Training.of(project).saved_alike(fn, target, i):
            # a stage of the project saves the state of a module built alike (pretrain, then
            # fine-tune with a new head): loading it, strict=False for that head, is the handoff
            return None
        keys = cls._keys_match(project, fn, i, arg, target)
        lenient: Optional[Finding] = None  # strict=False where no static pass sees the keys
        if _is_strict_false(event) and keys is not True:
            if filtered is not None or keys is False:
                # keys dropped, or another class's: some surely do not match
                return cls._lenient(fn, event, target, "on the trained model", _section_read(fn, arg),
                                    _whole_into_part(project, fn, i, arg, target))
            lenient = cls._unseen_keys(fn, event, target, "on the trained model")
        if filtered is not None:
            return cls.make_finding(
                fn.path, event.span,
                f"partial load: the state dict loaded into `{target}` was filtered by key "
                f"({fn.path}:{filtered.span.line}); the dropped layers keep their initialisation",
                fix="load the whole state dict strictly, or re-initialise and train the dropped "
                "layers on purpose",
            )
        from_file = cls._file_loads(project, fn, event, origins)
        if not from_file or trained is None:
            return lenient
        if "." in target.removeprefix("self."):
            # a component of the trained model (`model.gnn`) initialised from a pretrained
            # file, the rest (a new head) fresh: a fine-tuning setup by construction
            return lenient
        if cls._trained_earlier(project, fn, i, target) or cls._saved_earlier(project, fn, i, from_file):
            return lenient  # it restores what this run trained and saved: not a start from stale weights
        default_on = cls._default_on(project, fn, event)
        if default_on is None:
            return lenient
        return cls.make_finding(
            fn.path, event.span,
            f"a checkpoint/pretrained file is loaded into the trained model before training "
            f"{default_on}: the run does not start from the fresh initialisation the reference "
            "script trains" + (", with strict=False: keys it lacks are skipped silently"
                               if lenient is not None else ""),
            fix="make loading opt-in (a flag whose default is off) and load strictly",
        )

    @staticmethod
    def _file_loads(project: Project, fn: FunctionInfo, event: Event,
                    origins: list[Event]) -> list[Event]:
        """The file loads the state dict of the load ``event`` comes from: in the call itself,
        among the events that made its argument, or in a project function one of them calls."""
        inline = [e for e in fn.events if e.kind == "call" and e.func in FILE_LOADERS
                  and event.span.line <= e.span.line <= event.span.end_line]
        from_file = inline + [e for e in origins if e.kind == "call" and e.func in FILE_LOADERS]
        return from_file + [e for e in origins if e.kind == "call" and any(
            project.function(q) is not None and any(
                x.kind == "call" and x.func in FILE_LOADERS for x in project.function(q).events)
            for q in project.resolve_call(e, fn))]

    @staticmethod
    def _trained_between(project: Project, fn: FunctionInfo, saved: Event, load: Event) -> bool:
        """The parameters changed between ``saved`` (a state_dict() taken) and ``load``: a
        backward or optimizer step between them, or around both in a loop."""
        def steps(e: Event) -> bool:
            if e.kind != "call":
                return False
            if e.method in ("backward", "step"):
                return True
            return any(project.function(q) is not None and any(
                x.method in ("backward", "step") for x in project.function(q).events)
                for c in project.resolve_call(e, fn) for q in project.reachable_from(c))
        for e in fn.events:
            between = saved.span.line < e.span.line < load.span.line
            same_loop = bool(set(e.loop_ids) & set(saved.loop_ids))
            if (between or same_loop) and steps(e):
                return True
        return False

    @classmethod
    def _lenient(cls, fn: FunctionInfo, event: Event, target: str, where: str,
                 section: Optional[Event] = None, whole: Optional[str] = None) -> Finding:
        """``section``: where the loaded dict is read by a section's name: no key matches.
        ``whole``: where the whole model whose part ``target`` is was saved as that dict."""
        if whole is not None:
            return cls.make_finding(
                fn.path, event.span,
                f"`{target}.load_state_dict(..., strict=False)` {where} is given the state of the "
                f"whole model it is part of (saved at {whole}): every key carries the part's "
                "prefix, none matches, nothing is loaded, and strict=False hides it",
                fix="load the part's entries with the prefix stripped, strictly",
            )
        if section is not None:
            return cls.make_finding(
                fn.path, event.span,
                f"`{target}.load_state_dict(..., strict=False)` {where} is given a checkpoint of "
                f"sections, not a state dict (`{section.text.strip()}` at {fn.path}:"
                f"{section.span.line} reads one by name): no key matches, nothing is loaded",
                fix="load the section that holds the weights, strictly",
            )
        return cls.make_finding(
            fn.path, event.span,
            f"`{target}.load_state_dict(..., strict=False)` {where}: missing and unexpected keys "
            "are ignored silently, so some layers keep their fresh initialisation (or nothing is "
            "loaded at all)",
            fix="load strictly, and map renamed keys explicitly if the checkpoint differs",
        )

    @classmethod
    def _unseen_keys(cls, fn: FunctionInfo, event: Event, target: str, where: str) -> Finding:
        """A file's keys, or those of a module made where the program model cannot follow, are
        the run's to show: the probe confirms a load that skipped keys and refutes one that
        matched them all."""
        finding = cls._lenient(fn, event, target, where)
        finding.severity = Severity.INFO
        finding.message += ("; which keys the state dict holds cannot be seen statically: "
                            "`gm-audit probe` reports the keys the load skipped")
        return finding

    @staticmethod
    def _runs_later(project: Project, fn: FunctionInfo, i: int, target: str) -> bool:
        """``target`` runs forward after the load: on a path from it, or, for a module its
        owner holds (``self.encoder_ema``), in a method of that owner."""
        if target.startswith("self.") and fn.class_name:
            cls_info = project.classes.get(fn.class_name)
            methods = [project.function(q) for q in (cls_info.methods if cls_info else ())]
            if any(forward_use(e, target) for m in methods if m is not None for e in m.events):
                return True

        def ran(step: Step, state: Hashable) -> tuple[Optional[str], Hashable]:
            forward = any(forward_use(step.event, name) for name in step.names)
            return ("ran" if forward else None), state
        outcomes = PathSearch(project, ran).run(fn, i, target, False)
        return any(o.verdict == "ran" and in_one_program(project, fn, o) for o in outcomes)

    @staticmethod
    def _keys_match(project: Project, fn: FunctionInfo, i: int, arg: str, target: str) -> Optional[bool]:
        """For ``target.load_state_dict(other.state_dict())``: True when both modules were built
        by the same constructor (or factory, or one is a deep copy of the other), so the keys
        match; False when they are of other classes. None when the keys cannot be known
        statically: a state dict from a file, or a module whose making is not followed. False
        as well for a checkpoint of named sections (:func:`_section_read`)."""
        if _section_read(fn, arg) is not None:
            return False
        t = Training.of(project)
        section = SECTION.fullmatch(arg.strip())
        if section is not None:
            # `state["model"]` of a checkpoint the project saves as {"model": m.state_dict()}:
            # the keys are those of `m`'s class (a whole model's, loaded into its encoder: none)
            if _whole_into_part(project, fn, i, arg, target) is not None:
                return False
            saved = _saved_sections(project).get(section.group(2), [])
            theirs = [o for f, k, module in saved for o in t.origins(f, module, k)]
            mine = t.origins(fn, target, i)
            if not saved or not all(o.known and o.cls for o in mine + theirs):
                return None
            return {o.cls for o in mine} == {o.cls for o in theirs}
        m = STATE_OF.match(arg.strip())
        if m is None:
            return None
        mine, theirs = t.origins(fn, target, i), t.origins(fn, m.group(1), i)
        if not all(o.known and o.cls for o in mine + theirs):
            return None
        return {o.cls for o in mine} == {o.cls for o in theirs}

    @staticmethod
    def _trained_earlier(project: Project, fn: FunctionInfo, i: int, target: str) -> bool:
        """A training loop of ``fn`` that ends before the load ran ``target`` forward: the load
        restores weights of this run (the best epoch), after training."""
        at, training = fn.events[i], Training.of(project)
        for loop_id in sorted({lid for e in fn.events[:i] for lid in e.loop_ids} - set(at.loop_ids)):
            body = [j for j, e in enumerate(fn.events) if loop_id in e.loop_ids]
            if body[-1] > i or not any(
                    forward_use(fn.events[j], target) or any(
                        a == target or a.startswith(target + ".") for a in fn.events[j].args)
                    for j in body):
                continue
            if any(is_backward(fn.events[j]) or (fn.events[j].kind == "call" and any(
                    training.contains(q, "backward") for q in project.resolve_call(fn.events[j], fn)))
                   for j in body):
                return True
        return False

    @staticmethod
    def _saved_earlier(project: Project, fn: FunctionInfo, i: int, loads: list[Event]) -> bool:
        """The file loaded is one this run wrote before (``torch.save(..., same path)`` earlier
        in the function, or in what ran before it: ``pretrain()`` saves, ``finetune()`` loads)."""
        def norm(text: str) -> str:
            return re.sub(r"\s+", "", text)
        files = {norm(e.args[0]) for e in loads if e.args}

        def saves(f: FunctionInfo, e: Event) -> bool:
            dest = e.args[1] if len(e.args) > 1 else e.kwargs.get("f", "")
            return e.kind == "call" and e.func == "torch.save" and norm(dest) in files \
                and (not dest.startswith("self.") or f.class_name == fn.class_name)
        return bool(files) and runs_before(project, fn, i, saves) is not None

    @staticmethod
    def _optimised_here(fn: FunctionInfo, target: str) -> bool:
        return any(e.kind == "call" and e.func.startswith("torch.optim.")
                   and any(a.startswith(f"{target}.parameters") for a in e.args) for e in fn.events)

    @classmethod
    def _default_on(cls, project: Project, fn: FunctionInfo, event: Event,
                    up: int = 0) -> Optional[str]:
        """Why the load runs by default ("unconditionally", "by default: --x defaults to ..."),
        or None when it is opt-in (or the gate cannot be decided)."""
        gate = innermost(event)
        if gate is None or "__name__" in gate:  # the script's main guard is no opt-in
            if up >= MAX_UP:
                return "unconditionally"
            sites = call_sites_of(project, fn)
            if not sites:
                return "unconditionally"
            reasons = [cls._default_on(project, c, c.events[i], up + 1) for c, i in sites]
            return next((r for r in reasons if r is not None), None)
        names = [n for m in GATE_NAME.finditer(gate) for n in m.groups() if n]
        for name in names:
            found = flag_default(project, name, fn)
            if found is None:
                continue
            value, where = found
            if value in OFF_VALUES:
                return None
            return f"by default: `{name}` defaults to {value} ({where})"
        if "exists(" in gate:
            return f"whenever the file exists (`{gate}`), i.e. whatever a previous run left behind"
        return None

    # -- autofix -----------------------------------------------------------------------------------
    @classmethod
    def fix(cls, finding: Finding, fixer: Fixer) -> Optional[Fix]:
        """``load_state_dict(..., strict=False)`` -> ``strict=True``. The other kinds (a default
        checkpoint, a key filter, a reference) need a decision only the author can make."""
        src = fixer.source(finding.path)
        call = src.node_at(finding, cst.Call) if src else None
        if src is None or not isinstance(call, cst.Call) or "strict=False" not in finding.message:
            return None
        strict = keyword_arg(call, "strict")
        if strict is None and len(call.args) > 1 and call.args[1].keyword is None:
            strict = call.args[1]
        if strict is None or not (isinstance(strict.value, cst.Name) and strict.value.value == "False"):
            return None
        return Fix("load strictly: `strict=True`", [src.replace(strict.value, cst.Name("True"))])

    # -- runtime -----------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence) -> Optional[Verdict]:
        loads = [f for f in evidence.loads_at(finding.path, finding.line, finding.end_line)
                 if f.kind == "load_state_dict"]
        if not loads:
            if not evidence.ran(finding.path, finding.line, finding.end_line):
                return Verdict(Status.UNEXERCISED, ["the load_state_dict line never ran"])
            return None
        if all(f.strict is False and not f.missing and not f.unexpected
               and not (f.trained and f.changed and f.before_training) for f in loads):
            # strict=False skipped nothing, and the load is no warm start of the trained model
            # (the other risk this rule names): a restore of the same weights, or an evaluation
            return Verdict(Status.REFUTED, [
                "load_state_dict(strict=False) ran, no key was missing or unexpected, and it "
                "replaced no weight of the model before its training"])
        lines = []
        for f in loads:
            if f.missing or f.unexpected:
                lines.append(f"{len(f.missing)} missing and {len(f.unexpected)} unexpected keys "
                             f"(e.g. {(f.missing + f.unexpected)[0]})")
            if f.trained and f.changed:
                lines.append(f"the load replaced {f.changed} parameter tensors of the trained "
                             f"{f.module or 'model'}")
        if lines:
            return Verdict(Status.CONFIRMED, lines)
        if all(f.trained is False or not f.changed for f in loads):
            return Verdict(Status.REFUTED, [
                "the load ran without changing the trained model's parameters or skipping keys"])
        return None
