"""Conditions of a path: under which enclosing ``if`` tests an event runs.

Every event carries its function's enclosing tests, outermost first, an ``else`` / ``elif``
body holding ``not (test)`` (see :attr:`auditor.static.facts.Event.conditions`). The script's
own ``if __name__ == "__main__":`` guard is no condition of the program it starts.

API:

* :func:`innermost` — the test of the nearest enclosing ``if`` as it holds there, as written.
* :func:`tests_of` / :func:`conditions_of` — the tests an event runs under, as written /
  normalised (spaces dropped).
* :func:`implies` — event A runs only where event B's tests hold (A's tests include B's): a
  ``DistributedDataParallel`` under ``if not args.standalone`` after an ``init_process_group``
  under the same test runs exactly when the process group exists.
* :func:`excludes` — two events on opposite sides of one ``if`` (one runs under ``test``, the
  other under ``not (test)``): no single pass runs both.
* :func:`constant_truth` — a test on a constant resolves (``if False:``, ``if not DEBUG`` with a
  module constant ``DEBUG = False``): True / False, or None when it depends on the run.
* :func:`attribute_none_tests` — the ``self.attr is None`` tests an event runs under, for the
  path search to weigh against what the object's construction bound (construction.py).
* :func:`ruled_out` — an event of a callee cannot run when the callee is entered through one
  call: its tests ask ``param is None`` of an argument the caller's own tests at that call
  show is not None (``if loader is not None:``, or a project predicate such as
  ``if self.can_validate(loader):`` that returns False whenever its parameter is None).
"""

from __future__ import annotations

import functools
import re
from typing import Optional

from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import Event, FunctionInfo
from auditor.static.project import Project

_MAIN_GUARD = re.compile(r"__name__\s*==\s*['\"]__main__['\"]")
_NEGATED = re.compile(r"^not\s*\((.*)\)$|^not\s+(.*)$")


@functools.lru_cache(maxsize=8192)  # the same few tests, asked about hundreds of thousands of times
def normalise(test: str) -> str:
    return re.sub(r"\s+", "", test)


def innermost(event: Event) -> Optional[str]:
    """The test of the nearest enclosing ``if`` of the event's own function, as it holds at the
    event (``not (test)`` in its ``else``), or None when no ``if`` encloses it."""
    return event.conditions[-1] if event.conditions else None


def tests_of(event: Event) -> list[str]:
    """The tests an event runs under, as written."""
    return [c for c in event.conditions if not _MAIN_GUARD.search(c)]


_PERIODIC_RETURN = re.compile(r"%\s*[\w.()\[\]]+\s*[!=]=")  # `return step % k == 0`, no `"%d" % n`


def periodic_test(project: Project, test: str) -> bool:
    """A test that holds every k-th time (``(i + 1) % k == 0``), or a flag the program computes
    so (``self.sync_gradients = self.micro_step % self.accum == 0``), or a call of a function
    that returns one (``if self.accum.ready():``)."""
    if "%" in test:
        return True
    memo = project.memo("periodic_flags")
    state = len(project.functions)
    if memo.get("state") != state:  # the names assigned a `%` value, indexed once per project size
        memo["state"] = state
        memo["names"] = {t.rsplit(".", 1)[-1] for _, e in project.events("assign")
                         if "%" in e.text.split("=", 1)[-1] for t in e.targets}
        # and the functions that return one (`def ready(self): ... return self.count % k == 0`)
        memo["names"] |= {project.functions[q].name for q in {fn.qualname for fn, e in project.events("return")
                                                              if _PERIODIC_RETURN.search(e.text)}}
    return any(name.rsplit(".", 1)[-1] in memo["names"] for name in re.findall(r"[A-Za-z_][\w.]*", test))


def conditions_of(event: Event) -> list[str]:
    return [normalise(c) for c in tests_of(event)]


def implies(event: Event, other: Event) -> bool:
    """``event`` runs only where ``other``'s enclosing tests hold (same function's tests)."""
    mine = set(conditions_of(event))
    return all(c in mine for c in conditions_of(other))


def _polarity(test: str) -> tuple[str, bool]:
    """A test without its leading ``not`` (``not x``, ``not (x)``, an ``else``'s ``not (test)``),
    normalised, and whether it was positive."""
    negated = _NEGATED.match(test.strip())
    inner = (negated.group(1) or negated.group(2)) if negated else ""
    # `not a and b` is `(not a) and b`; `not (a) or (b)` is no negation of one test
    if inner and _balanced(inner) and (negated.group(1) or all(
            len(_split_top(inner, w)) == 1 for w in ("and", "or"))):
        return normalise(inner), False
    return normalise(test), True


def excludes(event: Event, other: Event) -> bool:
    """``event`` and ``other`` lie on opposite sides of one test."""
    mine = {_polarity(c) for c in event.conditions if not _MAIN_GUARD.search(c)}
    return any((test, not positive) in mine
               for test, positive in (_polarity(c) for c in other.conditions if not _MAIN_GUARD.search(c)))


def constant_truth(project: Project, module: str, test: str) -> Optional[bool]:
    """The value of a test on a literal or on a module-level constant assigned once."""
    text = test.strip()
    match = _NEGATED.match(text)
    if match:
        inner = constant_truth(project, module, match.group(1) or match.group(2))
        return None if inner is None else not inner
    literal = {"True": True, "False": False, "0": False, "1": True, "None": False}
    if text in literal:
        return literal[text]
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        body = project.functions.get(f"{module}.{MODULE_SCOPE}")
        values = [e.text.split("=", 1)[1].strip() for e in (body.events if body else ())
                  if e.kind in ("assign", "augassign") and e.targets == [text]]
        if len(values) == 1 and values[0] in literal:
            return literal[values[0]]
    return None


