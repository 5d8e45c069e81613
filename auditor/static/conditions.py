"""Conditions of a path: under which enclosing ``if`` tests an event runs.

Every event carries its function's enclosing tests, outermost first, an ``else`` / ``elif``
body holding ``not (test)`` (see :attr:`auditor.static.facts.Event.conditions`). The script's
own ``if __name__ == "__main__":`` guard is no condition of the program it starts.

API:

* :func:`innermost` — the test of the nearest enclosing ``if`` as it holds there, as written.
* :func:`conditions_of` — the tests an event runs under, normalised (spaces dropped).
* :func:`implies` — event A runs only where event B's tests hold (A's tests include B's): a
  ``DistributedDataParallel`` under ``if not args.standalone`` after an ``init_process_group``
  under the same test runs exactly when the process group exists.
* :func:`excludes` — two events on opposite sides of one ``if`` (one runs under ``test``, the
  other under ``not (test)``): no single pass runs both.
* :func:`constant_truth` — a test on a constant resolves (``if False:``, ``if not DEBUG`` with a
  module constant ``DEBUG = False``): True / False, or None when it depends on the run.
"""

from __future__ import annotations

import functools
import re
from typing import Optional

from auditor.static.context import MODULE_SCOPE
from auditor.static.facts import Event
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


def conditions_of(event: Event) -> list[str]:
    return [normalise(c) for c in event.conditions if not _MAIN_GUARD.search(c)]


def implies(event: Event, other: Event) -> bool:
    """``event`` runs only where ``other``'s enclosing tests hold (same function's tests)."""
    mine = set(conditions_of(event))
    return all(c in mine for c in conditions_of(other))


def excludes(event: Event, other: Event) -> bool:
    """``event`` and ``other`` lie on opposite sides of one test."""
    mine = set(conditions_of(event))
    return any(f"not({c})" in mine or (c.startswith("not(") and c.endswith(")") and c[4:-1] in mine)
               for c in conditions_of(other))


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
