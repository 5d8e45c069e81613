"""The call graph's storage: functions by qualified name, and for each caller the call events
that reach each callee.

Not networkx: the project needs adjacency and reachability only, and importing networkx (its
algorithms, generators and backend entry points) was a third of the time of checking one small
file, the pre-commit and editor case.
"""

from __future__ import annotations

from typing import Iterable

from auditor.static.facts import Event


class CallGraph:
    """A directed graph of qualnames; an edge holds the call events from caller to callee."""

    def __init__(self) -> None:
        self._succ: dict[str, dict[str, list[Event]]] = {}
        # callers in the order first seen, as the events were recorded (a dict keeps it)
        self._pred: dict[str, dict[str, None]] = {}

    def __contains__(self, qualname: object) -> bool:
        return qualname in self._succ

    def add_node(self, qualname: str) -> None:
        self._succ.setdefault(qualname, {})
        self._pred.setdefault(qualname, {})

    def add_call(self, caller: str, callee: str, event: Event) -> None:
        """Record ``event`` as a call from ``caller`` to ``callee`` (an equal event once)."""
        self.add_node(caller)
        self.add_node(callee)
        events = self._succ[caller].setdefault(callee, [])
        self._pred[callee][caller] = None
        if event not in events:
            events.append(event)

    def calls(self, caller: str, callee: str) -> list[Event]:
        return list(self._succ.get(caller, {}).get(callee, ()))

    def successors(self, qualname: str) -> list[str]:
        return list(self._succ.get(qualname, ()))

    def predecessors(self, qualname: str) -> list[str]:
        return list(self._pred.get(qualname, ()))

    def reachable(self, starts: Iterable[str], backwards: bool = False) -> set[str]:
        """Every node a chain of edges leads to from ``starts`` (against the edges when
        ``backwards``), the starts included."""
        step = self._pred if backwards else self._succ
        seen = {q for q in starts if q in self._succ}
        todo = list(seen)
        while todo:
            for nxt in step[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen
