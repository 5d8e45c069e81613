"""What an object's construction fixes: the value an attribute holds when the constructor binds
it from one of its parameters and nothing else assigns it.

``stopper = EarlyStopping(patience)`` with ``def __init__(self, patience=10, save_path=None)``
and ``self.save_path = save_path``: ``stopper.save_path`` is None for this object, whatever
other call sites pass. The path search (:mod:`auditor.static.paths`) asks this of the object a
caller holds, to rule out a method's branch that tests the attribute (``if self.save_path is
None: ... else: model.eval()``) for that caller.
"""

from __future__ import annotations

from typing import Optional

from auditor.static.config_values import Value, argument_values
from auditor.static.dataflow import _self_definitions, constructed_class
from auditor.static.facts import FunctionInfo
from auditor.static.project import Project


def attribute_values(project: Project, fn: FunctionInfo, name: str, line: int,
                     attr: str) -> Optional[list[Value]]:
    """The constants ``name.<attr>`` may hold in ``fn`` at ``line``, where ``name`` is a local
    that a constructor call of ``fn`` built before ``line``; None when unknown (``name`` built
    elsewhere or rebound, the attribute assigned outside the constructor, under a test there,
    or from anything but one parameter)."""
    if "." in name or not name.isidentifier():
        return None
    built = [e for e in fn.events if e.kind == "call" and name in e.targets and e.span.line <= line]
    rebound = [e for e in fn.events if e.kind in ("assign", "augassign", "call")
               and (name in e.targets or f"{name}.{attr}" in e.targets) and e.span.line <= line]
    if not built or rebound[-1:] != built[-1:]:
        return None
    ctor = built[-1]
    classes = constructed_class(project, ctor)
    init = project.function(f"{next(iter(classes))}.__init__") if len(classes) == 1 else None
    if init is None:
        return None
    target = f"self.{attr}"
    assigns = [e for e in init.events if e.kind == "assign" and target in e.targets]
    if len(assigns) != 1 or assigns[0].conditions or assigns[0].targets != [target] \
            or len(assigns[0].uses) != 1 or assigns[0].uses[0] not in init.params:
        return None
    if any(other is not init for other, _ in _self_definitions(project, init, target)):
        return None  # another method may change it
    return argument_values(project, fn, ctor, init, assigns[0].uses[0]) or None
