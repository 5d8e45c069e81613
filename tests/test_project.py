"""The project graph resolves calls the way Python imports them."""

from auditor.registry import all_rules
from auditor.testing import check_code

NAMESPACE_LAYOUT = {
    # no __init__.py: `graphmae` is an implicit namespace package to a script at the root
    "graphmae/evaluation.py": (
        "def evaluate(model, loader):\n"
        "    model.eval()\n"
        "    for g in loader:\n"
        "        model(g)\n"
    ),
    "main.py": (
        "from graphmae.evaluation import evaluate\n"
        "\n"
        "def train(model, opt, loader):\n"
        "    for epoch in range(3):\n"
        "        for g in loader:\n"
        "            loss = model(g)\n"
        "            opt.zero_grad()\n"
        "            loss.backward()\n"
        "            opt.step()\n"
        "        evaluate(model, loader)\n"
    ),
}


def test_imports_through_a_namespace_package_resolve():
    result = check_code(NAMESPACE_LAYOUT, [all_rules()["GM201"]])
    # the evaluation's `.eval()`, reached through the namespace package, leaks into the next
    # epoch: nothing restores the mode, so the finding sits where `.train()` belongs
    assert [(f.rule, f.path, f.line, f.related) for f in result.findings] == [
        ("GM201", "main.py", 5, ["graphmae/evaluation.py:2"])
    ]
    project = result.project
    assert "graphmae.evaluation.evaluate" in project.callees("main.train")


def test_script_style_imports_still_resolve():
    # the same helper imported the way a script inside the folder does it
    files = {
        "graphmae/evaluation.py": NAMESPACE_LAYOUT["graphmae/evaluation.py"],
        "graphmae/main.py": NAMESPACE_LAYOUT["main.py"].replace(
            "from graphmae.evaluation import", "from evaluation import"),
    }
    result = check_code(files, [all_rules()["GM201"]])
    assert [(f.path, f.line, f.related) for f in result.findings] == [
        ("graphmae/main.py", 5, ["graphmae/evaluation.py:2"])]


def test_mutually_recursive_returns_do_not_exhaust_the_stack():
    # `return` chains that call each other forever: every rule must still answer
    code = (
        "def a(x):\n    return b(x)\n\n"
        "def b(x):\n    return a(x)\n\n"
        "def train(model, opt, loader):\n"
        "    net = a(model)\n"
        "    for g in loader:\n"
        "        loss = net(g)\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    result = check_code(code, list(all_rules().values()))
    assert result.errors == []
    assert any(f.rule == "GM104" for f in result.findings)  # no zero_grad in the loop


def test_members_are_the_functions_defined_inside_a_class_in_order():
    code = (
        "class Trainer:\n"
        "    def fit(self):\n"
        "        def step():\n"
        "            pass\n"
        "    class Hooks:\n"
        "        def on_epoch(self):\n"
        "            pass\n"
        "    def evaluate(self):\n"
        "        self.model.eval()\n"
        "\n"
        "class TrainerPlus(Trainer):\n"
        "    def fit(self):\n"
        "        pass\n"
    )
    project = check_code({"train.py": code}, [all_rules()["GM201"]]).project
    # a function nested in a method is named in that method (`Trainer.fit.step`), no method
    assert project.members("train.Trainer") == [
        "train.Trainer.fit", "train.Trainer.fit.step", "train.Trainer.Hooks.on_epoch",
        "train.Trainer.evaluate",
    ]
    assert project.members("train.Trainer.fit") == ["train.Trainer.fit.step"]
    assert "train.Trainer.fit.step" not in project.classes["train.Trainer"].methods
    assert project.members("train.Trainer.Hooks") == ["train.Trainer.Hooks.on_epoch"]
    # a subclass's name starts with its base's, but it is not inside it
    assert project.members("train.TrainerPlus") == ["train.TrainerPlus.fit"]
    assert project.members("train.Trainer.evaluate") == []


def test_a_local_named_like_an_imported_module_is_not_that_module():
    # `from model import BGRL` binds BGRL, not `model`: the training function's parameter
    # `model` is the BGRL instance its caller passes, and the detach inside BGRL reaches the loss
    # (in a folder, where the module `model` is `src.model`)
    files = {
        "src/model.py": (
            "import torch.nn as nn\n"
            "\n"
            "class BGRL(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder, self.predictor = nn.Linear(4, 4), nn.Linear(4, 4)\n"
            "\n"
            "    def forward(self, x):\n"
            "        y = self.encoder(x)\n"
            "        y = y.detach()\n"
            "        return self.predictor(y)\n"
        ),
        "src/main.py": (
            "import torch\n"
            "from model import BGRL\n"
            "\n"
            "def train(model, optimizer, x):\n"
            "    loss = model(x).pow(2).mean()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    net = BGRL()\n"
            "    opt = torch.optim.Adam(net.parameters())\n"
            "    for step in range(3):\n"
            "        train(net, opt, torch.randn(2, 4))\n"
        ),
    }
    result = check_code(files, [all_rules()["GM101"]])
    assert [(f.rule, f.path, f.line) for f in result.findings] == [("GM101", "src/model.py", 10)]
    train = result.project.function("src.main.train")
    assert [e.func for e in train.events if e.kind == "call" and e.func.startswith("model")] == [
        "model().pow().mean", "model().pow", "model"]


ENGINE_WITH_HANDLERS = {
    "engine.py": (
        "class Engine:\n"
        "    def __init__(self):\n"
        "        self._handlers = []\n"
        "    def on(self, handler):\n"
        "        self._handlers.append(handler)\n"
        "    def fire(self):\n"
        "        for handler in self._handlers:  # in the order they were added\n"
        "            handler(self)\n"
        "def log(engine):\n"
        "    engine.model.eval()\n"
        "def main():\n"
        "    e = Engine()\n"
        "    e.on(log)\n"
        "    e.fire()\n"
    ),
}


def test_handlers_a_loop_with_a_commented_header_fires_are_its_callees():
    result = check_code(ENGINE_WITH_HANDLERS, [all_rules()["GM201"]])
    loop = next(e for e in result.project.functions["engine.Engine.fire"].events if e.kind == "assign")
    assert loop.text.split("\n", 1)[0] == "for handler in self._handlers:", loop.text
    assert "engine.log" in result.project.callees("engine.Engine.fire")


CALLBACK_DISPATCH = {
    "callbacks.py": (
        "class Callback:\n"
        "    def on_epoch_start(self, trainer): pass\n"
        "    def on_epoch_end(self, trainer): pass\n"
        "\n"
        "class Probe(Callback):\n"
        "    def on_epoch_end(self, trainer):\n"
        "        trainer.model.eval()\n"
    ),
    "trainer.py": (
        "class Trainer:\n"
        "    def __init__(self, model, opt, callbacks):\n"
        "        self.model, self.opt, self.callbacks = model, opt, list(callbacks)\n"
        "    def _emit(self, hook, **kw):\n"
        "        for cb in self.callbacks:\n"
        "            getattr(cb, hook)(self, **kw)\n"
        "    def fit(self, loader):\n"
        "        for epoch in range(3):\n"
        "            self.model.train()\n"
        "            self._emit('on_epoch_start')\n"
        "            for g in loader:\n"
        "                loss = self.model(g)\n"
        "                self.opt.zero_grad()\n"
        "                loss.backward()\n"
        "                self.opt.step()\n"
        "            self._emit('on_epoch_end')\n"
    ),
}


def test_a_method_called_by_the_name_a_parameter_holds_runs_from_the_calls_naming_it():
    result = check_code(CALLBACK_DISPATCH, [all_rules()["GM201"]])
    project = result.project
    copies = {q.rsplit("<", 1)[-1].rstrip(">"): q for q in project.functions
              if q.startswith("trainer.Trainer._emit<")}
    assert set(copies) == {"on_epoch_start", "on_epoch_end"}
    assert set(project.callees(copies["on_epoch_end"])) == {
        "callbacks.Callback.on_epoch_end", "callbacks.Probe.on_epoch_end"}
    assert project.callees(copies["on_epoch_start"]) == ["callbacks.Callback.on_epoch_start"]
    assert project.callers("callbacks.Probe.on_epoch_end") == [copies["on_epoch_end"]]
    # the probe's eval() returns to the end of the epoch, and `train()` runs before the next
    # step: fired from `on_epoch_start` (after `train()`) it would leak
    assert result.findings == []
    leaking = dict(CALLBACK_DISPATCH, **{"callbacks.py": CALLBACK_DISPATCH["callbacks.py"].replace(
        "    def on_epoch_end(self, trainer):\n        trainer.model.eval()",
        "    def on_epoch_start(self, trainer):\n        trainer.model.eval()")})
    found = check_code(leaking, [all_rules()["GM201"]]).findings
    assert [(f.rule, f.path, f.line) for f in found] == [("GM201", "callbacks.py", 7)]


def test_super_calls_and_mixin_attributes_follow_the_class_hierarchy():
    files = {
        "trainer.py": (
            "class LoggingMixin:\n"
            "    def log_model(self):\n"
            "        return self.model\n"
            "class BaseTrainer:\n"
            "    def __init__(self, model):\n"
            "        self.model = model\n"
            "    def fit(self, data):\n"
            "        for x in data:\n"
            "            self.training_step(x)\n"
            "    def training_step(self, x):\n"
            "        raise NotImplementedError\n"
            "class Trainer(LoggingMixin, BaseTrainer):\n"
            "    def __init__(self, model):\n"
            "        super().__init__(model)\n"
            "    def training_step(self, x):\n"
            "        return self.model(x)\n"
        ),
        "train.py": (
            "from torch import nn\nfrom trainer import Trainer\n"
            "Trainer(nn.Linear(4, 4)).fit([])\n"
        ),
    }
    project = check_code(files, list(all_rules().values())).project
    from auditor.static.training import Training
    assert "trainer.BaseTrainer.__init__" in project.callees("trainer.Trainer.__init__")
    # the base's loop runs the subclass's override of its hook
    assert "trainer.Trainer.training_step" in project.callees("trainer.BaseTrainer.fit")
    mixin = project.functions["trainer.LoggingMixin.log_model"]
    made = Training.of(project).origins(mixin, "self.model", 0)
    assert [(o.kind, o.cls) for o in made] == [("new", "torch.nn.Linear")]


DECORATED_STEP = {
    "steps.py": (
        "import functools\n"
        "def timed(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(*args, **kwargs):\n"
        "        return fn(*args, **kwargs)\n"
        "    return wrapper\n"
        "def accumulate(n):\n"
        "    def deco(fn):\n"
        "        def wrapper(state, *args):\n"
        "            loss = fn(*args)\n"
        "            (loss / n).backward()\n"
        "            state.opt.step()\n"
        "            state.opt.zero_grad()\n"
        "            return loss\n"
        "        return wrapper\n"
        "    return deco\n"
        "class Step:\n"
        "    def __init__(self, model):\n"
        "        self.model = model\n"
        "    def __call__(self, x):\n"
        "        return self.model(x).pow(2).mean()\n"
    ),
    "loop.py": (
        "def train_steps(state, step_fn, data):\n"
        "    for x in data:\n"
        "        loss = step_fn(state, x)\n"
        "        yield loss.item()\n"
    ),
    "run.py": (
        "from steps import Step, accumulate, timed\n"
        "from loop import train_steps\n"
        "def main(state, model, data):\n"
        "    step_fn = accumulate(2)(timed(Step(model)))\n"
        "    return list(train_steps(state, step_fn, data))\n"
    ),
}


def test_a_decorated_step_runs_the_decorators_wrappers_and_the_functions_they_close_over():
    """``accumulate(2)(timed(Step(model)))`` held by a name: a call of it runs what ``deco``
    returns (its wrapper, not ``deco``), and the wrappers' ``fn(...)`` runs what the decorators
    were handed (a closure's free variable is its enclosing function's parameter)."""
    project = check_code(DECORATED_STEP, [all_rules()["GM104"]]).project
    assert project.callees("loop.train_steps") == ["steps.accumulate.deco.wrapper"]
    assert project.callees("steps.accumulate.deco.wrapper") == ["steps.timed.wrapper"]
    assert project.callees("steps.timed.wrapper") == ["steps.Step.__call__"]
    from auditor.static.training import Training
    [loop] = Training.of(project).training_loops()
    assert loop.fn.qualname == "loop.train_steps"
    assert {a.kind for a in loop.actions} == {"backward", "step", "reset"}


EVENT_ENGINE = {
    "engine.py": (
        "import enum\n"
        "from collections import defaultdict\n"
        "\n"
        "class Events(enum.Enum):\n"
        "    EPOCH_STARTED = 'epoch_started'\n"
        "    ITERATION_STARTED = 'iteration_started'\n"
        "    COMPLETED = 'completed'\n"
        "\n"
        "    def __call__(self, every=None):\n"
        "        return (self, every)\n"
        "\n"
        "class Engine:\n"
        "    def __init__(self, process_fn):\n"
        "        self._process_fn = process_fn\n"
        "        self._handlers = defaultdict(list)\n"
        "\n"
        "    def add_event_handler(self, event, handler, *args):\n"
        "        self._handlers[event].append((handler, args))\n"
        "\n"
        "    def on(self, event):\n"
        "        def decorator(fn):\n"
        "            self.add_event_handler(event, fn)\n"
        "            return fn\n"
        "        return decorator\n"
        "\n"
        "    def fire(self, event):\n"
        "        for handler, args in list(self._handlers[event]):\n"
        "            handler(self, *args)\n"
        "\n"
        "    def run(self, data, epochs):\n"
        "        for epoch in range(epochs):\n"
        "            self.fire(Events.EPOCH_STARTED)\n"
        "            for batch in data:\n"
        "                self.fire(Events.ITERATION_STARTED)\n"
        "                self._process_fn(self, batch)\n"
        "        self.fire(Events.COMPLETED)\n"
    ),
    "train.py": (
        "import torch\n"
        "from engine import Engine, Events\n"
        "\n"
        "def report(engine, every):\n"
        "    print(every)\n"
        "\n"
        "def create_trainer(model, opt):\n"
        "    def step(engine, batch):\n"
        "        loss = model(batch)\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "    trainer = Engine(step)\n"
        "\n"
        "    @trainer.on(Events.ITERATION_STARTED)\n"
        "    def reset(engine):\n"
        "        opt.zero_grad()\n"
        "\n"
        "    trainer.add_event_handler(Events.COMPLETED(every=2), report, 2)\n"
        "    return trainer\n"
        "\n"
        "def main(model, data):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    create_trainer(model, opt).run(data, 3)\n"
    ),
}


def test_handlers_run_from_the_fires_of_the_event_they_are_registered_for():
    """A dispatcher looking handlers up by its parameter runs, for each call, as its copy for
    the event that call names: a decorated handler and one added by name run from their own
    event's fire only (a filtered event, `Events.COMPLETED(every=2)`, is that event)."""
    result = check_code(EVENT_ENGINE, [all_rules()["GM104"]])
    project = result.project
    copies = {q.rsplit("<", 1)[-1].rstrip(">"): q for q in project.functions
              if q.startswith("engine.Engine.fire<")}
    assert set(copies) == {"EPOCH_STARTED", "ITERATION_STARTED", "COMPLETED"}
    assert project.callees(copies["ITERATION_STARTED"]) == ["train.create_trainer.reset"]
    assert project.callees(copies["COMPLETED"]) == ["train.report"]
    assert project.callees(copies["EPOCH_STARTED"]) == []
    # the decorator defined in a method is a closure of that method, not a method of the class
    assert "engine.Engine.on.decorator" in project.functions
    assert "engine.Engine.on.decorator" not in project.classes["engine.Engine"].methods
    assert result.findings == []


def test_a_reset_registered_for_another_event_is_reported_at_its_registration():
    """The same reset registered for the epoch's start: reported where the event is named."""
    files = dict(EVENT_ENGINE, **{"train.py": EVENT_ENGINE["train.py"].replace(
        "@trainer.on(Events.ITERATION_STARTED)", "@trainer.on(Events.EPOCH_STARTED)")})
    found = check_code(files, [all_rules()["GM104"]]).findings
    assert [(f.rule, f.path, f.line) for f in found] == [("GM104", "train.py", 15)], found
    assert "Events.EPOCH_STARTED" in found[0].message


REGISTRY_BY_KEY = {
    "pkg/__init__.py": "",
    "pkg/registry.py": (
        "REGISTRY = {}\n"
        "def register(name):\n"
        "    def deco(obj):\n"
        "        REGISTRY[name] = obj\n"
        "        return obj\n"
        "    return deco\n"
        "def lookup(name):\n"
        "    return REGISTRY[name]\n"
    ),
    "pkg/data.py": (
        "import dgl\n"
        "from .registry import register\n"
        "@register('add_self_loop')\n"
        "def _add(g):\n"
        "    return dgl.add_self_loop(g)\n"
        "def build(src, dst):\n"
        "    g = dgl.graph((src, dst))\n"
        "    return dgl.add_self_loop(g)\n"
    ),
    "pkg/losses.py": (
        "from .registry import register\n"
        "@register('sce')\n"
        "def sce(x, y):\n"
        "    return ((x - y) ** 2).mean()\n"
        "LOSSES = {'mse': sce}\n"
    ),
    "pkg/steps.py": (
        "from .registry import lookup\n"
        "class Step:\n"
        "    def __init__(self, model, name):\n"
        "        self.model = model\n"
        "        self.recon = lookup('sce')\n"
        "        self.chosen = lookup(name)\n"
        "    def __call__(self, g, x):\n"
        "        pred = self.model(g, x)\n"
        "        return self.recon(pred, x) + lookup('sce')(pred, x)\n"
    ),
    "train.py": (
        "import torch\n"
        "from pkg.data import build\n"
        "from pkg.steps import Step\n"
        "def main(model, src, dst, x):\n"
        "    g = build(src, dst)\n"
        "    step = Step(model, 'sce')\n"
        "    opt = torch.optim.Adam(model.parameters())\n"
        "    for _ in range(3):\n"
        "        loss = step(g, x)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "if __name__ == '__main__':\n"
        "    main(None, [0], [1], None)\n"
    ),
}


def test_a_registry_looked_up_by_a_literal_key_runs_what_is_registered_under_it():
    """`lookup("sce")` returns what `@register("sce")` stored, not every registered function:
    the self-loop transform registered beside the loss is not called with the model's output."""
    result = check_code(REGISTRY_BY_KEY, [all_rules()["GM501"]])
    project = result.project
    assert project.callees("pkg.steps.Step.__call__") == ["pkg.losses.sce", "pkg.registry.lookup<sce>"]
    # a key that is a value (a parameter) does not narrow: every registered function may run
    assert project.callees("pkg.steps.Step.__init__") == ["pkg.registry.lookup<sce>", "pkg.registry.lookup"]
    assert result.findings == []
    # the old reading (every entry of the registry) made the transform a callee of the step
    files = dict(REGISTRY_BY_KEY, **{"pkg/steps.py": REGISTRY_BY_KEY["pkg/steps.py"].replace(
        "lookup('sce')(pred, x)", "lookup('add_self_loop')(g)")})
    found = check_code(files, [all_rules()["GM501"]]).findings
    assert [(f.rule, f.path, f.line) for f in found] == [("GM501", "pkg/data.py", 5)], found
