"""Training loops a framework runs for the user: PyTorch Lightning's fit loop as a method of
each LightningModule class.

A LightningModule's ``training_step`` sits in no loop of the project's code: ``Trainer.fit``
calls it once per batch, zero_grads, backpropagates the loss it returns (a tensor, or the
``"loss"`` of a dict) and steps the optimizers ``configure_optimizers`` built, calling the
module's and the callbacks' hooks in between. Every such class gets a synthetic method,
``<fit>``, whose events are that loop written as plain code, in Lightning's order (2.x:
loops/fit_loop.py, training_epoch_loop.py, optimization/automatic.py, evaluation_loop.py,
plugins/precision/precision.py), so every analysis reads it as it reads a hand-written loop; a
``trainer.fit(model)`` call runs it, its ``self`` bound to ``model``. With
``automatic_optimization = False`` the loop only calls ``training_step``: the user's own
``manual_backward`` / ``opt.step()`` / ``zero_grad()`` in it are the loop's actions, and
``self.optimizers()`` returns what ``configure_optimizers`` built. A module's batch-transfer
hooks (``on_after_batch_transfer``) give the batch each step gets; an ``optimizer_zero_grad``
override replaces the loop's ``zero_grad()``. The batches come from ``Trainer.fit``'s
``train_dataloaders`` (its parameters are the loop's), or from a LightningDataModule of the same
program: its ``prepare_data`` and ``setup("fit")`` run first, then its ``train_dataloader()``,
or from the module's own ``train_dataloader()``.

Validation (``validation_step``) runs under no_grad with the module in eval mode, and Lightning
gives every submodule back the mode it had before (``_ModuleMode``): an ``.eval()`` in a
validation hook is undone, one in a training hook, ``setup`` or ``__init__`` is not. The model
here: ``self.eval()`` before and ``self.train()`` after the validation block, which the
training hooks' evals reach the training step before.

The synthetic events carry the position of the class's header (their own order kept in the
columns): what a rule says about the framework's loop points at the class that runs in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from auditor.static.collector import FactCollector
from auditor.static.context import FileContext
from auditor.static.facts import MODULE_SCOPE, FileFacts, FunctionInfo, Span
from auditor.static.parse import parse_module
from auditor.static.walk import walk

if TYPE_CHECKING:
    from auditor.static.project import Project

PACKAGES = ("pytorch_lightning", "lightning")
FIT = "<fit>"  # the synthetic method: the fit loop run on the instance
OPTIMIZERS = "optimizers"  # LightningModule.optimizers(): what configure_optimizers built
# `trainer.fit(model)`: the Trainer classes, as imports spell them, whose `fit` runs FIT
TRAINERS = ("pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer",
            "pytorch_lightning.trainer.trainer.Trainer", "lightning.Trainer",
            "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
            "lightning.pytorch.trainer.trainer.Trainer")
FIT_INSTANCE = "model"  # Trainer.fit's parameter that receives the module
# Trainer.fit's other parameters, in order: the loop's own, after `self` (the module)
FIT_PARAMS = ("train_dataloaders", "val_dataloaders", "datamodule")
DISPATCH = {f"{trainer}.fit": (FIT, FIT_INSTANCE) for trainer in TRAINERS}

_START = ("setup", "on_fit_start", "on_train_start")
_END = ("on_train_end", "on_fit_end", "teardown")
# hook -> its arguments after (trainer, pl_module) for callbacks / for the module itself
_ARGS = {
    "setup": '"fit"', "teardown": '"fit"',
    "on_train_batch_start": "batch, batch_idx", "on_train_batch_end": "loss, batch, batch_idx",
    "on_before_zero_grad": "optimizer", "on_before_backward": "loss",
    "on_before_optimizer_step": "optimizer",
    "on_validation_batch_start": "val_batch, val_idx",
    "on_validation_batch_end": "None, val_batch, val_idx",
}


def _in_package(name: str, last: str) -> bool:
    return name.split(".")[0] in PACKAGES and name.rsplit(".", 1)[-1] == last


def _derives(project: "Project", cls: str, last: str, seen: Optional[set[str]] = None) -> bool:
    """``cls`` is a subclass of Lightning's ``last`` (``LightningModule``, ``Callback``),
    directly or through project classes."""
    seen = seen if seen is not None else set()
    if cls in seen:
        return False
    seen.add(cls)
    info = project.classes.get(cls)
    for base in info.bases if info is not None else ():
        if _in_package(base, last):
            return True
        target = base if base in project.classes else project.reexported(base)
        if target and _derives(project, target, last, seen):
            return True
    return False


def _uses_lightning(project: "Project") -> bool:
    every = [*project.files.values(), *project.outlines.values()]
    return any(name.split(".")[0] in PACKAGES for facts in every
               for name in [*facts.imports.values(), *facts.star_imports])


def _subclasses(project: "Project", last: str) -> list[str]:
    """Project classes deriving from Lightning's ``last``; skipped files that mention it or a
    project subclass of it are analysed first."""
    project.load_mentioning(last)
    found: list[str] = []
    while True:
        fresh = [c for c in list(project.classes) if c not in found and _derives(project, c, last)]
        if not fresh:
            return found
        found += fresh
        for cls in fresh:
            project.load_mentioning(cls.rsplit(".", 1)[-1])


def _method(project: "Project", cls: str, name: str) -> Optional[str]:
    """The project function ``cls.name`` runs (its own or a project base's), if any."""
    for qual in project.method_candidates(cls, name):
        if qual in project.functions:
            return qual
    return None


def _module_of(project: "Project", cls: str) -> Optional[FileFacts]:
    """The facts of the file that defines ``cls`` (a nested class's too)."""
    parts = cls.split(".")
    for i in range(len(parts) - 1, 0, -1):
        facts = project.modules.get(".".join(parts[:i]))
        if facts is not None:
            return facts
    return None


def _manual(project: "Project", cls: str) -> bool:
    """``self.automatic_optimization = False`` in a method of the class or a project base, or
    ``automatic_optimization = False`` in its body: manual optimization."""
    for owner in project.lineage(cls):
        info, facts = project.classes.get(owner), _module_of(project, owner)
        if info is None or facts is None:
            continue
        body = project.functions.get(f"{facts.module}.{MODULE_SCOPE}")
        scopes = [project.functions[q] for q in info.methods if q in project.functions]
        for fn in [*scopes, *([body] if body is not None else [])]:
            for e in fn.events:
                if e.kind != "assign" or e.text.split("=", 1)[-1].strip() != "False":
                    continue
                if "self.automatic_optimization" in e.targets or (
                        fn is body and "automatic_optimization" in e.targets
                        and info.span is not None and e.span.within(info.span)):
                    return True
    return False


def _returns_dict(project: "Project", step: str) -> bool:
    fn = project.functions[step]
    return any(e.kind == "return" and e.text.removeprefix("return").strip().startswith(("{", "dict("))
               for e in fn.events)


def _first_optimizer(project: "Project", cls: str) -> str:
    """How the optimizer is taken from what ``configure_optimizers`` returns, in the shapes
    Lightning accepts: a dict's ``"optimizer"``, the first of a list, of a pair of lists
    (``[opt], [sched]``); nothing for the optimizer itself."""
    qual = _method(project, cls, "configure_optimizers")
    fn = project.functions.get(qual) if qual else None
    returned = [e.text.removeprefix("return").strip() for e in (fn.events if fn else ()) if e.kind == "return"]
    text = returned[-1] if returned else ""
    if text.startswith(("{", "dict(")):
        return '["optimizer"]'
    if text.startswith(("[[", "([")) or (text.startswith("[") and "], [" in text):
        return "[0][0]"
    if text.startswith("["):
        return "[0]"
    return ""


class _Writer:
    """The loop's source, line by line, with each hook called on the callbacks that define it
    and then on the module (Lightning's order)."""

    def __init__(self, project: "Project", cls: str, callbacks: list[str],
                 datamodules: list[str]) -> None:
        self.project, self.cls, self.lines = project, cls, []
        self.callbacks = callbacks  # `callback_<k>` is callbacks[k]
        self.datamodules = datamodules  # `datamodule_<k>` is datamodules[k]
        self.calls: dict[str, str] = {}  # `callback_<k>.<hook>` -> the method it runs

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * (depth + 2) + text)

    def hook(self, depth: int, name: str, module: bool = True, callbacks: bool = True) -> None:
        args = _ARGS.get(name, "")
        for k, cb in enumerate(self.callbacks if callbacks else ()):
            qual = _method(self.project, cb, name)
            if qual is not None:
                self.calls[f"callback_{k}.{name}"] = qual
                self.line(depth, f"callback_{k}.{name}(trainer, self{', ' + args if args else ''})")
        if module and _method(self.project, self.cls, name) is not None:
            self.line(depth, f"self.{name}({args})")

    def datamodule_calls(self, name: str, args: str = "") -> list[str]:
        """``datamodule_<k>.<name>(args)`` for each DataModule class that defines ``name``."""
        out = []
        for k, dm in enumerate(self.datamodules):
            qual = _method(self.project, dm, name)
            if qual is not None:
                self.calls[f"datamodule_{k}.{name}"] = qual
                out.append(f"datamodule_{k}.{name}({args})")
        return out

    def datamodule_hook(self, depth: int, name: str, args: str = "") -> None:
        for call in self.datamodule_calls(name, args):
            self.line(depth, call)

    def loader(self, depth: int, name: str, given: str, target: str) -> None:
        """``target``: the loader ``fit`` was given, or what a DataModule's ``name()`` makes, or
        the module's own ``name()`` (Lightning asks the module when no DataModule has one)."""
        own = [f"self.{name}()"] if _method(self.project, self.cls, name) is not None else []
        self.line(depth, f"{target} = {' or '.join([given, *own, *self.datamodule_calls(name)])}")

    def batch_transfer(self, depth: int, batch: str) -> None:
        """The module's hooks that move a batch to the device, each returning the batch the step
        gets (``on_after_batch_transfer`` adding self loops acts on every training batch)."""
        for name, extra in (("on_before_batch_transfer", "0"), ("transfer_batch_to_device", "self.device, 0"),
                            ("on_after_batch_transfer", "0")):
            if _method(self.project, self.cls, name) is not None:
                self.line(depth, f"{batch} = self.{name}({batch}, {extra})")

    def overridable(self, depth: int, name: str, args: str, default: str) -> None:
        """A step Lightning runs through a module method the user may override
        (``optimizer_zero_grad``): the override when the class has one, else its default."""
        if _method(self.project, self.cls, name) is not None:
            self.line(depth, f"self.{name}({args})")
        else:
            self.line(depth, default)


