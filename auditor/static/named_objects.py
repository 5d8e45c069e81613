"""Functions and classes a program finds by names its settings give: a plugin module imported by
a configured name and an attribute of it looked up by another (``cls = load_plugin(__package__,
cfg["name"], cfg["cls"])`` where ``load_plugin`` returns ``getattr(importlib.import_module(
f"{package}.{name}"), attr)``). The names are the constants the configuration values give
(``auditor/static/config_values.py``); they are found once, before the rules ask the call graph
anything, and the project's calls are linked through them (``Project.named_objects``)."""

from __future__ import annotations

import re

from auditor.static.config_values import Symbol, Table, tables_of, values_of
from auditor.static.facts import MODULE_SCOPE, Event, FunctionInfo
from auditor.static.project import Project

# what a function that finds an object by name calls: a module imported by a computed name
LOOKUPS = ("importlib.import_module", "builtins.__import__", "__import__")


def link_named_objects(project: Project) -> Project:
    """``project`` with the objects its functions find by configured names linked: what a name
    holds (``cls = load_plugin(...)``: a class), and what it holds an instance of (``self.encoder =
    instantiate(cfg.encoder)``: the class a ``_target_`` setting names, Hydra's convention)."""
    if not project.any_source_matches(MENTIONS):
        return project  # no module imported by a computed name, no `_target_`: nothing to link
    held: dict[tuple[str, str], list[str]] = {}
    instances: dict[tuple[str, str], list[str]] = {}
    for fn, event, looks, _ in _lookup_sites(project):
        if len(event.targets) != 1 or not re.fullmatch(r"[\w.]+", event.targets[0]):
            continue
        name = event.targets[0]
        if looks and "." not in name:
            found = _named(project, fn, name, event.span.end_line + 1)
            if found:
                held.setdefault((fn.qualname, name), []).extend(found)
        elif not looks and event.args:
            found = _targets(project, fn, event.args[0], event.span.line)
            if found:
                instances.setdefault((fn.class_name if name.startswith("self.") else fn.qualname, name),
                                     []).extend(found)
    project.link_named_objects(held, instances)
    return project


def _lookup_sites(project: Project) -> list[tuple[FunctionInfo, Event, bool, bool]]:
    """(caller, call, looks up by name, reads ``_target_``) of the calls of the functions that
    look objects up by name (few), and of those that build what a configuration node's
    ``_target_`` names, Hydra's own included."""
    sites: list[tuple[FunctionInfo, Event, bool, bool]] = []
    for callee in list(project.functions.values()):
        looks, reads = _looks_up(callee), _reads_target(callee)
        if looks or reads:
            for caller in project.graph.predecessors(callee.qualname):
                caller_fn = project.functions.get(caller)
                sites += [(caller_fn, e, looks, reads) for e in project.graph.calls(caller, callee.qualname)
                          if caller_fn is not None]
    sites += [(fn, e, False, True) for fn in list(project.functions.values()) for e in fn.events
              if e.kind == "call" and e.func in INSTANTIATORS]
    return sites


def configured_nodes(project: Project) -> list[tuple[str, Table]]:
    """(the ``_target_`` named, its node) of every configuration node the project builds an
    object from, the nodes nested in one included (Hydra builds those first): what a layer,
    an optimizer or a loss is built with, whatever file sets it."""
    if not project.any_source_matches(MENTIONS):
        return []
    out: list[tuple[str, Table]] = []
    seen: set[int] = set()
    todo = [t.value for fn, event, _, reads in _lookup_sites(project) if reads and event.args
            for t in tables_of(project, fn, event.args[0], event.span.line)]
    while todo:
        table = todo.pop()
        if id(table) in seen:
            continue
        seen.add(id(table))
        out += [(v.value, table) for v in table.entries.get(TARGET_KEY, []) if isinstance(v.value, str)]
        todo += [v.value for values in table.entries.values() for v in values if isinstance(v.value, Table)]
    return out


# the words a tree with such lookups has somewhere in its sources
MENTIONS = re.compile(r"import_module|__import__|_target_")
# library functions that build the object a configuration node's `_target_` names
INSTANTIATORS = ("hydra.utils.instantiate", "hydra.utils.call")
TARGET_KEY = "_target_"
# the libraries whose classes a `_target_` may name for the analyses (optimizers, layers)
LIBRARIES = ("torch", "dgl")


def _reads_target(fn: FunctionInfo | None) -> bool:
    """``fn`` builds what its first parameter's ``_target_`` names (a hand-written
    ``instantiate``)."""
    return fn is not None and bool(fn.params) and any(
        TARGET_KEY in e.text and fn.params[0] in e.uses for e in fn.events)


def _targets(project: Project, fn: FunctionInfo, node: str, line: int) -> list[str]:
    """The project classes and functions the ``_target_`` of the configuration node ``node``
    names (``pkg.models.Encoder``; as the program imports it, a suffix of the project's name)."""
    out: list[str] = []
    for table in tables_of(project, fn, node, line):
        for value in table.value.entries.get(TARGET_KEY, []):
            if isinstance(value.value, str):
                out += _project_named(project, value.value)
    return list(dict.fromkeys(out))


def _project_named(project: Project, dotted: str) -> list[str]:
    """The project class or function a dotted name names: itself, re-exported, or the one
    whose qualified name ends with it (the program runs with its source folder on the path)."""
    if dotted in project.classes or dotted in project.functions:
        return [dotted]
    found = project.reexported(dotted)
    if found:
        return [found]
    if dotted.split(".", 1)[0] in LIBRARIES:
        return [dotted]  # a library's class (`torch.optim.AdamW`): an optimizer built by name
    tail = "." + dotted
    matches = [q for q in (*project.classes, *project.functions) if q.endswith(tail)]
    return matches if len(matches) == 1 else []


def _looks_up(fn: FunctionInfo | None) -> bool:
    """``fn`` returns an object found by a name it is given (imports a module by a computed
    name, then reads an attribute of it by name)."""
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
