"""Which recorded event of the candidate run explains the first divergence: rule, file, line.

Per stage, the probe's evidence (``auditor/probe/evidence.py``) of both runs is searched for an
event the candidate has and the reference has not:

=========  ==========================================================================
init       ``load_state_dict`` before the first backward (GM601); parameters of another dtype
           (GM301); otherwise differently seeded or consumed RNGs (GM603)
input      ``add_self_loop`` making nodes carry several self loops (GM501); other graphs after a
           seed only the candidate makes (GM603: the loader drew other samples); features that
           differ (GM502 normalisation, GM503 augmentation: at a user collate function the
           reference does not use); masks that differ, a global RNG drawn from and never
           seeded where the reference seeds it (GM603)
mode       ``.eval()`` / ``.train(False)`` before the step (GM201)
forward    an autocast region (GM301)
loss       a loss call with ``reduction='sum'`` (GM401); a low-precision loss (GM301); other
           weights or terms (GM402)
grad       frozen parameters (GM103); a user ``.detach()``/``.data`` (GM101); a
           ``no_grad``/``set_grad_enabled``/``inference_mode`` region (GM102); gradients of
           several steps accumulated without ``zero_grad``, or held before a backward (GM104)
update     BatchNorm running statistics moved by a forward in training mode the reference does not
           run (an extra forward between steps), or reset (GM202); trained parameters in no
           optimizer, or an optimizer over other ones (GM105)
=========  ==========================================================================

Where the recorder kept the user call stack of the cause (``auditor/probe/causes.py``), the reason
names the chain: the ``.eval()`` inside a validation helper and the calls that led to it.

The location is then refined with the static pass: a static finding of the chosen rule whose
lines ran in the candidate (and not in the reference) names the offending call itself (the
decorator of a ``no_grad`` function, the ``requires_grad = False`` assignment, the ``deepcopy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from auditor.diff.compare import GRAPH_INTO, MASK_PREFIX, RNG_PREFIX, STALE_SUFFIX, Item
from auditor.findings import Finding
from auditor.probe.causes import chain, frozen_cause, optimizer_cause
from auditor.probe.evidence import CallRecord, Evidence


@dataclass
class Cause:
    rule: Optional[str]
    path: str = ""
    line: int = 0
    why: str = ""


def _first_user(records: Sequence, before_step: Optional[int] = None) -> Optional[CallRecord]:
    """The latest recorded call that ran before step ``before_step`` completed."""
    picked = None
    for r in records:
        steps = getattr(r, "steps", None) or [getattr(r, "step", 0)]
        if before_step is None or min(steps) < before_step:
            picked = r
    return picked


def _chain(r: CallRecord) -> str:
    return chain({"path": r.path, "line": r.line, "stack": r.stack})


def _sites(ev: Evidence, kind: str) -> set[tuple[str, int]]:
    return {(r.path, r.line) for r in ev.calls(kind)}


def _new_calls(ref: Evidence, cand: Evidence, kinds: Sequence[str]) -> list[CallRecord]:
    """Calls of ``kinds`` in the candidate at sites the reference never used, or more often."""
    out = []
    for kind in kinds:
        ref_counts = {(r.path, r.line): r.count for r in ref.calls(kind)}
        ref_total = sum(ref_counts.values())
        cand_total = sum(r.count for r in cand.calls(kind))
        for r in cand.calls(kind):
            if (r.path, r.line) not in ref_counts and cand_total > ref_total:
                out.append(r)
    return out


def explain(stage: str, item: Item, ref: Evidence, cand: Evidence, ref_snap: dict,
            cand_snap: dict) -> Cause:
    step = item.step
    detail = item.detail
    if stage == "init":
        loads = [x for x in cand.loads if x.kind == "load_state_dict" and (x.step == 0 or x.before_training)]
        ref_loads = {(x.path, x.line) for x in ref.loads if x.kind == "load_state_dict"}
        loads = [x for x in loads if (x.path, x.line) not in ref_loads] or loads
        if loads:
            x = loads[-1]
            return Cause("GM601", x.path, x.line,
                         f"load_state_dict(strict={x.strict}) into {x.module or 'the model'} "
                         "before the first forward")
        if "dtype" in detail:
            return Cause("GM301", why="the model's parameters have another dtype")
        return Cause("GM603", why="the runs initialise differently: an RNG seeded or consumed "
                                  "differently before the model was built")
    if stage == "input":
        if item.name.startswith(GRAPH_INTO):
            for r in _new_calls(ref, cand, ("add_self_loop",)):
                return Cause("GM501", r.path, r.line, f"dgl.add_self_loop at {_chain(r)} on a "
                                                      "graph that already has self loops")
            calls = cand.calls("add_self_loop")
            if "self_loops" in detail and calls and "num_nodes" not in detail:
                r = calls[-1]
                return Cause("GM501", r.path, r.line, f"dgl.add_self_loop at {_chain(r)}")
            if "num_nodes" in detail:
                # other graphs altogether: the loader drew other samples, after a seed that only
                # the candidate makes (a re-seed once training started)
                for r in _new_calls(ref, cand, ("seed",)):
                    return Cause("GM603", r.path, r.line, f"{r.arg('fn')} at {_chain(r)} seeds an "
                                 "RNG the reference does not: the loader draws other batches")
            return Cause(None, why="the graphs entering the model differ")
        if item.name.startswith(MASK_PREFIX):
            return Cause("GM603", why="the masks differ: the RNG is seeded or consumed differently")
        if item.name.startswith(RNG_PREFIX):
            return _unseeded_cause(item.name[len(RNG_PREFIX):], ref, cand)
        ref_collates = _sites(ref, "collate")
        for r in (r for r in cand.calls("collate") if (r.path, r.line) not in ref_collates):
            return Cause("GM502", r.path, r.line, f"the batches pass through {r.arg('fn')} "
                                                  f"({r.path}:{r.line}), which the reference does "
                                                  "not use: it changes what the model receives")
        return Cause("GM502", why="the node features differ: normalisation (GM502) or "
                                  "augmentation (GM503)")
    if stage == "mode":
        s = next((x for x in cand.steps if x.index == step and x.mode_cause), None)
        if s is not None:
            return Cause("GM201", s.mode_cause["path"], s.mode_cause["line"],
                         f".eval() at {chain(s.mode_cause)} before the training step")
        evals = [r for r in cand.calls("eval") if r.arg("is_root") is not False]
        evals += [r for r in cand.calls("train") if r.arg("mode") is False]
        r = _first_user(evals, step)
        if r is not None:
            return Cause("GM201", r.path, r.line, f".eval() at {_chain(r)} before the training step")
        return Cause("GM201", why="modules in eval mode at the training forward")
    if stage == "forward":
        calls = [r for r in _new_calls(ref, cand, ("autocast",)) if r.arg("enabled", True)]
        if calls:
            return Cause("GM301", calls[0].path, calls[0].line, "autocast region")
        return Cause(None, why="the modules compute differently from equal inputs")
    if stage == "loss":
        ref_sums = {(x.fn, x.reduction) for x in ref.losses}
        for x in cand.losses:
            if x.reduction == "sum" and (x.fn, "sum") not in ref_sums:
                return Cause("GM401", x.path, x.line, f"{x.fn}(reduction='sum')")
        if "dtype" in detail:
            return Cause("GM301", why="the loss is computed in low precision")
        return Cause("GM402", why="loss weights or terms differ")
    if stage == "grad":
        cand_steps = cand.steps
        s = next((x for x in cand_steps if x.index == step), None)
        param = item.name
        if s is not None and param in s.params_frozen:
            frozen = frozen_cause(s, [param])
            if frozen is not None:
                return Cause("GM103", frozen["path"], frozen["line"],
                             f"requires_grad=False at {chain(frozen)}")
            for r in cand.calls("requires_grad_"):
                if r.arg("flag") is False:
                    return Cause("GM103", r.path, r.line, "requires_grad_(False)")
            return Cause("GM103", why=f"{param} has requires_grad=False")
        if "no gradient in the candidate" in detail:
            for c, rule in ((s and s.grad_off_cause, "GM102"), (s and s.cut_cause, "GM101")):
                if c:
                    return Cause(rule, c["path"], c["line"], f"gradients cut at {chain(c)}")
            detaches = [r for r in cand.calls("detach") + cand.calls("data")
                        if r.arg("requires_grad") and r.arg("grad_fn")]
            ref_sites = _sites(ref, "detach") | _sites(ref, "data")
            detaches = [r for r in detaches if (r.path, r.line) not in ref_sites] or detaches
            r = _first_user(detaches, step)
            if r is not None:
                return Cause("GM101", r.path, r.line, f".{r.kind}() at {_chain(r)} of a tensor on "
                                                      "the loss path")
            blocks = [r for r in _new_calls(ref, cand, ("no_grad", "inference_mode", "set_grad_enabled"))
                      if r.kind == "no_grad" or r.arg("mode") is False or r.kind == "inference_mode"]
            r = _first_user(blocks, step)
            if r is not None:
                return Cause("GM102", r.path, r.line, f"{r.kind} region at {_chain(r)} in the "
                                                      "training forward")
            return Cause("GM101", why="the loss's autograd graph does not reach these parameters")
        stale = item.name.endswith(STALE_SUFFIX)
        if stale or (step > 1 and s is not None and s.zero_grad_calls == 0):
            clears = [r for r in cand.calls("zero_grad") if max(r.steps or [0]) < step - 1]
            if clears:  # the last zero_grad ran before the steps that accumulate
                r = clears[-1]
                return Cause("GM104", r.path, r.line, f"zero_grad() at {_chain(r)} last ran "
                                                      f"before step {max(r.steps or [0]) + 1}, "
                                                      "not in every step: gradients accumulate")
            if s is None:
                return Cause("GM104", why="gradients of an earlier step are still held when the "
                                          "backward starts: gradients accumulate")
            return Cause("GM104", s.path, s.line, "no zero_grad() since the previous step: "
                                                  "gradients accumulate")
        return Cause(None, why="the gradients differ")
    if stage == "update":
        if item.name.rsplit(".", 1)[-1] in ("running_mean", "running_var", "num_batches_tracked"):
            return _batchnorm_cause(ref, cand, step)
        for o in cand.optimizers:
            if o.missing_model_params or o.foreign_params:
                built, why = optimizer_cause(o)
                if built is not None:
                    return Cause("GM105", built["path"], built["line"], f"{why}: {chain(built)}")
                return Cause("GM105", o.path, o.line, "the optimizer does not hold the trained "
                                                      "model's parameters")
        return Cause(None, why="the optimizer updates differ")
    return Cause(None)


def _unseeded_cause(rng: str, ref: Evidence, cand: Evidence) -> Cause:
    """A global RNG the candidate draws from and never seeds: at the candidate's first seeding
    call (where it seeds the others and leaves this one out), else where the reference seeds
    it."""
    why = (f"{rng}'s global RNG is drawn from in training but never seeded by the candidate "
           f"({'the reference seeds it' if rng in ref.seeded_rngs else 'nor by the reference'}): "
           "its runs are not reproducible")
    site = cand.seeding_site() or next((x for x in ref.seeds if x.path and x.rng == rng), None)
    if site is not None:
        return Cause("GM603", site.path, site.line, why)
    return Cause("GM603", why=why)


def _batchnorm_cause(ref: Evidence, cand: Evidence, step: int) -> Cause:
    """Running statistics that differ after the step: a forward in training mode the reference
    does not run (a monitoring forward between steps moves them too, under no_grad as well), else
    a reset of them, else whatever the static pass finds."""
    extra = [r for r in _new_calls(ref, cand, ("forward",)) if r.arg("training")]
    r = _first_user(extra, step + 1)
    if r is not None:
        return Cause("GM202", r.path, r.line, f"a forward in training mode at {_chain(r)} that the "
                                              "reference does not run moves the BatchNorm "
                                              "running statistics")
    resets = [e for e in cand.batchnorm if e.kind == "reset" and e.path and e.step < step + 1]
    if resets:
        e = resets[0]
        return Cause("GM202", e.path, e.line, f"BatchNorm running statistics of {e.module} reset")
    return Cause("GM202", why="BatchNorm running statistics updated differently")


def refine(cause: Cause, static: Sequence[Finding], ref: Evidence, cand: Evidence) -> Cause:
    """The static finding of the same rule that ran in the candidate only, when there is one."""
    if cause.rule is None:
        return cause
    rules = ("GM502", "GM503") if cause.rule in ("GM502", "GM503") else (cause.rule,)
    ran = [f for f in static if f.rule in rules
           and cand.ran(f.path, f.line, f.end_line) and not ref.ran(f.path, f.line, f.end_line)]
    if not ran:
        return cause
    if cause.path:
        same = [f for f in ran if f.path == cause.path and f.line == cause.line]
        if same:
            return cause
        near = [f for f in ran if f.path == cause.path]
        ran = near or ran
    f = ran[0]
    return Cause(f.rule, f.path, f.line, cause.why or f.message)