def loop_source(project: "Project", cls: str, callbacks: list[str],
                datamodules: list[str]) -> tuple[str, dict[str, str]]:
    """The fit loop of ``cls`` as Python source (a method ``fit`` of a class ``Loop``), and the
    callback and DataModule methods its ``callback_<k>.<hook>`` and ``datamodule_<k>.<hook>``
    calls run."""
    step = _method(project, cls, "training_step")
    assert step is not None
    automatic = not _manual(project, cls)
    w = _Writer(project, cls, callbacks, datamodules)
    w.datamodule_hook(0, "prepare_data")
    w.datamodule_hook(0, "setup", '"fit"')
    for name in _START[:1]:
        w.hook(0, name)
    if automatic:
        w.line(0, f"optimizer = self.configure_optimizers(){_first_optimizer(project, cls)}")
    for name in _START[1:]:
        w.hook(0, name)
    w.loader(0, "train_dataloader", FIT_PARAMS[0], "train_loader")
    w.loader(0, "val_dataloader", FIT_PARAMS[1], "val_loader")
    w.line(0, "for epoch in trainer.epochs:")
    w.hook(1, "on_train_epoch_start")
    w.line(1, "for batch_idx, batch in enumerate(train_loader):")
    w.batch_transfer(2, "batch")
    w.hook(2, "on_train_batch_start")
    if automatic:
        if _returns_dict(project, step):
            w.line(2, "output = self.training_step(batch, batch_idx)")
            w.line(2, 'loss = output["loss"]')
        else:
            w.line(2, "loss = self.training_step(batch, batch_idx)")
        w.hook(2, "on_before_zero_grad")
        w.overridable(2, "optimizer_zero_grad", "epoch, batch_idx, optimizer", "optimizer.zero_grad()")
        w.hook(2, "on_before_backward")
        w.line(2, "loss.backward()")
        w.hook(2, "on_after_backward")
        w.hook(2, "on_before_optimizer_step")
        w.line(2, "optimizer.step()")
    else:
        w.line(2, "loss = self.training_step(batch, batch_idx)")
    w.hook(2, "on_train_batch_end")
    if _method(project, cls, "validation_step") is not None:
        w.line(2, "if trainer.validating:")
        w.line(3, "self.eval()")
        w.line(3, "with torch.no_grad():")
        for name in ("on_validation_start", "on_validation_epoch_start"):
            w.hook(4, name)
        w.line(4, "for val_idx, val_batch in enumerate(val_loader):")
        w.batch_transfer(5, "val_batch")
        w.hook(5, "on_validation_batch_start")
        w.line(5, "self.validation_step(val_batch, val_idx)")
        w.hook(5, "on_validation_batch_end")
        for name in ("on_validation_epoch_end", "on_validation_end"):
            w.hook(4, name)
        w.line(3, "self.train()")
    w.hook(1, "on_train_epoch_end")
    for name in _END:
        w.hook(0, name)
    params = ", ".join(f"{p}=None" for p in FIT_PARAMS)
    head = ["import torch", "", "", "class Loop:", f"    def fit(self, {params}):"]
    return "\n".join([*head, *w.lines, ""]), w.calls