_FALSY_RETURNS = {"return", "returnFalse", "returnNone", "return0"}


def _split_top(test: str, word: str) -> list[str]:
    """``a and (b or c) and d`` -> its operands joined by ``word`` outside brackets (the outer
    parentheses of the whole test dropped), each normalised."""
    text = re.sub(r"\s+", " ", test.strip())
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(f" {word} ", k):
            parts.append(text[start:k])
            start = k + len(word) + 2
    return [normalise(p) for p in (*parts, text[start:])]


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def attribute_none_tests(event: Event) -> list[tuple[str, bool]]:
    """The tests on whether an attribute of ``self`` is None that ``event`` runs under: (attr,
    True) under ``self.attr is None`` (an operand of an ``and``), (attr, False) under
    ``self.attr is not None`` or in the ``else`` of ``if self.attr is None``."""
    out: list[tuple[str, bool]] = []
    for condition in event.conditions:
        test, positive = _polarity(condition)
        # a negation holds of its whole test: only a test that is one comparison says anything
        for part in _split_top(condition, "and") if positive else [test]:
            match = re.fullmatch(r"self\.(\w+)is(not)?None", part)
            if match:
                out.append((match.group(1), positive != bool(match.group(2))))
    return out


def _none_tested(test: str, falsy: bool = False) -> Optional[str]:
    """The name ``test`` (one operand) says is None (``x is None``), or with ``falsy`` also
    says is falsy (``not x``)."""
    match = re.fullmatch(r"([\w.]+)isNone|not([\w.]+)" if falsy else r"([\w.]+)isNone()",
                         normalise(test))
    return (match.group(1) or match.group(2)) if match else None


def _assigned_before(fn: FunctionInfo, name: str, start: int, stop: int) -> bool:
    return any(e.kind in ("assign", "augassign") and name in e.targets
               for e in fn.events[start:stop])


def _rejects_none(project: Project, fn: FunctionInfo, call: Event) -> set[str]:
    """The arguments of ``call`` that are not None when it returns a true value: the callee
    first returns a falsy literal under a test of which one ``or`` operand is ``param is None``."""
    from auditor.static.paths import bindings  # built on this module: imported when asked
    out: set[str] = set()
    for qual in project.resolve_call(call, fn):
        callee = project.function(qual)
        if callee is None:
            continue
        first = next((k for k, e in enumerate(callee.events) if e.kind == "return"), None)
        ret = callee.events[first] if first is not None else None
        if ret is None or normalise(ret.text) not in _FALSY_RETURNS or len(ret.conditions) != 1 \
                or ret.loop_ids:
            continue
        tested = {_none_tested(t, falsy=True) for t in _split_top(ret.conditions[0], "or")}
        for param, arg in bindings(call, callee):
            if param in tested and not _assigned_before(callee, param, 0, first):
                out.add(normalise(arg))
    return out


def _not_none_at(project: Project, fn: FunctionInfo, index: int) -> set[str]:
    """Names the enclosing tests of event ``index`` of ``fn`` show are not None there: a
    conjunct ``x is not None`` or ``x``, or a call of a predicate that rejects None for its
    argument (:func:`_rejects_none`); not when ``x`` is assigned inside the test's block."""
    at = fn.events[index]
    out: set[str] = set()
    for depth, test in enumerate(at.conditions):
        opened = next((k for k, e in enumerate(fn.events[:index])
                       if e.conditions[:depth + 1] == at.conditions[:depth + 1]), index)
        found: set[str] = set()
        for part in _split_top(test, "and"):
            plain = re.fullmatch(r"([\w.]+)isnotNone|([\w.]+)|not\(([\w.]+)isNone\)", part)
            if plain:
                found.add(plain.group(1) or plain.group(2) or plain.group(3))
            elif re.fullmatch(r"[\w.]+\(.*\)", part):
                head = part.split("(", 1)[0]  # the test's own call event: the last before
                calls = [e for e in fn.events[:index] if e.kind == "call" and head in (
                    e.func, f"{e.receiver}.{e.method}")]
                for call in calls[-1:]:
                    found |= _rejects_none(project, fn, call)
        out |= {n for n in found if not _assigned_before(fn, n, opened, index)}
    return out


def ruled_out(project: Project, callee: FunctionInfo, event: Event, caller: FunctionInfo,
              call: Event) -> bool:
    """``event`` of ``callee`` cannot run when ``callee`` is entered through ``call`` of
    ``caller``: one of its tests is an ``and`` of which one operand asks ``param is None`` of a
    parameter (not reassigned before it) bound to an argument that is not None at the call."""
    from auditor.static.paths import bindings  # built on this module: imported when asked
    at = callee.position(event)
    args = {param: normalise(arg) for param, arg in bindings(call, callee)}
    needed = set()
    for test in event.conditions:
        for part in _split_top(test, "and"):
            name = _none_tested(part)
            if name in args and not _assigned_before(callee, name, 0, at):
                needed.add(args[name])
    if not needed:
        return False
    return bool(needed & _not_none_at(project, caller, caller.position(call)))
