"""Aligning two runs whose model sits at different depths of what each trains.

A minimal script trains ``Net`` itself; the pipeline trains it inside something (a
LightningModule's ``self.model``, a holder with an EMA copy beside it). Each run records names
from the module it trains, so the same parameter is ``enc.weight`` in one run and
``model.enc.weight`` in the other. The alignment is the pair of module prefixes under which the
most parameters agree by name and shape; both snapshots are renamed into the common tree, and
what lies outside the aligned subtree (the wrapper itself, an EMA copy) keeps its own name, so it
is reported as existing in one run only, never as a divergence of everything. (``module.`` and
``_orig_mod.`` of DDP and ``torch.compile`` are stripped when the snapshot is taken.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from auditor.diff.compare import GRAPH_INTO, MASK_PREFIX, RNG_PREFIX

WRAPPER = "<wrapper>"  # the outer module of the wrapped side, once its inner model is the root


@dataclass(frozen=True)
class Alignment:
    reference: str  # module prefix, "" or "model." (with its dot)
    candidate: str
    matched: int  # parameters agreeing by name and shape under these prefixes

    def candidate_name(self, name: str) -> str:
        """An aligned name as the candidate run itself names it (its probe evidence does): a
        module's path; the module a graph enters (``graph→encoder``); masks and RNG uses are
        the run's own, named alike on both sides."""
        if name.startswith(GRAPH_INTO):
            return GRAPH_INTO + self.candidate_name(name[len(GRAPH_INTO):])
        if name.startswith((MASK_PREFIX, RNG_PREFIX)):
            return name
        if name.startswith(WRAPPER):
            return name[len(WRAPPER):].lstrip(".")
        return self.candidate + name if self.candidate else name

    def describe(self) -> str:
        def side(prefix: str) -> str:
            return f"`{prefix.rstrip('.')}`" if prefix else "its trained module"
        return (f"runs aligned by structure: the reference's {side(self.reference)} is the "
                f"candidate's {side(self.candidate)} ({self.matched} parameters match by name "
                f"and shape)")


def _shapes(snapshot: dict) -> dict[str, Any]:
    first = (snapshot.get("steps") or [{}])[0]
    return {n: (r.get("shape") if isinstance(r, dict) else None)
            for n, r in (first.get("init") or first.get("update") or {}).items()}


def _prefixes(names: dict[str, Any]) -> set[str]:
    out = {""}
    for name in names:
        parts = name.split(".")[:-1]
        out |= {".".join(parts[:i]) + "." for i in range(1, len(parts) + 1)}
    return out


def _score(a: dict[str, Any], b: dict[str, Any], pa: str, pb: str) -> int:
    return sum(1 for n, shape in a.items() if n.startswith(pa)
               and b.get(pb + n[len(pa):], object()) == shape)


def find(reference: dict, candidate: dict) -> Optional[Alignment]:
    """The prefixes that match more parameters than the names as they are; None when the names
    as they are match best (or nothing matches)."""
    a, b = _shapes(reference), _shapes(candidate)
    plain = _score(a, b, "", "")
    best: Optional[Alignment] = None
    for pa in _prefixes(a):
        for pb in _prefixes(b):
            if pa and pb:
                continue  # one side wraps the other; both wrapped differently is not aligned
            n = _score(a, b, pa, pb)
            if n > plain and (best is None or n > best.matched):
                best = Alignment(pa, pb, n)
    return best


def _param(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else f"{WRAPPER}.{name}"


def _module(name: str, prefix: str) -> str:
    """A module (or module-output) name in the aligned tree; the wrapper's own root is
    :data:`WRAPPER`."""
    root = prefix.rstrip(".")
    if name.startswith(prefix):
        return name[len(prefix):]
    if name == root or (name.startswith(root) and name[len(root):][:1] in "[(#"):
        return name[len(root):]
    return f"{WRAPPER}.{name}" if name else WRAPPER


def rename(snapshot: dict, prefix: str) -> dict:
    """``snapshot`` with the module under ``prefix`` as its root (a new dict)."""
    if not prefix:
        return snapshot
    root = prefix.rstrip(".")
    steps = []
    for step in snapshot.get("steps") or []:
        new = dict(step)
        for key in ("init", "stale", "grad", "update"):
            if step.get(key) is not None:
                new[key] = {_param(n, prefix): v for n, v in step[key].items()}
        for key in ("modes", "classes", "graphs"):
            if step.get(key) is not None:
                new[key] = {_module(n, prefix): v for n, v in step[key].items()}
        new["features"] = {(_module(n.rsplit(".", 1)[0], prefix) + "." + n.rsplit(".", 1)[1]
                            if "." in n else n).lstrip("."): v
                           for n, v in (step.get("features") or {}).items()}
        # the wrapper's own outputs are no loss components of the aligned model; the inner
        # model's outputs are
        loss = {n: v for n, v in (step.get("loss") or {}).items() if not n.startswith("output")}
        forward = {f"{WRAPPER}{n[len('output'):]}": v for n, v in (step.get("loss") or {}).items()
                   if n.startswith("output")}
        for n, v in (step.get("forward") or {}).items():
            if n == root or (n.startswith(root) and n[len(root):][:1] in "[("):
                loss[f"output{n[len(root):]}"] = v
            else:
                forward[_module(n, prefix)] = v
        new["loss"], new["forward"] = loss, forward
        steps.append(new)
    return {**snapshot, "steps": steps}


def align(reference: dict, candidate: dict) -> tuple[dict, dict, Optional[Alignment]]:
    """Both snapshots in one tree, and the alignment used (None: the names as they are)."""
    found = find(reference, candidate)
    if found is None:
        return reference, candidate, None
    return rename(reference, found.reference), rename(candidate, found.candidate), found
