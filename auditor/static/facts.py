"""Serializable per-file facts: what the cross-file stage and the cache keep of a parsed file.

Every function (and the module body, as ``<module>``) is summarised as an ordered list of events:
calls, assignments, returns and ``with`` blocks, with the names each one reads and writes. Rules
follow data and calls across files on these summaries, through :mod:`auditor.static.project`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MODULE_SCOPE = "<module>"  # the qualname part of a module's top-level code


@dataclass
class Span:
    line: int
    column: int
    end_line: int
    end_column: int

    def within(self, outer: "Span") -> bool:
        """This span lies inside ``outer`` (a call nested in a statement, say)."""
        return (outer.line, outer.column) <= (self.line, self.column) and \
            (self.end_line, self.end_column) <= (outer.end_line, outer.end_column)


@dataclass
class Event:
    """One thing a function does, in source order.

    kind: ``call`` | ``assign`` | ``return`` | ``with`` | ``augassign``.
    For calls, ``func`` is the callee's qualified name when imports resolve it
    (``torch.nn.functional.mse_loss``), else its dotted text (``self.encoder``, ``g.add_self_loop``);
    ``receiver`` is the dotted text of what a method is called on and ``method`` its name.
    ``targets`` are the names/attributes the enclosing statement assigns; ``uses`` the names it reads.
    ``context`` lists the qualified names of the enclosing ``with`` items (``torch.no_grad``);
    ``loop`` is the loop-nesting depth and ``loop_ids`` identify those loops (outermost first).
    """

    kind: str
    span: Span
    func: str = ""
    receiver: str = ""
    method: str = ""
    args: list[str] = field(default_factory=list)
    kwargs: dict[str, str] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    loop_ids: list[int] = field(default_factory=list)
    # every enclosing `if` test of the event's function, outermost first; an `else` / `elif`
    # body holds its `if`'s test as ``not (test)`` (see auditor/static/conditions.py, whose
    # ``innermost`` is the test of the nearest one)
    conditions: list[str] = field(default_factory=list)
    text: str = ""  # the statement's source, shortened
    # an assignment's (or a return's) value as a name or a choice between names:
    # ``a = b`` -> [b], ``a = x.module if ddp else x`` -> [x.module, x]; empty for any other value
    value_names: list[str] = field(default_factory=list)
    # a parallel assignment, target -> the name its element of the value is:
    # ``model, opt = state.model, state.optimizer`` -> {model: state.model, opt: state.optimizer}
    paired: dict[str, str] = field(default_factory=dict)

    def bound_to(self, target: str) -> list[str]:
        """The names an assignment makes ``target`` another name of (see ``value_names``)."""
        if self.targets == [target]:
            return self.value_names
        return [self.paired[target]] if target in self.paired else []

    def one_object(self) -> str:
        """The one object the value names, "" when it names none or several: ``x`` for ``x``
        and for ``x.module if ddp else x`` (a DataParallel / DDP wrapper's ``.module`` is the
        model it wraps, whose parameters are the wrapper's)."""
        named = {n.removesuffix(".module") for n in self.value_names}
        return named.pop() if len(named) == 1 else ""

    def argument(self, keyword: str, position: int = 0) -> str:
        """The argument of a call bound to the parameter ``keyword`` (at ``position``), or ""."""
        positional = [a for a in self.args if not a.startswith("*")]
        return self.kwargs.get(keyword) or (positional[position] if position < len(positional) else "")

    @property
    def loop(self) -> int:
        return len(self.loop_ids)


@dataclass
class FunctionInfo:
    qualname: str  # module.Class.method, module.func, module.<module>
    module: str
    path: str
    name: str
    class_name: str = ""
    params: list[str] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)
    # each decorator call's first argument as written (``Events.ITERATION_STARTED`` of
    # ``@trainer.on(Events.ITERATION_STARTED)``), "" for none: the key it registers under
    decorator_keys: list[str] = field(default_factory=list)
    span: Optional[Span] = None
    # the names of ``*args`` and ``**kwargs`` ("" when absent): a wrapper that forwards them
    # (``return lookup(name)(*args, **kwargs)``) hands its callers' arguments on
    varargs: str = ""
    varkw: str = ""
    kwonly: int = 0  # how many of ``params``, at its end, are keyword-only
    # parameter -> its default as written (``reduction="mean"``): what a call that passes none binds
    defaults: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    # a framework's loop run by a call on another object (auditor/static/frameworks.py:
    # `trainer.fit(model)` runs the model's fit loop): the parameter of that call whose argument
    # (by keyword, else the first positional one) is this method's ``self``
    instance_argument: str = ""
    # who wrote it when no file of the tree does: a framework's loop ("lightning")
    framework: str = ""

    @property
    def positional(self) -> list[str]:
        """The parameters a positional argument binds, ``self``/``cls`` of a method left out."""
        named = self.params[: len(self.params) - self.kwonly]
        return named[1:] if self.class_name and named[:1] in (["self"], ["cls"]) else named

    @property
    def display(self) -> str:
        """How a message names it: ``path:Class.method`` (``path`` alone for module-level code).
        A module's identity is its path, dotted (``__up__.corpus.repo.utils``): that means
        nothing to a reader, the file does."""
        local = self.qualname[len(self.module) + 1:] if self.qualname.startswith(self.module + ".") \
            else self.name
        return self.path if local == MODULE_SCOPE else f"{self.path}:{local}"

    def assigned(self, name: str) -> list[Event]:
        """The assignments whose single target is ``name``, in order. Indexed once: callers ask
        this for every call in a function, and a generated module holds thousands of both."""
        index = self.__dict__.get("_assigned")
        if index is None:
            index = {}
            for e in self.events:
                if e.kind == "assign" and len(e.targets) == 1:
                    index.setdefault(e.targets[0], []).append(e)
            self.__dict__["_assigned"] = index
        return index.get(name, [])

    def position(self, event: Event) -> int:
        """The index of ``event`` in ``events``, found by identity first: ``list.index`` compares
        each earlier event with ``event`` field by field (a tenth of a check's CPU on a tree of
        long functions)."""
        for i, e in enumerate(self.events):
            if e is event:
                return i
        return self.events.index(event)  # an equal copy (made elsewhere)


