"""The chart data of a probe run, in the JSON shapes ``auditor.reports.html_report`` draws:
gradients per parameter at the last backward, and the reconstruction of a few masked nodes read
as points."""

from __future__ import annotations

import math
from typing import Any, Optional

from auditor.probe.evidence import Evidence
from auditor.probe.verdicts import last_backward

POINT_DIM = 9  # a CAD point: xyz, unit tangent, unit normal (the GraphMAE layout of the fixtures)
# A reconstruction sampled before this many training steps says nothing about the pipeline: on
# the bundled fixture a correct pipeline's masked-entity coordinate error (in units of the
# coordinates' standard deviation) is 1.5 after 8 steps, when the targets' own spread is 1.7,
# still scattered, then 0.86 after 32 (one epoch), 0.64 after 256 (`gm-audit diff --outcome`)
MIN_STEPS_TO_JUDGE = 32


def parameter_gradients(evidence: Evidence) -> list[dict[str, Any]]:
    """``[{"name", "norm", "state"}]`` in ``named_parameters()`` order at the last backward;
    ``unreached`` marks parameters the forward used but the loss's graph does not reach."""
    step = last_backward(evidence)
    if step is None:
        return []
    unreached = set(step.params_unreached)
    return [{"name": name, "norm": g.norm, "state": g.state, "step": step.index,
             "unreached": name in unreached} for name, g in step.grads.items()]


def point_layout(cols: int) -> Optional[tuple[int, int]]:
    """(values per point, points per node) for a feature row of ``cols`` values, or None when
    the row cannot be read as points with xyz first."""
    for width in (POINT_DIM, 3):
        if cols % width == 0:
            return width, cols // width
    return (cols, 1) if cols == 2 else None


def reconstruction_view(evidence: Evidence) -> Optional[dict[str, Any]]:
    """The recorder's sample as ``{"target", "predicted", "node"}`` points (xyz of each point of
    each sampled node), or ``{"unreadable": reason}`` when the run gave none that reads as
    points; None when the run had no training forward with feature inputs at all."""
    sample = evidence.reconstruction
    if sample is None:
        return None
    where = f"input `{sample.get('input')}` ({sample.get('cols')} values per node)"
    if not sample.get("module"):
        return {"unreadable": f"no direct submodule of the model returned one row per node of "
                              f"{where}, so the probe found no reconstruction to plot"}
    layout = point_layout(int(sample.get("cols") or 0))
    if layout is None:
        return {"unreadable": f"the output of `{sample['module']}` for {where} is not laid out "
                              f"as points (3 or {POINT_DIM} values each, xyz first)"}
    width, per_node = layout
    target, predicted, node = [], [], []
    for n, t, p in zip(sample.get("nodes") or [], sample.get("target") or [],
                       sample.get("predicted") or []):
        for k in range(per_node):
            target.append(t[k * width:k * width + min(width, 3)])
            predicted.append(p[k * width:k * width + min(width, 3)])
            node.append(n)
    return {"target": target, "predicted": predicted, "node": node, "step": sample.get("step"),
            "module": sample["module"], "masked": bool(sample.get("masked")),
            "masked_count": sample.get("masked_count", 0),
            "too_short": too_short(evidence, sample.get("step"))}


def point_error(target: list, predicted: list) -> tuple[float, float]:
    """Mean distance between each target point and its reconstruction, and the targets' spread
    (mean distance to their centroid) to judge it by."""
    dim = len(target[0])
    dist = [math.dist(t, p) for t, p in zip(target, predicted)]
    centre = [sum(t[d] for t in target) / len(target) for d in range(dim)]
    spread = [math.dist(t, centre) for t in target]
    return sum(dist) / len(dist), sum(spread) / len(spread)


def too_short(evidence: Evidence, sampled: Any) -> Optional[dict[str, Any]]:
    """When the sample was taken before ``MIN_STEPS_TO_JUDGE`` training steps: ``{"steps"``
    (training steps before the sampled forward), ``"minimum"``, ``"loss_first"``,
    ``"loss_last"}`` (the loss at the first and last recorded backward, to show how far it got);
    None when the run was long enough."""
    if not isinstance(sampled, int) or sampled >= MIN_STEPS_TO_JUDGE:
        return None
    losses = [s.loss_value for s in evidence.steps if s.loss_value is not None]
    return {"steps": sampled, "minimum": MIN_STEPS_TO_JUDGE,
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None}


def too_short_text(facts: dict[str, Any]) -> str:
    """The sentence the reports show for :func:`too_short`."""
    first, last = facts.get("loss_first"), facts.get("loss_last")
    loss = (f"; the loss went from {first:.3g} to {last:.3g}"
            if isinstance(first, (int, float)) and isinstance(last, (int, float)) else "")
    return (f"too short to judge: sampled after {facts['steps']} training step(s), fewer than "
            f"{facts['minimum']}; this early a correct pipeline's reconstruction looks scattered "
            f"too{loss}. Ask for `--steps {facts['minimum'] + 1}` or more, or compare the outcome "
            "with a reference: `gm-audit diff --outcome REF_CMD CMD`")
