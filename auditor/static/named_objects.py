"""Functions and classes a program finds by names its settings give: a plugin module imported by
a configured name and an attribute of it looked up by another (``cls = load_plugin(__package__,
cfg["name"], cfg["cls"])`` where ``load_plugin`` returns ``getattr(importlib.import_module(
f"{package}.{name}"), attr)``). The names are the constants the configuration values give
(``auditor/static/config_values.py``); they are found once, before the rules ask the call graph
anything, and the project's calls are linked through them (``Project.named_objects``)."""

from __future__ import annotations

import re

from auditor.static.config_values import Symbol, values_of
from auditor.static.facts import MODULE_SCOPE, FunctionInfo
from auditor.static.project import Project

# what a function that finds an object by name calls
LOOKUPS = ("importlib.import_module", "getattr")


def link_named_objects(project: Project) -> Project:
    """``project`` with the objects its functions find by configured names linked."""
    table: dict[tuple[str, str], list[str]] = {}
    for fn in list(project.functions.values()):
        for event in fn.events:
            if event.kind != "call" or len(event.targets) != 1 or not re.fullmatch(r"\w+", event.targets[0]):
                continue
            if not any(_looks_up(project.function(q)) for q in project.resolve_call(event, fn)):
                continue
            found = _named(project, fn, event.targets[0], event.span.end_line + 1)
            if found:
                table.setdefault((fn.qualname, event.targets[0]), []).extend(found)
    project.link_named_objects(table)
    return project


def _looks_up(fn: FunctionInfo | None) -> bool:
    """``fn`` returns an object found by a name it is given (imports a module by name, reads an
    attribute by name)."""
    return fn is not None and any(e.kind == "call" and e.func in LOOKUPS for e in fn.events)


def _named(project: Project, fn: FunctionInfo, name: str, line: int) -> list[str]:
    """The project classes and functions ``name`` holds at ``line`` of ``fn``."""
    out: list[str] = []
    for value in values_of(project, fn, name, line):
        if not isinstance(value.value, Symbol):
            continue
        found = str(value.value)
        if found not in project.classes and found not in project.functions:
            found = project.reexported(found) or _alias(project, found)
        if found:
            out.append(found)
    return list(dict.fromkeys(out))


def _alias(project: Project, qualname: str) -> str:
    """What a module's global names when it is another name (``LOSS = SCELoss``), as its
    module's imports resolve it; "" when it is not."""
    module, _, name = qualname.rpartition(".")
    scope = project.functions.get(f"{module}.{MODULE_SCOPE}")
    for event in reversed(scope.events if scope is not None else ()):
        if event.kind == "assign" and event.targets == [name]:
            value = event.text.split("=", 1)[1].strip()
            target = project.qualified(scope, value) if re.fullmatch(r"[\w.]+", value) else ""
            return target if target in project.classes or target in project.functions else ""
    return ""
