"""Tests decided by configuration: whether an ``if`` holds on every run the tree configures.

``if cfg["stage"] != "pretrain":`` with ``stage: pretrain`` in the YAML the program loads never
runs its body. :func:`decided` answers a test's truth from the constants its operands may hold
(:func:`auditor.static.config_values.values_of`): True or False when every combination of them
gives that, with the constant that decided it; None when a value is unknown or they disagree.
:func:`never_runs` names the enclosing test of an event that no configured run passes;
:func:`switched_on` the one that every configured run passes. :func:`returns_through` asks the
same of one call: whether the constants it passes let a callee's event run.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import Iterator, Optional

from auditor.static.conditions import tests_of
from auditor.static.config_values import COMPARE, LITERAL, Source, Value, parsed, values_of
from auditor.static.facts import Event, FunctionInfo
from auditor.static.project import Project
from auditor.static.texts import loop_iterable

Truth = tuple[bool, Optional[Source]]  # the test's value and a constant that decided it
Bound = dict[str, list[Value]]  # parameter -> the constants one call passes for it

MAX_COMBINATIONS = 64


def decided(project: Project, fn: FunctionInfo, test: str, line: int) -> Optional[Truth]:
    """The truth of ``test`` (an ``if``'s test as written in ``fn`` at ``line``) on every run."""
    node = parsed(project, test, line)
    return None if node is None else _truth(project, fn, node, line)


def never_runs(project: Project, fn: FunctionInfo, event: Event) -> Optional[tuple[str, Source]]:
    """The enclosing test of ``event`` that every configured run finds false, or the enclosing
    loop over a configured list that every configured run leaves empty, with the constant that
    decides it; None when each may hold."""
    for test in tests_of(event):
        truth = decided(project, fn, test, event.span.line)
        if truth is not None and not truth[0] and truth[1] is not None:
            return test, truth[1]
    return empty_loop(project, fn, event)


def empty_loop(project: Project, fn: FunctionInfo, event: Event) -> Optional[tuple[str, Source]]:
    """The enclosing loop of ``event`` over a configured list that every configured run
    leaves empty, with the setting; None when there is none."""
    for loop in event.loop_ids:
        found = _empty_loop(project, fn, loop)
        if found is not None:
            return found
    return None


def _empty_loop(project: Project, fn: FunctionInfo, loop: int) -> Optional[tuple[str, Source]]:
    """``for name in cfg.transforms:`` where the setting is an empty list on every configured
    run: the header, and the setting. Only a setting read from a configuration (an attribute,
    a key): a local list may be filled by ``append`` after it was written."""
    memo = project.memo("config_truth.loops")
    key = (fn.qualname, loop)
    if key not in memo:
        memo[key] = None
        first = next((k for k, e in enumerate(fn.events) if loop in e.loop_ids), 0)
        head = fn.events[first - 1] if first else None
        walked = loop_iterable(head.text) if head is not None and head.kind == "assign" else ""
        node = parsed(project, walked, head.span.line) if walked and head else None
        # a setting read off a configuration (`cfg.transforms`, `cfg["transforms"]`,
        # `cfg.get("transforms", [])`); the values of other calls are not worth their cost here
        if head is not None and (isinstance(node, (ast.Attribute, ast.Subscript)) or isinstance(
                node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            found = values_of(project, fn, node, head.span.line)
            if found and all(v.value == () and v.source.what != "a literal" for v in found):
                memo[key] = (f"{walked} is empty", found[0].source)
    return memo[key]


def switched_on(project: Project, fn: FunctionInfo, event: Event) -> Optional[tuple[str, Source]]:
    """The enclosing test of ``event`` that holds on every configured run, with the constant
    deciding it (the setting that switches the code on)."""
    for test in tests_of(event):
        truth = decided(project, fn, test, event.span.line)
        if truth is not None and truth[0] and truth[1] is not None:
            return test, truth[1]
    return None


# a switch whose name says it freezes something (`freeze_encoder`, `fixed_bn`)
FREEZE_SETTING = re.compile(r"freez|frozen|\bfix(ed)?_|_fixed\b", re.I)


def setting_at_fault(fn: FunctionInfo, test: str, source: Source) -> bool:
    """Is the setting that switches a test on, not the code, what to change? When it is written
    elsewhere (a configuration file, a config class's default) and the test is that switch
    itself, named for freezing (``if cfg.freeze_encoder:``). A comparison's literal in the code
    may be the wrong side (``cfg.stage != "pretraining"`` where the file says ``pretrain``), and a
    switch named for something else (``if cfg.pretrain:``) makes the code's use of it the
    suspect."""
    compares = any(op in test for op in ("==", "!=", "<", ">", " in ", " is "))
    return not compares and bool(FREEZE_SETTING.search(test)) \
        and source.path != fn.path and source.what != LITERAL


def set_in_file(project: Project, fn: FunctionInfo, event: Event) -> Optional[tuple[str, Source]]:
    """The enclosing comparison of ``event`` that a configuration file of the tree makes hold
    on the runs it configures (others may not), with that file's setting."""
    for test in tests_of(event):
        node = parsed(project, test, event.span.line)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            for holds, source in _outcomes(project, fn, node, event.span.line):
                if holds and not source.path.endswith(".py"):
                    return test, source
    return None


def returns_through(project: Project, callee: FunctionInfo, event: Event, caller: FunctionInfo,
                    call: Event) -> bool:
    """Whether ``event`` of ``callee`` may run when ``callee`` is entered through ``call`` of
    ``caller``: False when one of its tests reads parameters of ``callee`` and is false for
    every constant the call passes for them (``if reduction == "sum":`` entered through
    ``sce(x, y)``, which leaves ``reduction="mean"``, or through ``sce(x, y, "mean")``)."""
    return not any(truth is not None and not truth[0]
                   for _, truth in _truths_through(project, callee, event, caller, call))


def switched_on_through(project: Project, callee: FunctionInfo, event: Event, caller: FunctionInfo,
                        call: Event) -> Optional[tuple[str, Source]]:
    """The test of ``event`` that holds for every constant ``call`` passes for the parameters it
    reads, with the constant deciding it (``if reduction == "sum":`` entered through
    ``sce(x, y, self.reduction)`` where the configuration sets "sum")."""
    return next(((test, truth[1]) for test, truth in _truths_through(project, callee, event, caller, call)
                 if truth is not None and truth[0] and truth[1] is not None), None)


def _truths_through(project: Project, callee: FunctionInfo, event: Event, caller: FunctionInfo,
                    call: Event) -> Iterator[tuple[str, Optional[Truth]]]:
    """Each test of ``event`` that reads parameters of ``callee``, with its truth for the
    constants ``call`` passes for them (None when one is not known)."""
    position = {p: k for k, p in enumerate(callee.positional)}
    for test in tests_of(event):
        node = parsed(project, test, event.span.line)
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()
        bound: Bound = {}
        for name in names & set(callee.params) - {"self", "cls"}:
            argument = call.argument(name, position.get(name, len(call.args)))
            if argument:
                values = values_of(project, caller, argument, call.span.line)
            elif name in callee.defaults:
                values = values_of(project, callee, callee.defaults[name], callee.span.line)
            else:
                values = []
            if not values:
                yield test, None  # a value not known here: the test may hold
                break
            bound[name] = values
        else:
            if bound and node:
                yield test, _truth(project, callee, node, event.span.line, bound)


def _truth(project: Project, fn: FunctionInfo, node: ast.expr, line: int,
           bound: Optional[Bound] = None) -> Optional[Truth]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(project, fn, node.operand, line, bound)
        return None if inner is None else (not inner[0], inner[1])
    if isinstance(node, ast.BoolOp):
        parts = [_truth(project, fn, v, line, bound) for v in node.values]
        short = isinstance(node.op, ast.Or)  # the value that settles `or` (True) / `and` (False)
        settled = next((p for p in parts if p is not None and p[0] == short), None)
        if settled is not None:
            return settled
        return None if None in parts else (not short, next((p[1] for p in parts if p[1]), None))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        outcomes = _outcomes(project, fn, node, line, bound)
        return _agreed(outcomes) if outcomes else None
    if isinstance(node, ast.Constant):
        return bool(node.value), None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("any", "all") \
            and len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp):
        # `any(name.startswith(p) for p in prefixes)` over a list every run leaves empty
        walked = _operand(project, fn, node.args[0].generators[0].iter, line, bound)
        if walked and all(v.value == () for v in walked):
            return node.func.id == "all", walked[0].source
        return None
    found = _operand(project, fn, node, line, bound)
    return _agreed([(bool(v.value), v.source) for v in found]) if found else None


def _outcomes(project: Project, fn: FunctionInfo, node: ast.Compare, line: int,
              bound: Optional[Bound] = None) -> list[tuple[bool, Source]]:
    """The comparison's result for each pair of values its operands may hold, with the value
    that is not the literal compared with; none when it cannot be told."""
    op = COMPARE.get(type(node.ops[0]))
    lefts = _operand(project, fn, node.left, line, bound)
    rights = _operand(project, fn, node.comparators[0], line, bound)
    if op is None or not lefts or not rights or len(lefts) * len(rights) > MAX_COMBINATIONS:
        return []
    out = []
    for left, right in itertools.product(lefts, rights):
        try:
            result = bool(op(left.value, right.value))
        except TypeError:
            return []
        literal = right if left.source.path == fn.path and left.source.line == node.lineno else left
        out.append((result, literal.source))
    return out


def _operand(project: Project, fn: FunctionInfo, node: ast.expr, line: int,
             bound: Optional[Bound] = None) -> list[Value]:
    """The constants an operand may hold: a literal (tuples and lists of them too), what one
    call passes for a parameter (``bound``), or what the configuration gives it."""
    if bound and isinstance(node, ast.Name) and node.id in bound:
        return bound[node.id]
    if isinstance(node, ast.Constant):
        return [Value(node.value, Source(fn.path, node.lineno, "a literal"))]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_operand(project, fn, e, line) for e in node.elts]
        if not all(len(i) == 1 for i in items):
            return []
        return [Value(tuple(i[0].value for i in items), Source(fn.path, node.lineno, "a literal"))]
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return values_of(project, fn, node, line)
    return []


def _agreed(results: list[tuple[bool, Source]]) -> Optional[Truth]:
    values = {r for r, _ in results}
    if len(values) != 1:
        return None
    return results[0][0], next((s for _, s in results if s.what != "a literal"), results[0][1])
