"""``gm-audit diff --outcome``: how well each run reconstructs its masked entities at the end, and
whether the candidate does it worse than the reference.

The recorder keeps, for the last ``WINDOW_STEPS`` training steps of each run, the target rows of
the masked entities (the rows the model changed before its first submodule saw them) and the
model's reconstruction of them (``auditor/diff/snapshot.py``, ``note_outcome``). Each row is read
as points (``auditor.probe.charts.point_layout``: xyz first, then, for 9 values a point, two more
triples); a triple whose target is a unit vector at every point is a direction. Per entity:

* ``coord_error``: mean distance between its target and reconstructed points (lower is better);
* ``dir_cos``: mean cosine between target and reconstructed directions, per direction triple
  (higher is better);

entities reconstructed with NaN or inf are counted apart (more of them in the candidate is worse,
with no tolerance) and left out of these;

and per run, the spread of the points (mean distance to their centroid), reconstructed against
target: about 1 when the reconstruction has the targets' extent, near 0 when it collapsed to a
point, above 1 when it is scattered wider than the targets.

Verdict. A figure of a run is the mean over its masked entities, and its uncertainty the standard
error of that mean (standard deviation across entities / sqrt(count)): which entities a step
happens to mask is the run-to-run noise that matters here (two runs with the same seed on CPU are
bit-identical, so their own difference measures nothing). The candidate is worse on a figure when
it is worse by more than ``Z`` standard errors of the difference (Welch:
sqrt(se_ref² + se_cand²)), and by more than the run-to-run difference measured when the diff
calibrated (``--calibrate``, automatic on CUDA). ``Z`` = 3: one-sided, a false alarm about 0.1%
per figure for independent entities; the same entity masked at two of the pooled steps makes the
standard error somewhat optimistic, which the margin from 2 to 3 covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from auditor.probe.charts import point_layout

WINDOW_STEPS = 4  # last training steps whose masked entities are pooled
Z = 3.0
UNIT_TOLERANCE = 1e-2  # |‖v‖ - 1| of every target point: the triple is a direction
SAMPLE_ENTITIES = 4  # entities drawn in the report's charts
MIN_ENTITIES = 2  # fewer finite ones: no standard error, no verdict


@dataclass
class Figure:
    """One per-entity figure of one run: its mean and the standard error of the mean."""

    key: str
    label: str
    higher_is_better: bool
    mean: float
    se: float
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "higher_is_better": self.higher_is_better,
                "mean": self.mean, "se": self.se, "count": self.count}


def _mean_se(values: Any) -> tuple[float, float]:
    """Mean and standard error of the mean of at least ``MIN_ENTITIES`` values."""
    return float(values.mean()), float(values.std()) / math.sqrt(values.numel())


def run_outcome(records: list[dict]) -> Optional[dict[str, Any]]:
    """The outcome of one run from its snapshot's ``outcome`` records: ``{"figures", "spread",
    "entities", "nonfinite", "steps", "masked", "layout", "coord_errors", "sample"}``,
    ``{"unreadable": why}`` when the rows do not read as points or too few are finite, or None
    when the run recorded no reconstruction."""
    import torch

    records = [r for r in records if isinstance(r.get("target"), torch.Tensor)
               and isinstance(r.get("predicted"), torch.Tensor) and r["target"].numel()]
    if not records:
        return None
    cols = int(records[-1]["target"].shape[-1])
    records = [r for r in records if r["target"].shape[-1] == cols]
    layout = point_layout(cols)
    if layout is None:
        return {"unreadable": f"the reconstruction has {cols} values per entity, not laid out "
                              "as points (3 or 9 values each, xyz first)"}
    width, per_node = layout
    target = torch.cat([r["target"] for r in records]).reshape(-1, per_node, width)
    predicted = torch.cat([r["predicted"] for r in records]).reshape(-1, per_node, width)
    finite = torch.isfinite(predicted).flatten(1).all(1) & torch.isfinite(target).flatten(1).all(1)
    nonfinite = int((~finite).sum())
    target, predicted = target[finite], predicted[finite]
    if target.shape[0] < MIN_ENTITIES:
        return {"unreadable": f"{target.shape[0]} masked entities with finite values "
                              f"({nonfinite} not finite): too few to judge"}
    xyz = min(width, 3)
    coord_errors = (predicted[..., :xyz] - target[..., :xyz]).norm(dim=-1).mean(-1)
    figures = [Figure("coord_error", "coordinate error (mean point distance)", False,
                      *_mean_se(coord_errors), int(coord_errors.numel()))]
    for start in range(3, width - 2, 3):
        t, p = target[..., start:start + 3], predicted[..., start:start + 3]
        if bool(((t.norm(dim=-1) - 1).abs() < UNIT_TOLERANCE).all()):
            cos = torch.nn.functional.cosine_similarity(p, t, dim=-1).mean(-1)
            figures.append(Figure(f"dir_cos_{start}", f"direction cosine (values {start}-"
                                  f"{start + 2} of each point)", True, *_mean_se(cos),
                                  int(cos.numel())))
    last = records[-1]
    shown = last["target"][:SAMPLE_ENTITIES].reshape(-1, per_node, width)
    shown_pred = last["predicted"][:SAMPLE_ENTITIES].reshape(-1, per_node, width)
    return {
        "figures": [f.to_json() for f in figures],
        "spread": {"target": _spread(target[..., :xyz]),
                   "predicted": _spread(predicted[..., :xyz])},
        "entities": int(coord_errors.numel()),
        "nonfinite": nonfinite,
        "steps": sorted({int(r["step"]) for r in records}),
        "masked": all(bool(r.get("masked")) for r in records),
        "layout": {"values_per_point": width, "points_per_entity": per_node},
        "coord_errors": [round(float(v), 5) for v in coord_errors],
        "sample": {"target": shown[..., :xyz].reshape(-1, xyz).tolist(),
                   "predicted": shown_pred[..., :xyz].reshape(-1, xyz).tolist(),
                   "node": [i for i in range(shown.shape[0]) for _ in range(per_node)]},
    }


def _spread(points: Any) -> float:
    """Mean distance of the points to their centroid."""
    flat = points.reshape(-1, points.shape[-1])
    return float((flat - flat.mean(0)).norm(dim=-1).mean())


def compare_outcomes(ref: dict[str, Any], cand: dict[str, Any],
                     run_to_run: Optional[dict[str, float]] = None) -> dict[str, Any]:
    """Figure by figure: the change (positive: the candidate is worse), the tolerance, and
    ``worse`` | ``better`` | ``same``; the verdict ``worse`` when any figure is worse, ``better``
    when none is and one is better, else ``same``. ``run_to_run``: key -> the largest difference
    of that figure between two runs of one command (calibration)."""
    theirs = {f["key"]: f for f in cand["figures"]}
    rows = []
    for a in ref["figures"]:
        b = theirs.get(a["key"])
        if b is None:
            continue
        sign = -1.0 if a["higher_is_better"] else 1.0
        change = sign * (b["mean"] - a["mean"]) + 0.0  # + 0.0: no "-0" when they are equal
        se = math.hypot(a["se"], b["se"])
        floor = (run_to_run or {}).get(a["key"], 0.0)
        tolerance = max(Z * se, floor)
        status = ("worse" if change > tolerance else "better" if -change > tolerance else "same")
        rows.append({"key": a["key"], "label": a["label"], "reference": a["mean"],
                     "candidate": b["mean"], "reference_se": a["se"], "candidate_se": b["se"],
                     "change": change, "tolerance": tolerance, "status": status})
    if ref["nonfinite"] or cand["nonfinite"]:
        # a finite reconstruction does not turn non-finite by chance: no tolerance
        change = cand["nonfinite"] - ref["nonfinite"]
        rows.append({"key": "nonfinite", "label": "masked entities reconstructed with NaN/inf "
                     "(left out of the other figures)", "reference": ref["nonfinite"],
                     "candidate": cand["nonfinite"], "reference_se": 0.0, "candidate_se": 0.0,
                     "change": change, "tolerance": 0.0,
                     "status": "worse" if change > 0 else "better" if change < 0 else "same"})
    statuses = {r["status"] for r in rows}
    verdict = "worse" if "worse" in statuses else "better" if "better" in statuses else "same"
    return {"rows": rows, "verdict": verdict, "z": Z}


def self_difference(first: dict[str, Any], again: dict[str, Any]) -> dict[str, float]:
    """key -> |difference| of each figure between two runs of the same command."""
    other = {f["key"]: f["mean"] for f in again.get("figures") or []}
    return {f["key"]: abs(f["mean"] - other[f["key"]]) for f in first.get("figures") or []
            if f["key"] in other}


def verdict_line(comparison: dict[str, Any]) -> str:
    """One sentence for the verdict, naming the figures that decided it."""
    rows = comparison["rows"]
    decided = [r for r in rows if r["status"] == comparison["verdict"]]
    listed = "; ".join(f"{r['label']} {r['candidate']:.3g} vs {r['reference']:.3g} "
                       f"(beyond the tolerance {r['tolerance']:.2g})" for r in decided)
    if comparison["verdict"] == "worse":
        return f"worse — the candidate reconstructs its masked entities worse: {listed}"
    if comparison["verdict"] == "better":
        return f"better — the candidate reconstructs its masked entities better: {listed}"
    return ("no difference in outcome — every figure is within "
            f"{comparison['z']:g} standard errors of the spread across masked entities")