def _synthesize(project: "Project", cls: str, name: str, source: str,
                calls: dict[str, str]) -> FunctionInfo:
    """The function ``Loop.fit`` of ``source`` as the method ``name`` of ``cls``: its events
    placed on the class's header line, calls of ``callback_<k>.<hook>`` bound to their methods."""
    info, facts = project.classes[cls], _module_of(project, cls)
    assert facts is not None  # add_framework_loops skips classes of no known file
    module = facts.module
    ctx = FileContext(facts.path, source, parse_module(source), module)
    walk(ctx.module, [FactCollector(ctx)])
    fn = ctx.facts.functions[f"{module}.Loop.fit"]
    line = info.span.line if info.span is not None else 1
    for event in fn.events:
        s = event.span
        event.span = Span(line, s.line * 1000 + s.column, line, s.end_line * 1000 + s.end_column)
        if event.kind == "call" and event.func in calls:
            event.func = calls[event.func]
    fn.qualname, fn.name, fn.class_name = f"{cls}.{name}", name, cls
    fn.span = info.span
    fn.instance_argument = FIT_INSTANCE if name == FIT else ""
    fn.framework = "lightning"
    return fn


def _run_with(project: "Project", cls: str, classes: Iterable[str]) -> list[str]:
    """The callback or DataModule classes that may run in ``cls``'s loop: those of a program
    that runs it."""
    paths = {c: facts.path for c in [cls, *classes] if (facts := _module_of(project, c))}
    return [c for c in classes if c in paths and cls in paths
            and project.share_program(paths[cls], paths[c])]


def add_framework_loops(project: "Project") -> None:
    """Give every LightningModule class of the project its fit loop (and ``optimizers()``)."""
    if not _uses_lightning(project):
        return
    modules = _subclasses(project, "LightningModule")
    callbacks = _subclasses(project, "Callback")
    datamodules = _subclasses(project, "LightningDataModule")
    added = False
    for cls in modules:
        if _method(project, cls, "training_step") is None or f"{cls}.{FIT}" in project.functions \
                or _module_of(project, cls) is None:
            continue
        source, calls = loop_source(project, cls, _run_with(project, cls, callbacks),
                                    _run_with(project, cls, datamodules))
        project.add_function(_synthesize(project, cls, FIT, source, calls))
        if _method(project, cls, OPTIMIZERS) is None and _method(project, cls, "configure_optimizers"):
            body = "import torch\n\n\nclass Loop:\n    def fit(self):\n        return self.configure_optimizers()\n"
            project.add_function(_synthesize(project, cls, OPTIMIZERS, body, {}))
        added = True
    if added:
        project.dispatch.update(DISPATCH)
        project.load_mentioning(".fit(")  # the scripts that start the loops, however skipped
        project.relink()
