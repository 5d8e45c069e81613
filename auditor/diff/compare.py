"""Stage-by-stage comparison of two runs' snapshots (``auditor/diff/snapshot.py``).

Items are compared by stable name. A tensor record is the same when its hash matches, or when
every value (or, for large tensors of later steps, the stored sample and summary) is within
``atol + rtol * |reference|``; shape and dtype differences are differences of their own.

A stage's status: ``missing`` when one run recorded nothing for it (e.g. no optimizer step),
``differs`` when an item present in both runs differs, or when a parameter exists in one run
only (``init``, ``grad``, ``update``: a different model); ``same`` otherwise. Items present in one
run only in the other stages (a module's output, a loss component the other script computes
outside its model) are listed but are no divergence by themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

STAGES = ("init", "input", "mode", "forward", "loss", "grad", "update")
STRUCTURAL = ("init", "grad", "update")
RNG_PREFIX = "rng "
GRAPH_INTO = "graph→"  # the graph entering a module: `graph→encoder`
MASK_PREFIX = "mask["
STALE_SUFFIX = " (before backward)"
MAX_ITEMS = 25


@dataclass
class Tolerance:
    atol: float = 1e-5
    rtol: float = 1e-4


@dataclass
class Item:
    name: str
    status: str  # differs | only_reference | only_candidate
    detail: str
    step: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "step": self.step}


@dataclass
class StageResult:
    stage: str
    status: str = "same"
    items: list[Item] = field(default_factory=list)
    compared: int = 0
    step: Optional[int] = None  # the first step where it differs

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "status": self.status, "compared": self.compared,
                "items": [i.to_json() for i in self.items[:MAX_ITEMS]]}


def stage_items(step: dict, stage: str) -> dict[str, Any]:
    """name -> record of one stage of one step of a snapshot."""
    if stage == "init":
        return dict(step.get("init") or {})
    if stage == "input":
        out: dict[str, Any] = {}
        for name, facts in (step.get("graphs") or {}).items():
            out[f"{GRAPH_INTO}{name or '<model>'}"] = {"facts": facts}
        for name, t in (step.get("features") or {}).items():
            out[f"features {name}"] = t
        for name, t in (step.get("batch") or {}).items():
            out[f"batch {name}"] = t
        for i, t in enumerate(step.get("masks") or []):
            out[f"{MASK_PREFIX}{i}]"] = t
        for name, use in (step.get("rngs") or {}).items():
            out[f"{RNG_PREFIX}{name}"] = {"rng": use}
        return out
    if stage == "mode":
        return {(n or "<model>"): {"training": v} for n, v in (step.get("modes") or {}).items()}
    if stage == "grad":
        grads = step.get("grad")
        if grads is None:
            return {}
        # the gradient held before the backward first: left over from an earlier step, it
        # names the cause of the gradients that differ after it
        out = {f"{n}{STALE_SUFFIX}": v for n, v in (step.get("stale") or {}).items()}
        out.update({n: ("none" if g is None else g) for n, g in grads.items()})
        return out
    if stage == "loss":
        return {n: t for n, t in (step.get("loss") or {}).items()}
    return dict(step.get(stage) or {})


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _close(a: float, b: float, tol: Tolerance) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol.atol + tol.rtol * abs(a)


def compare_tensor(a: dict, b: dict, tol: Tolerance, ignore=None, rows_may_permute: bool = False
                   ) -> Optional[str]:
    """None when the same, else a short description of the difference. ``ignore``: a boolean
    tensor of the elements not to compare (see :func:`noise_mask`)."""
    import torch

    if a.get("shape") != b.get("shape"):
        return f"shape {a.get('shape')} vs {b.get('shape')}"
    dtype = f"dtype {a['dtype']} vs {b['dtype']}" if a.get("dtype") != b.get("dtype") else ""
    if not dtype and a.get("hash") and a.get("hash") == b.get("hash"):
        return None
    for key in ("values", "sample"):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.shape == vb.shape:
            if not (va.is_floating_point() or vb.is_floating_point()):
                differ = int((va != vb).sum())
                if differ:
                    return ", ".join(x for x in (dtype, f"{differ} of {va.numel()} values differ") if x)
                return dtype or None
            fa, fb = va.double(), vb.double()
            diff = (fa - fb).abs()
            both_nan = fa.isnan() & fb.isnan()
            diff = torch.where(both_nan, torch.zeros_like(diff), diff)
            bad = diff > tol.atol + tol.rtol * fa.abs()
            bad |= fa.isnan() ^ fb.isnan()
            if key == "values" and ignore is not None and ignore.shape == bad.shape:
                bad &= ~ignore
            if bool(bad.any()) and rows_may_permute and key == "values" and fa.dim() >= 1:
                # per-edge tensors of a graph whose edges were re-ordered (e.g. self loops
                # removed and re-added): the same multiset of rows is no divergence
                ra = fa.reshape(fa.shape[0], -1)
                rb = fb.reshape(fb.shape[0], -1)
                if bool(((ra.sort(0).values - rb.sort(0).values).abs()
                         <= tol.atol + tol.rtol * ra.sort(0).values.abs()).all()):
                    return dtype or None
            if bool(bad.any()):
                peak = float(diff[~diff.isnan()].max()) if bool((~diff.isnan()).any()) else math.nan
                what = "max |a-b|" if key == "values" else "max |a-b| over a sample"
                return ", ".join(x for x in (dtype, f"{what} = {_fmt(peak)} "
                                             f"(|ref| max {_fmt(float(fa.abs().max()))}, "
                                             f"{int(bad.sum())} of {va.numel()} outside tolerance)") if x)
            if key == "values":
                return dtype or None
    sa, sb = a.get("stats") or {}, b.get("stats") or {}
    for k in ("norm", "sum", "absmax"):
        if k in sa and k in sb and not _close(sa[k], sb[k], Tolerance(tol.atol * 100, tol.rtol * 10)):
            return ", ".join(x for x in (dtype, f"{k} {_fmt(sa[k])} vs {_fmt(sb[k])}") if x)
    if sa.get("nonfinite") != sb.get("nonfinite"):
        return f"non-finite values {sa.get('nonfinite')} vs {sb.get('nonfinite')}"
    return dtype or None


def noise_mask(ga: Any, gb: Any, tol: Tolerance):
    """Elements whose gradient is within the absolute tolerance of zero in either run.

    Adam divides by the gradient's magnitude: where the gradient is pure float noise (the bias of
    a layer followed by BatchNorm gets ~1e-9), a re-associated sum turns into an update that
    differs by up to the learning rate. A real gradient difference is reported at ``grad``
    already, so ``update`` compares the elements with a real gradient only."""
    import torch

    va = ga.get("values") if isinstance(ga, dict) else None
    vb = gb.get("values") if isinstance(gb, dict) else None
    if not (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor)) or va.shape != vb.shape:
        return None
    return (va.double().abs() <= tol.atol) | (vb.double().abs() <= tol.atol)


def compare_rng(a: dict, b: dict) -> Optional[str]:
    """A global RNG the candidate draws from without ever seeding it: the diff's own start-up
    seed makes both runs draw alike, the candidate's own runs do not (nor the reference's, when
    it leaves the RNG unseeded too: a seeding helper both share). Any other difference in seeding
    or use is no divergence by itself (its draws show where they are used)."""
    if b.get("draws") and not b.get("seeded"):
        return ("drawn from but never seeded by the candidate"
                + (", while the reference seeds it" if a.get("seeded") else " (nor by the reference)")
                + ": its draws change from run to run")
    return None


def compare_record(a: Any, b: Any, tol: Tolerance, ignore=None, edges: frozenset = frozenset()
                   ) -> Optional[str]:
    if isinstance(a, dict) and "rng" in a and isinstance(b, dict) and "rng" in b:
        return compare_rng(a["rng"], b["rng"])
    if isinstance(a, dict) and "shape" in a and isinstance(b, dict) and "shape" in b:
        permute = bool(a["shape"]) and a["shape"][0] in edges
        return compare_tensor(a, b, tol, ignore, permute)
    if a == "none" or b == "none":
        if a == b:
            return None
        if a == "none":
            return f"no gradient in the reference; candidate |g| = {_fmt(_norm(b))}"
        return f"no gradient in the candidate (reference |g| = {_fmt(_norm(a))})"
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = []
        for k in a.keys() | b.keys():
            va, vb = a.get(k), b.get(k)
            if isinstance(va, dict) or isinstance(vb, dict):
                sub = compare_record(va, vb, tol)
                if sub:
                    diffs.append(f"{k}: {sub}")
            elif isinstance(va, float) and isinstance(vb, float):
                if not _close(va, vb, tol):
                    diffs.append(f"{k} {_fmt(va)} vs {_fmt(vb)}")
            elif va != vb:
                diffs.append(f"{k} {_short(va)} vs {_short(vb)}")
        return "; ".join(sorted(diffs)) or None
    return None if a == b else f"{_short(a)} vs {_short(b)}"


def _norm(t: Any) -> float:
    return float(((t or {}).get("stats") or {}).get("norm", math.nan)) if isinstance(t, dict) else math.nan


def _short(v: Any) -> str:
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def compare_runs(ref: dict, cand: dict, tol: Tolerance) -> tuple[list[StageResult], Optional[tuple[StageResult, Item]]]:
    """Every stage's result, and the first divergence (stage result, item) in pipeline order:
    step by step, stage by stage."""
    results = {s: StageResult(s) for s in STAGES}
    seen = {s: [False, False] for s in STAGES}
    first: Optional[tuple[StageResult, Item]] = None
    ref_steps, cand_steps = ref.get("steps") or [], cand.get("steps") or []
    for k in range(min(len(ref_steps), len(cand_steps))):
        for stage in STAGES:
            a, b = stage_items(ref_steps[k], stage), stage_items(cand_steps[k], stage)
            if stage == "init" and k > 0:
                continue
            seen[stage][0] |= bool(a)
            seen[stage][1] |= bool(b)
            res = results[stage]
            edges = frozenset(f.get("num_edges") for f in (ref_steps[k].get("graphs") or {}).values()) \
                if stage in ("input", "forward") else frozenset()
            items: list[Item] = []
            for name in [*a, *(n for n in b if n not in a)]:
                if name not in b:
                    items.append(Item(name, "only_reference", "exists in the reference run only", k + 1))
                elif name not in a:
                    items.append(Item(name, "only_candidate", "exists in the candidate run only", k + 1))
                else:
                    res.compared += 1
                    ignore = None
                    if stage == "update":
                        ignore = noise_mask((ref_steps[k].get("grad") or {}).get(name),
                                            (cand_steps[k].get("grad") or {}).get(name), tol)
                    detail = compare_record(a[name], b[name], tol, ignore, edges)
                    if detail:
                        items.append(Item(name, "differs", detail, k + 1))
            structural = stage in STRUCTURAL and a and b
            differs = [i for i in items if i.status == "differs"
                       or (structural and i.status != "differs")]
            if differs and res.step is None:
                res.status, res.step = "differs", k + 1
                res.items = [*differs, *(i for i in items if i not in differs)]
                if first is None:
                    first = (res, differs[0])
            elif res.step is None and items and not res.items:
                res.items = items  # one-sided items only: listed, no divergence
    for stage, (in_ref, in_cand) in seen.items():
        if results[stage].status == "same" and (in_ref != in_cand or not in_ref):
            results[stage].status = "missing"
    return [results[s] for s in STAGES], first


def self_noise(a: dict, b: dict) -> float:
    """The largest absolute difference between two runs of the same command (calibration)."""
    import torch

    worst = 0.0
    for k in range(min(len(a.get("steps") or []), len(b.get("steps") or []))):
        for stage in STAGES:
            x, y = stage_items(a["steps"][k], stage), stage_items(b["steps"][k], stage)
            for name in x.keys() & y.keys():
                for key in ("values", "sample"):
                    va = x[name].get(key) if isinstance(x[name], dict) else None
                    vb = y[name].get(key) if isinstance(y[name], dict) else None
                    if isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) \
                            and va.shape == vb.shape and va.is_floating_point():
                        d = (va.double() - vb.double()).abs()
                        d = d[~d.isnan()]
                        if d.numel():
                            worst = max(worst, float(d.max()))
    return worst
