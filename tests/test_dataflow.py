"""The shared data-flow helper (auditor/static/dataflow.py) and the runtime verdicts of the rules
built on it (GM101, GM301, GM401)."""

import pytest

from auditor.config import Config
from auditor.findings import Finding, Severity, Status
from auditor.probe.evidence import Evidence
from auditor.registry import all_rules
from auditor.static import dataflow as df
from auditor.static.engine import run_check
from auditor.testing import write_sources

PROJECT = {
    "model.py": (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.enc = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        return self.enc(x)\n"
    ),
    "engine.py": (
        "class Trainer:\n"
        "    def __init__(self, model):\n"
        "        self.model = model\n"
        "    def step(self, x):\n"
        "        pred = self.model(x)\n"
        "        loss = ((pred - x) ** 2).mean()\n"
        "        loss.backward()\n"
        "        return loss.item()\n"
    ),
    "train.py": (
        "from model import Net\nfrom engine import Trainer\n"
        "def main(x):\n"
        "    model = Net()\n"
        "    Trainer(model).step(x)\n"
    ),
}


def checked(files, tmp_path, monkeypatch, rule="GM101"):
    """The static pass's result on ``files`` written to ``tmp_path`` (the working directory:
    files the prefilter skips are loaded on demand relative to it)."""
    write_sources(files, tmp_path)
    monkeypatch.chdir(tmp_path)
    return run_check(["."], Config(root=tmp_path), [all_rules()[rule]], jobs=1, use_cache=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    return checked(PROJECT, tmp_path, monkeypatch).project


def test_instance_call_resolves_through_constructor_argument(project):
    step = project.function("engine.Trainer.step")
    call = next(e for e in step.events if e.kind == "call" and e.func == "self.model")
    assert "model.Net.forward" in df.call_targets(project, step, call)
    assert df.is_module_output(project, step, call)
    assert (step, call) in [(f, e) for f, e in df.callers_of(project, "model.Net.forward")]


def test_flow_reaches_backward_across_files_and_stops_at_item(project):
    fwd = project.function("model.Net.forward")
    ret = next(s for s in df.statements(fwd) if s.kind == "return")
    flow = df.flows_from_statement(project, fwd, ret)
    assert [s.where for s in flow.sinks] == ["engine.py:7"]
    assert ("engine.Trainer.step", "loss") in flow.values
    assert not any(s.stmt.kind == "return" and s.fn.name == "step" for s in flow.steps)


def test_derives_from_module_and_stop(project):
    step = project.function("engine.Trainer.step")
    loss_stmt = next(s for s in df.statements(step) if "loss" in s.targets)
    origin = df.derives_from_module(project, step, ["pred"], loss_stmt.index)
    assert origin is not None and origin.where == "engine.py:5"
    flow = df.flows_to(project, step, ["pred"], loss_stmt.index, stop=lambda fn, st, hit: True)
    assert not flow.sinks


def _finding(code: str, line: int = 10) -> Finding:
    rule = all_rules()[code]
    return Finding(rule=code, name=rule.name, severity=Severity.ERROR, path="m.py", line=line,
                   column=1, end_line=line, end_column=5, message="")


def _evidence(calls=(), steps=(), lines=()):
    return Evidence([{"pid": 1, "calls": list(calls), "steps": list(steps), "lines": list(lines)}])


def test_gm101_verdicts():
    rule = all_rules()["GM101"]
    f = _finding("GM101")
    assert rule.confirm(f, _evidence()).status == Status.UNEXERCISED
    cut = {"kind": "detach", "path": "m.py", "line": 10, "count": 3, "args": [{"requires_grad": True}]}
    blocked = {"index": 1, "params_used": ["enc.weight", "dec.weight"], "params_reached": ["dec.weight"]}
    assert rule.confirm(f, _evidence([cut], [blocked])).status == Status.CONFIRMED
    fine = dict(blocked, params_reached=["enc.weight", "dec.weight"])
    assert rule.confirm(f, _evidence([cut], [fine])).status == Status.REFUTED
    no_grad = dict(cut, args=[{"requires_grad": False}])
    assert rule.confirm(f, _evidence([no_grad], [blocked])).status == Status.REFUTED


def test_gm301_and_gm401_verdicts():
    gm301, gm401 = all_rules()["GM301"], all_rules()["GM401"]
    ran = [["m.py", 10, 5]]
    bf16 = {"index": 1, "loss_dtype": "torch.bfloat16"}
    assert gm301.confirm(_finding("GM301"), _evidence(steps=[bf16], lines=ran)).status == Status.CONFIRMED
    fp32 = {"index": 1, "loss_dtype": "torch.float32", "scaler_used": True,
            "autocast_at_forward": {"dtype": "torch.float16"}}
    assert gm301.confirm(_finding("GM301"), _evidence(steps=[fp32], lines=ran)).status == Status.REFUTED
    summed = {"kind": "loss", "path": "m.py", "line": 10, "count": 2, "args": []}
    ev = Evidence([{"pid": 1, "calls": [summed], "losses": [
        {"path": "m.py", "line": 10, "fn": "mse_loss", "reduction": "sum", "numel": 480}]}])
    assert gm401.confirm(_finding("GM401"), ev).status == Status.CONFIRMED
    assert gm401.confirm(_finding("GM401"), _evidence()).status == Status.UNEXERCISED


BRANCHES = {"train.py": (
    "import torch\n"
    "def run(model, opt, loader, scaler, kind):\n"
    "    if kind == 'mse':\n"
    "        crit = torch.nn.MSELoss(reduction='sum')\n"
    "    elif kind == 'l1':\n"
    "        crit = torch.nn.L1Loss()\n"
    "    for x in loader:\n"
    "        if scaler is not None:\n"
    "            loss = crit(model(x), x)\n"
    "            scaler.scale(loss).backward()\n"
    "        else:\n"
    "            loss = crit(model(x), x) / len(x)\n"
    "            loss.backward()\n"
)}


def test_flow_keeps_a_value_rebound_in_another_branch_and_skips_the_other_side(tmp_path, monkeypatch):
    project = checked(BRANCHES, tmp_path, monkeypatch, "GM401").project
    fn = project.function("train.run")
    stmts = df.statements(fn)
    built = next(s for s in stmts if "MSELoss" in s.text)
    # the `elif` rebinding does not end the MSELoss object's flow: both calls of `crit` get it
    lines = {step.stmt.line for step in df.flows_to(project, fn, ["crit"], built.index).steps}
    assert {9, 12} <= lines
    # the scaled branch's loss never reaches the other branch's backward (line 13)
    scaled = next(s for s in stmts if s.line == 9)
    sinks = df.flows_to(project, fn, ["loss"], scaled.index + 1).sinks
    assert [s.event.span.line for s in sinks] == [10]


# -- factories: a model built by a function that may return one of several classes ----------------

_CORE = (
    "import torch.nn as nn\n"
    "class Core(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.enc, self.head = nn.Linear(4, 4), nn.Linear(4, 4)\n"
    "    def forward(self, x):\n"
    "        h = self.enc(x)\n"
    "        h = h.detach()\n"  # line 8: the stop-gradient on the loss path
    "        return self.head(h)\n"
    "class Plain(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(4, 4)\n"
    "    def forward(self, x):\n"
    "        return self.lin(x)\n"
)

FACTORY = {
    "models.py": _CORE + (
        "def build(name):\n"
        "    if name == 'core':\n"
        "        model = Core()\n"
        "    elif name == 'plain':\n"
        "        model = Plain()\n"
        "    return model\n"
    ),
    "train.py": (
        "from models import build\n"
        "def main(name, x, dev, opt):\n"
        "    model = build(name).to(dev)\n"
        "    loss = model(x).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    ),
}

REGISTRY = {
    "registry.py": (
        "MODELS = {}\n"
        "def register(name):\n"
        "    def wrap(cls):\n"
        "        MODELS[name] = cls\n"
        "        return cls\n"
        "    return wrap\n"
        "def build_model(name):\n"
        "    return MODELS[name]\n"
    ),
    "models.py": _CORE + (
        "from registry import register\n"
        "@register('core')\n"
        "class Wrapper(nn.Module):\n"
        "    @classmethod\n"
        "    def from_args(cls, args):\n"
        "        return cls(args)\n"
        "    def __init__(self, args):\n"
        "        super().__init__()\n"
        "        self.model = Core()\n"
        "    def forward(self, x):\n"
        "        return self.model(x)\n"
    ),
    "train.py": (
        "import models\n"
        "from registry import build_model\n"
        "def main(args, x, opt):\n"
        "    model = build_model(args.name).from_args(args).model\n"
        "    loss = model.forward(x).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    ),
}

LOOKED_UP = {
    "models.py": _CORE + "MODELS = {'core': Core, 'plain': Plain}\n",
    "train.py": (
        "from models import MODELS\n"
        "def main(name, x, opt):\n"
        "    cls = MODELS[name]\n"
        "    model = cls()\n"
        "    loss = model(x).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    ),
}


@pytest.mark.parametrize("program, classes", [
    (FACTORY, {"models.Core", "models.Plain"}),
    (REGISTRY, {"models.Core"}),
    (LOOKED_UP, {"models.Core", "models.Plain"}),
], ids=["branches", "decorator-registry", "dict-of-classes"])
def test_a_factory_yields_every_class_it_may_build(tmp_path, monkeypatch, program, classes):
    result = checked(program, tmp_path, monkeypatch)
    fn = result.project.function("train.main")
    backward = next(s for s in df.statements(fn) if "backward" in s.text)
    assert df.instance_classes(result.project, fn, "model", backward.index) == classes
    # the detach in one of the possible classes' forward is on the loss path
    assert [(f.path, f.line) for f in result.findings if f.rule == "GM101"] == [("models.py", 8)]


NESTED_CHOICE = {
    "models.py": _CORE + (
        "def build(kind, fast):\n"
        "    model_class = Plain\n"
        "    if kind == 'core':\n"
        "        if fast:\n"
        "            model_class = Core\n"
        "        model = model_class()\n"
        "    else:\n"
        "        model = model_class()\n"
        "    return model\n"
    ),
}


def test_definitions_reach_across_branches_but_not_from_the_other_side(tmp_path, monkeypatch):
    project = checked(NESTED_CHOICE, tmp_path, monkeypatch).project
    fn = project.function("models.build")
    made = [s for s in df.statements(fn) if s.text.startswith("model = ")]
    # the inner `if`'s rebinding leaves the first class on its other path; the `else` side
    # never sees the `if` side's rebinding
    assert df.class_objects(project, fn, "model_class", made[0].index) == {"models.Core", "models.Plain"}
    assert df.class_objects(project, fn, "model_class", made[1].index) == {"models.Plain"}
    ret = next(s for s in df.statements(fn) if s.kind == "return")
    assert df.instance_classes(project, fn, "model", ret.index) == {"models.Core", "models.Plain"}


@pytest.mark.parametrize("text, name, whole, as_value", [
    ("loss = f(x)", "x", True, True),
    ("xs = [y]", "x", False, True),  # inside a longer name
    ("y = a.x + 1", "x", False, True),  # an attribute of another object
    ("n = x .shape[0]", "x", True, False),  # metadata only, spaces before the dot
    ("n = x.shape[0] + x", "x", True, True),  # read as a value after its metadata
    ("h = x.sizes", "x", True, True),  # not a metadata attribute, only its prefix
    ("é_x = x", "x", True, True),  # a longer name of letters outside ASCII
    ("out = self.enc(g)", "self.enc", True, True),
    ("out = self.encoder(g)", "self.enc", False, True),
])
def test_names_are_found_whole_and_as_values(text, name, whole, as_value):
    assert df.mentions(text, name) is whole
    assert df._carries(text, name) is (as_value if whole else True)


LOOP_REBINDING = {
    "models.py": (
        "class Plain:\n"
        "    pass\n"
        "\n"
        "class Wrapped:\n"
        "    def __init__(self, inner):\n"
        "        self.inner = inner\n"
        "\n"
        "def build(wrappers):\n"
        "    model = Plain()\n"
        "    for w in wrappers:\n"
        "        model = Wrapped(model)\n"
        "    return model\n"
    ),
}


def test_a_rebinding_in_a_loop_leaves_the_definition_before_it_reaching(tmp_path, monkeypatch):
    """The loop may run no time: after it, both the binding before it and the one in it reach."""
    project = checked(LOOP_REBINDING, tmp_path, monkeypatch).project
    fn = project.function("models.build")
    ret = next(s for s in df.statements(fn) if s.kind == "return")
    assert df.instance_classes(project, fn, "model", ret.index) == {"models.Plain", "models.Wrapped"}
    assert [s.text for s in df.definitions(fn, "model", ret.index)] == [
        "model = Wrapped(model)", "model = Plain()"]