@dataclass
class ClassInfo:
    qualname: str
    bases: list[str]
    methods: list[str]
    span: Optional[Span] = None
    # qualified like a function's (``@register_model('gat')`` -> ``pkg.register_model()``): a
    # decorator that files the class in a registry
    decorators: list[str] = field(default_factory=list)
    # the names the class body declares with an annotation, in order: a NamedTuple's or a
    # dataclass's fields, which its constructor takes in that order
    fields: list[str] = field(default_factory=list)


@dataclass
class FileFacts:
    path: str  # relative, POSIX
    module: str  # the module's identity: its path, dotted (auditor/static/imports.py)
    imports: dict[str, str] = field(default_factory=dict)  # local alias -> qualified name
    star_imports: list[str] = field(default_factory=list)  # modules of `from m import *`
    # `import a.b.c` binds only `a`, yet runs a/b/c.py too: the full names of such imports
    submodules: list[str] = field(default_factory=list)
    # names bound by relative imports: already module identities, never looked up again
    local_imports: list[str] = field(default_factory=list)
    # alias -> what `except ImportError:` binds it to when the `try` body's import fails
    import_fallbacks: dict[str, str] = field(default_factory=dict)
    exports: Optional[list[str]] = None  # a literal `__all__`, if any
    runs_as_script: bool = False  # has an `if __name__ == "__main__":` block
    top_level_calls: bool = False  # calls something at module level (a script, when not imported)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    rule_facts: dict[str, list[Any]] = field(default_factory=dict)  # rule code -> its own facts
