"""From evidence to statuses: each static finding decided, plus the findings of the run alone.

Static findings: a finding in a module the run never imported is ``outside``; one whose line
never ran and that this run would not reach (its callers' files never imported, a branch decided
false for the run: ``hooks/branches.py``) is ``untaken``; a finding whose
line never ran is never ``refuted`` (``unexercised`` instead); otherwise the rule's
``confirm(finding, evidence)`` decides when it returns a Verdict; a finding whose lines never ran
is ``unexercised``; a finding whose line ran but whose
rule has no opinion stays ``static`` with a note that it ran.

Runtime-only findings (status ``runtime``) are located at their cause site when the recorder
saw it (``auditor/probe/causes.py``), with the chain of calls that led there; the backward or
step that showed the effect is evidence. A static finding of the same rule at the cause site
becomes ``confirmed`` instead. Catalogue codes where one fits:

=========  ==============================================================================
GM101      parameters used in the forward that the loss's autograd graph never reaches: at
           the ``.detach()``/``.data`` whose input reaches them (else the backward)
GM102      ... because the forward, or part of it, ran with gradients disabled: at the
           ``no_grad``/``inference_mode``/``set_grad_enabled(False)`` in force
GM103      ... because they have ``requires_grad=False`` while an optimizer holds them: at the
           ``requires_grad_(False)`` / ``requires_grad = False``. Not reported: frozen
           parameters no optimizer holds or whose values move without gradient (EMA teachers,
           targets), and parameters of container modules this configuration leaves unused
GM104      gradients accumulating: set when a backward starts, with an optimizer step and no
           ``zero_grad`` since the previous one
GM105      trained parameters in no optimizer param group (at the model's construction when it
           came after the optimizer's, else at the optimizer's); optimizer over foreign
           parameters; parameters that got gradients but never changed across the steps
GM106      a variable, attribute or container holding the autograd graph of every step: at
           the statement that grows it (``total += loss``, ``self.history.append(loss)``)
GM201      the model or its Dropout/BatchNorm submodules in eval mode at a training backward:
           at the ``.eval()``/``.train(False)`` that left them so
GM202      BatchNorm running statistics moved by a train-mode forward with gradients off (a
           warm-up or extra forward outside the training step): at the call that made it (the
           first user frame outside the model's own methods)
GM301      the backpropagated loss in float16/bfloat16 (at the model's cast when there was
           one); fp16 autocast without a GradScaler; parameters an optimizer steps in
           float16/bfloat16 (no float32 master copy); a loss fed a low-precision prediction
GM401      a sum (``.sum()``, ``reduction='sum'``) over the nodes in the backpropagated loss,
           not divided by their count: at the sum (an ``nn`` loss module's construction)
GM402      parameters the loss reaches that get exactly zero gradient at every step
GM302      DistributedDataParallel built without a process group or in a world of size 1
GM501      nodes carrying more than one self loop: at the ``add_self_loop`` that made them
GM601      a ``load_state_dict(strict=False)`` that skipped keys of modules it partly loaded
GM603      in a run that seeds a global RNG: a draw from DGL's generator, never seeded (at the
           user call that drew); ``np.random.default_rng()`` built without a seed in user code
=========  ==============================================================================

and four codes of the probe's own, outside the static catalogue (no static check; listed in
``auditor.registry.RUNTIME_CHECKS``, selected and ignored like rules):

=========  ==============================================================================
GM701      non-finite loss or gradients (names the first module whose output went non-finite)
GM702      the prediction collapsed to a near-constant (std across nodes << the target's)
GM703      predicted direction vectors (normals, tangents) far from unit length before
           normalisation: a scale-free loss (SCE/cosine) lets them drift while the loss falls
GM704      prediction scale far from the target's scale under a scale-sensitive loss
=========  ==============================================================================

A runtime finding is not added when a static finding of the same rule was confirmed: that one
already carries the evidence.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional, Sequence

from auditor.findings import Finding, Severity, Status
from auditor.probe.causes import chain, frozen_cause, optimizer_cause
from auditor.probe.evidence import Evidence, StepFacts
from auditor.registry import RUNTIME_CHECKS
from auditor.rule import Rule, Verdict

# the catalogue codes the probe raises by itself (the table above; the probe's own GM7xx are
# RUNTIME_CHECKS): a defect of another rule shows only through its static finding's verdict
RAISES = frozenset({"GM101", "GM102", "GM103", "GM104", "GM105", "GM106", "GM201", "GM202",
                    "GM301", "GM302", "GM401", "GM402", "GM501", "GM601", "GM603"})

COLLAPSE_RATIO = 1e-3
SCALE_RATIO = 10.0
UNIT_TOLERANCE = 0.5  # |mean norm - 1| above this: "far from unit length"


def _names(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def decide(findings: Iterable[Finding], evidence: Evidence, rules: dict[str, type[Rule]],
           notes: list[str]) -> list[Finding]:
    """Statuses and evidence of the static findings (in place, returned)."""
    out = []
    steps = evidence.total_steps
    for f in findings:
        rule = rules.get(f.rule)
        verdict: Optional[Verdict] = None
        if rule is not None and evidence:
            try:
                verdict = rule.confirm(f, evidence)
            except Exception as exc:  # a rule's bug must not sink the probe
                notes.append(f"{f.rule} confirm failed on {f.path}:{f.line}: "
                             f"{type(exc).__name__}: {exc}")
        ran = f.in_configuration or evidence.ran(f.path, f.line, f.end_line)
        if evidence and not ran and evidence.outside(f.path):
            f.status = Status.OUTSIDE
            f.evidence = [*f.evidence, "this run never imported the module: outside what the "
                                       "probe can decide"]
        elif evidence and not ran and (why := evidence.untaken(f.path, f.line)):
            f.status = Status.UNTAKEN
            f.evidence = [*f.evidence, f"line never ran, and this run would not reach it: {why}"]
        elif verdict is not None and not ran and verdict.status == Status.REFUTED:
            # whatever happened elsewhere, a line that never ran is not shown benign
            f.status = Status.UNEXERCISED
            f.evidence = [*f.evidence, f"line never ran during the probe ({steps} step(s)); "
                                       f"{'; '.join(verdict.evidence)}"]
        elif verdict is not None:
            f.status = verdict.status
            f.evidence = [*f.evidence, *verdict.evidence]
        elif not ran:
            f.status = Status.UNEXERCISED
            f.evidence = [*f.evidence, f"line never ran during the probe ({steps} step(s))"]
        else:
            seen = "a configuration value the run reads" if f.in_configuration else \
                f"line ran {evidence.hits(f.path, f.line, f.end_line)} time(s)"
            f.evidence = [*f.evidence, f"{seen}; this run does not show {f.rule}'s effect"]
        out.append(f)
    return out


def _finding(code: str, name: str, severity: Severity, path: str, line: int, message: str,
             fix: str, evidence: list[str]) -> Finding:
    return Finding(rule=code, name=name, severity=severity, path=path or "<unknown>",
                   line=max(line, 1), column=1, end_line=max(line, 1), end_column=1,
                   message=message, fix=fix, status=Status.RUNTIME, evidence=evidence)


def runtime_findings(evidence: Evidence, static: Sequence[Finding],
                     rules: dict[str, type[Rule]],
                     checks: Optional[set[str]] = None) -> list[Finding]:
    """Problems the run shows by itself; ``checks``: the probe-only codes selected (default all)."""
    checks = set(RUNTIME_CHECKS) if checks is None else checks
    confirmed = {f.rule for f in static if f.status == Status.CONFIRMED}
    found: list[Finding] = []

    def add(code: str, path: str, line: int, message: str, fix: str, ev: list[str]) -> None:
        assert code in RAISES or code in RUNTIME_CHECKS, code  # RAISES lists what runs here
        at_site = [f for f in static if f.rule == code and f.path == path
                   and f.line <= line <= max(f.end_line, f.line)]
        for f in at_site:  # confirmed by its rule or not: the cause chain is its evidence too
            f.status = Status.CONFIRMED
            f.evidence += [e for e in (f"the probe found it here: {message}", *ev)
                           if e not in f.evidence]
        if at_site:
            confirmed.add(code)
            return
        if code in confirmed:
            return
        if code in checks:
            name, severity, _ = RUNTIME_CHECKS[code]
        elif code in rules:
            name, severity = rules[code].name, rules[code].severity
        else:
            return  # a catalogue rule that is not selected
        if any(f.rule == code and f.path == path and f.line == max(line, 1) for f in found):
            return
        found.append(_finding(code, name, severity, path, line, message, fix, ev))

    steps = [s for s in evidence.steps if s.kind == "backward"]
    _blocked_gradients(evidence, steps, add)
    _modes(evidence, steps, add)
    _batchnorm_outside_steps(evidence, add)
    if not _precision(evidence, steps, add):
        _low_precision_predictions(evidence, add)  # the same defect, seen at the loss call
    _accumulating(evidence, steps, add)
    _held_graphs(evidence, add)
    _sum_reductions(evidence, add)
    _zero_gradients(evidence, add)
    _nonfinite(steps, add)
    _optimizers(evidence, steps, add)
    _ddp(evidence, add)
    _graphs(evidence, add)
    _partial_loads(evidence, add)
    _outputs(evidence, add)
    _unseeded_draws(evidence, add)
    return found


def _unseeded_draws(evidence: Evidence, add) -> None:
    """Draws whose call the recorder saw, in a run that seeded some global RNG (GM603): DGL's
    generator never seeded (at the run's seeding, which leaves it out), and numpy generators
    built from OS entropy (``np.random.default_rng()``) where user code built them."""
    seeded = evidence.seeded_rngs
    if not seeded:
        return  # a run that seeds nothing does not mean to be reproducible
    them = ", ".join(sorted(seeded))
    if "dgl" not in seeded:
        draws = sorted((c for c in evidence.calls("rng_draw") if c.arg("rng") == "dgl"),
                       key=lambda c: (c.path, c.line))
        home = evidence.seeding_site()  # where the run seeds the others: the missing seed belongs there
        if draws and home is not None:
            first = draws[0]
            add("GM603", home.path, home.line,
                f"DGL's random generator is drawn from ({sum(c.count for c in draws)}x, first at "
                f"{first.path}:{first.line}) and never seeded, while the run seeds {them} here",
                "seed it with the others: `dgl.seed(seed)`",
                [f"draw from DGL's generator at {chain({'stack': c.stack})}" for c in draws[:3]])
    for c in evidence.calls("fresh_rng"):
        add("GM603", c.path, c.line,
            f"`np.random.default_rng()` built here without a seed ({c.count}x): fresh OS entropy "
            f"that no seed reaches, while the run seeds {them}",
            "pass a seed: `np.random.default_rng(seed)`",
            [f"built at {chain({'stack': c.stack})}"])


def _partial_loads(evidence: Evidence, add) -> None:
    """A ``load_state_dict(strict=False)`` that left keys of partly loaded modules at their
    initial values (GM601), at the load. Whole modules missing (a new head a fine-tuning load
    leaves out) are the intended use of ``strict=False`` and are not reported."""
    for f in evidence.loads:
        if f.kind == "load_state_dict" and f.strict is False and f.partial:
            add("GM601", f.path, f.line,
                f"load_state_dict(strict=False) into {f.module or 'the model'} skipped "
                f"{len(f.partial)} keys of modules whose other keys it loaded: they keep their "
                f"initial values",
                "load a complete checkpoint with strict=True, or name the keys you mean to skip",
                [f"missing: {_names(f.partial)}"])


def _when(evidence: Evidence, cause: dict, kind: Optional[str]) -> str:
    """How often the call at a cause site ran, and after which steps."""
    calls = evidence.calls_at(cause.get("path", ""), cause.get("line", 0), kind)
    count = sum(c.count for c in calls)
    tags = sorted({t for c in calls for t in c.steps})
    if not count:
        return ""
    shown = ", ".join(str(t) for t in tags[:6]) + (", ..." if len(tags) > 6 else "")
    gaps = {b - a for a, b in zip(tags, tags[1:])}
    every = f" (every {gaps.pop()} steps)" if len(gaps) == 1 and len(tags) > 1 else ""
    return f"ran {count} time(s), after step(s) {shown}{every}"


def _cause_evidence(evidence: Evidence, cause: dict, kind: Optional[str], what: str) -> list[str]:
    when = _when(evidence, cause, kind)
    return [f"{what} at {chain(cause)}" + (f"; {when}" if when else "")]


def _blocked_gradients(evidence: Evidence, steps: list[StepFacts], add) -> None:
    """Parameters used in the forward that the loss does not reach, told apart by cause: the
    forward (or part of it) under no_grad (GM102); parameters frozen that an optimizer holds
    (GM103: meant to be trained); a .detach()/.data on the way to the loss (GM101). Frozen
    parameters that no optimizer holds (an EMA teacher, a fixed target) and parameters of
    container modules that this configuration leaves unused are not errors."""
    optimized_frozen = {n for o in evidence.optimizers for n in o.frozen_in_groups}
    for s in steps:
        unreached = evidence.blocked(s)
        if not unreached:
            continue
        frozen = set(s.params_frozen)
        backward = f"step {s.index}: backward at {s.path}:{s.line}"
        if s.grad_off_cause or (s.grad_enabled_at_forward is False and not s.params_reached):
            cause = s.grad_off_cause or {"path": s.path, "line": s.line}
            add("GM102", cause["path"], cause.get("at") or cause["line"],
                f"{len(unreached)} of {len(s.params_used)} parameters of {s.model or 'the model'} "
                f"used in the forward get no gradient: the forward ran with gradients disabled",
                "run the training forward outside torch.no_grad()/inference_mode()",
                [*(_cause_evidence(evidence, cause, None, "gradients switched off")
                   if s.grad_off_cause else []),
                 f"{backward}: not reachable from the loss: {_names(unreached)}"])
            return
        meant = [p for p in unreached if p in frozen and p in optimized_frozen]
        if meant:
            cause = frozen_cause(s, meant) or {"path": s.path, "line": s.line}
            add("GM103", cause["path"], cause["line"],
                f"{len(meant)} parameters of {s.model or 'the model'} that the optimizer holds "
                f"have requires_grad=False",
                "leave requires_grad=True on parameters that the pipeline trains",
                [*(_cause_evidence(evidence, cause, None, "frozen")
                   if cause.get("stack") else []),
                 f"{backward}: no gradient for {_names(meant)}"])
            return
        cut = s.cut_cause
        live = [p for p in unreached if p not in frozen and p not in set(s.params_in_containers)]
        if cut and cut.get("params"):
            add("GM101", cut["path"], cut["line"],
                f"`.{cut.get('kind', 'detach')}` cuts {len(cut['params'])} parameters of "
                f"{s.model or 'the model'} off the loss",
                "remove the .detach()/.data on the path from these parameters to the loss",
                [*_cause_evidence(evidence, cut, cut.get("kind", "detach"), "the cut"),
                 f"{backward}: not reachable from the loss: {_names(cut['params'])}"])
            return
        if live:
            add("GM101", s.path, s.line,
                f"{len(live)} of {len(s.params_used)} parameters of {s.model or 'the model'} used "
                f"in the forward get no gradient from this backward: the autograd graph is cut "
                f"between them and the loss",
                "remove the .detach()/.data/no_grad on the path from these parameters to the loss",
                [f"{backward}: not reachable from the loss: {_names(live)}"])
            return


def _modes(evidence: Evidence, steps: list[StepFacts], add) -> None:
    for s in steps:
        off = s.eval_modules_at_backward
        if off:
            who = ["the model" if m == "" else m for m in off]
            cause = s.mode_cause or {"path": s.path, "line": s.line}
            ev = [f"step {s.index}: the backward at {s.path}:{s.line} ran with training=False "
                  f"for {_names(who)}"]
            if s.mode_cause:
                ev = [*_cause_evidence(evidence, cause, "eval", "`.eval()`"), *ev]
            add("GM201", cause["path"], cause["line"],
                f"training backward ran with {_names(who)} in eval mode",
                "call model.train() before the training loop (and after any evaluation)", ev)
            return


def _batchnorm_outside_steps(evidence: Evidence, add) -> None:
    """A forward in train mode with gradients off (a warm-up pass, an extra forward between
    steps) that moved BatchNorm running statistics: GM202 at the call that made it. The step's
    own forward swallowed by no_grad is GM102's, not an extra forward."""
    own = {(s.pid, f) for s in evidence.steps for f in s.training_forwards}
    for e in evidence.batchnorm:
        if e.kind == "outside_step" and e.path and (e.pid, e.forward) not in own:
            add("GM202", e.path, e.line,
                f"a forward in train mode outside the training step (gradients off) updated the "
                f"running statistics of {e.module}",
                "call model.eval() around forwards that are not training steps (and model.train() "
                "after), or drop the extra forward",
                [f"running statistics of {e.module} moved by the forward at "
                 f"{chain({'stack': e.stack or [[e.path, e.line]]})}, after step {e.step}; "
                 f"{_when(evidence, e.__dict__, 'bn.forward')}"])


def _precision(evidence: Evidence, steps: list[StepFacts], add) -> bool:
    """The backpropagated loss in float16/bfloat16, fp16 autocast without a GradScaler, or
    parameters trained in low precision with no float32 master copy (GM301): at the model's
    cast when there was one."""
    for s in steps:
        if s.loss_dtype in ("float16", "bfloat16"):
            cause, ev = _cast_site(s)
            ev.append(f"step {s.index}: loss dtype {s.loss_dtype}, value {s.loss_value}, "
                      f"backward at {s.path}:{s.line}")
            add("GM301", cause["path"], cause["line"], f"the backpropagated loss is {s.loss_dtype}",
                "compute the loss in float32 (outside autocast, or cast the prediction .float())",
                ev)
            return True
        ac = s.autocast_at_forward or {}
        if ac.get("enabled") and ac.get("dtype") == "float16" and not s.scaler_used:
            add("GM301", s.path, s.line, "float16 autocast training without a GradScaler",
                "scale the loss with torch.cuda.amp.GradScaler (scaler.scale(loss).backward())",
                [f"step {s.index}: forward under float16 autocast, no GradScaler.scale"])
            return True
    updates = evidence.low_precision_updates(steps)
    if updates:
        s = next((s for s in steps if s.cast_cause), steps[0] if steps else None)
        if s is not None:
            cause, ev = _cast_site(s)
            add("GM301", cause["path"], cause["line"],
                f"the model is trained in {'/'.join(s.param_dtypes) or 'low precision'}: its "
                f"updates are rounded to that precision",
                "keep float32 parameters (autocast for the forward, or a float32 master copy)",
                ev + updates)
            return True
    return False


def _cast_site(s: StepFacts) -> tuple[dict, list[str]]:
    """Where a step's low precision came from: the model's cast (with the calls that led to
    it) when the recorder saw one, else the backward."""
    if not s.cast_cause:
        return {"path": s.path, "line": s.line}, []
    return s.cast_cause, [f"{s.model or 'the model'} cast to {s.cast_cause.get('dtype')} at "
                          f"{chain(s.cast_cause)}"]


def _low_precision_predictions(evidence: Evidence, add) -> None:
    """A loss fed a float16/bfloat16 prediction (cast with .half()/.to(...)) outside autocast:
    the reconstruction error is computed from low-precision values even when the loss is float32."""
    for x in evidence.losses:
        if x.input_dtype in ("float16", "bfloat16") and not (x.autocast or {}).get("enabled"):
            add("GM301", x.path, x.line, f"{x.fn} gets a {x.input_dtype} prediction",
                "keep the model and its prediction in float32 (drop the .half()/.bfloat16() cast)",
                [f"step {x.step + 1}: {x.fn} input dtype {x.input_dtype}, loss dtype {x.dtype}"])
            return


def _accumulating(evidence: Evidence, steps: list[StepFacts], add) -> None:
    """Gradients held from an earlier step when a backward starts (GM104): at the last
    ``zero_grad()`` that ran, when it ran only before the accumulating steps (moved out of the
    loop: the reset that belongs in it), else at the backward."""
    for s in steps:
        if s.stale_grads:
            resets = [c for c in evidence.calls("zero_grad") if c.path]
            if resets and all(max(c.steps or [0]) < s.index - 1 for c in resets):
                c = resets[-1]
                add("GM104", c.path, c.line,
                    f"gradients accumulate across steps: this zero_grad() last ran before step "
                    f"{max(c.steps or [0]) + 1}, and {s.stale_grads} parameters still had an earlier "
                    f"step's gradient when the backward of step {s.index} started",
                    "reset the gradients once per step, in the training loop, before the backward",
                    [f"step {s.index}: an optimizer stepped since the previous backward and no "
                     f"zero_grad ran; {s.stale_grads} gradients were non-zero at the start"])
                return
            add("GM104", s.path, s.line,
                f"gradients accumulate across steps: {s.stale_grads} parameters still had the "
                f"previous step's gradient when this backward started",
                "call optimizer.zero_grad() once per step, before the backward",
                [f"step {s.index}: an optimizer stepped since the previous backward and no "
                 f"zero_grad ran; {s.stale_grads} gradients were non-zero at the start"])
            return


def _held_graphs(evidence: Evidence, add) -> None:
    """A holder (a variable, an attribute, a container) whose tensors keep the autograd graph of
    every step alive (GM106): at the statement that grows it, else at the backward."""
    for holder, rs in evidence.growing_holders():
        r = rs[-1]
        path, line = (r.held_at[0], r.held_at[1]) if r.held_at else (r.path, r.line)
        trail = ", ".join(f"{x.nodes} at step {x.step}" for x in rs[-3:])
        add("GM106", path, line,
            f"`{holder}` keeps the autograd graph of past steps alive: it holds "
            f"{r.tensors} tensor(s) with a graph, {r.nodes} autograd nodes outside this step's loss",
            "accumulate loss.item() (or loss.detach()), not the loss tensor",
            [f"autograd nodes held by `{holder}` outside the step's loss graph: {trail} (one "
             f"step's loss graph: {r.loss_nodes} nodes); backward at {r.path}:{r.line}"])


def _sum_reductions(evidence: Evidence, add) -> None:
    """A summing reduction whose sum the loss does not divide by its count: the loss and its
    gradient grow with the number of reconstructed nodes (GM401), at the sum's call (an ``nn``
    loss module's construction for ``reduction='sum'``)."""
    for site in evidence.sum_sites():
        if site.grows:
            step, r = site.records[-1]
            add("GM401", site.path, site.line,
                f"the backpropagated loss adds up {r.rows} rows with `{site.fn}` without dividing "
                f"by their count: it grows with the number of reconstructed nodes",
                "use reduction='mean', or divide the sum by the number of reconstructed rows",
                [f"{site.why}; summed at {chain({'stack': site.stack or [[site.path, site.line]]})}",
                 f"step {step}: sum {r.value:.4g} over {r.rows} rows" + (
                     f" (node counts of the step: {', '.join(map(str, r.node_rows))})"
                     if r.node_rows else "")])


def _zero_gradients(evidence: Evidence, add) -> None:
    """Parameters the loss reaches whose gradient is exactly zero at every backward
    (``Evidence.zero_gradient_params``): the only loss term through them is weighted 0 (GM402)."""
    zero, graded = evidence.zero_gradient_params()
    if zero:
        s = graded[-1]
        add("GM402", s.path, s.line,
            f"{len(zero)} parameters reached by the loss get exactly zero gradient at every "
            f"step: the loss term through them is weighted 0",
            "give the loss term a non-zero weight, or leave it out of the model",
            [f"zero gradient at all {len(graded)} steps: {_names(zero)}"])


def _nonfinite(steps: list[StepFacts], add) -> None:
    for s in steps:
        if s.loss_finite is False or s.nonfinite_grads:
            what = "loss" if s.loss_finite is False else "gradients"
            where = f"; first non-finite module output: {s.nonfinite_module}" if s.nonfinite_module else ""
            ev = [f"step {s.index}: loss {s.loss_value}{where}"]
            if s.nonfinite_grads:
                ev.append(f"non-finite gradients: {_names(s.nonfinite_grads)}")
            add("GM701", s.path, s.line, f"non-finite {what} at step {s.index}{where}",
                "find where the values overflow (learning rate, low precision, division by zero)",
                ev)
            return


def _optimizers(evidence: Evidence, steps: list[StepFacts], add) -> None:
    for o in evidence.optimizers:
        if o.missing_model_params:
            ev = [f"not optimised: {_names(o.missing_model_params)}",
                  f"{o.foreign_params} optimised parameters are not in the model",
                  f"the {o.cls} steps at {o.path}:{o.line}"]
            cause, why = optimizer_cause(o)
            if cause is None:
                cause = {"path": o.path, "line": o.line}
            else:
                ev.insert(0, f"{why}: {chain(cause)}")
            add("GM105", cause["path"], cause["line"],
                f"{len(o.missing_model_params)} trained parameters of {o.model} are in no param "
                f"group of the {o.cls} that steps",
                "build the optimizer over model.parameters() of the instance that is trained", ev)
    stepped = [s for s in steps if s.optimizer_steps and s.param_change]
    if len(stepped) < 2 or evidence.low_precision_updates(steps):
        return  # updates rounded away by half-precision parameters: GM301's effect, not a lost model
    # parameters in no param group never change: that defect is reported above, at its cause
    missing = {n for o in evidence.optimizers for n in o.missing_model_params}
    still = None
    for s in stepped:
        moving = {n for n, g in s.grads.items() if g.state == "finite"}
        frozen = {n for n, d in s.param_change.items()
                  if d == 0.0 and n in moving and n not in missing}
        still = frozen if still is None else still & frozen
    if still:
        s = stepped[-1]
        opt = evidence.optimizers[0] if evidence.optimizers else None
        add("GM105", opt.path if opt else s.path, opt.line if opt else s.line,
            f"{len(still)} parameters receive gradients but never change across "
            f"{len(stepped)} optimizer steps",
            "check the optimizer's parameters and learning rate",
            [f"unchanged after every step: {_names(sorted(still))}"])


def _ddp(evidence: Evidence, add) -> None:
    for d in evidence.ddp:
        if d.single_process:
            why = "no process group is initialised" if not d.pg_initialized else "world size is 1"
            add("GM302", d.path, d.line, f"DistributedDataParallel wraps {d.module} but {why}",
                "wrap in DDP only when launched with torchrun/world size > 1; use the plain model",
                [f"process {d.pid}: pg_initialized={d.pg_initialized}, world_size={d.world_size}"])


def _graphs(evidence: Evidence, add) -> None:
    # the add_self_loop call that made the duplicates is the cause; a forward only shows them
    made = [g for g in evidence.graphs if g.multi_loop_nodes and g.where == "add_self_loop"]
    for g in made + [g for g in evidence.graphs if g.multi_loop_nodes and g not in made]:
        if g.stack:
            entered = [x for x in evidence.graphs if x.multi_loop_nodes and x.where == "forward"]
            add("GM501", g.path, g.line,
                f"add_self_loop gives {g.multi_loop_nodes} of {g.num_nodes} nodes more than one "
                f"self loop (the graph already had them)",
                "add self loops once (dgl.remove_self_loop before dgl.add_self_loop)",
                [f"step {g.step}: {g.self_loops} self loops on {g.num_nodes} nodes after "
                 f"{chain({'stack': g.stack})}",
                 *[f"such graphs enter {x.module} at {x.path}:{x.line}" for x in entered[:1]]])
            return
        if g.multi_loop_nodes:
            add("GM501", g.path, g.line,
                f"graph with {g.multi_loop_nodes} of {g.num_nodes} nodes carrying more than one "
                f"self loop" + (f" enters {g.module}" if g.where == "forward" else f" after {g.where}"),
                "add self loops once (dgl.remove_self_loop before dgl.add_self_loop)",
                [f"step {g.step}: {g.self_loops} self loops on {g.num_nodes} nodes"])
            return


def _outputs(evidence: Evidence, add) -> None:
    losses = evidence.losses
    if losses:
        last_step = max(x.step for x in losses)
        by_site: dict[tuple[str, int], list] = defaultdict(list)
        for x in losses:
            by_site[(x.path, x.line)].append(x)
        for (path, line), calls in by_site.items():
            last = [x for x in calls if x.step == last_step] or calls[-1:]
            x = last[-1]
            if x.pred_std is None or not x.target_std or not x.graded:
                continue  # a collapsed or mis-scaled prediction is a symptom of what trains
            if last_step >= 1 and x.pred_std < COLLAPSE_RATIO * x.target_std:
                add("GM702", path, line,
                    f"prediction collapsed to a near-constant: std across nodes {x.pred_std:.2e} "
                    f"vs target {x.target_std:.2e}",
                    "check the decoder input (masking, detach) and the loss normalisation",
                    [f"step {x.step}: pred std {x.pred_std:.3g}, target std {x.target_std:.3g}"])
            elif x.pred_rms and x.target_rms and not (
                    1 / SCALE_RATIO <= x.pred_rms / x.target_rms <= SCALE_RATIO):
                add("GM704", path, line,
                    f"prediction scale {x.pred_rms:.3g} vs target {x.target_rms:.3g} "
                    f"(rms) in {x.fn}",
                    "check normalisation of the targets and of the prediction",
                    [f"step {x.step}: pred rms {x.pred_rms:.3g}, target rms {x.target_rms:.3g}"])
    outs = [o for o in evidence.outputs if o.kind == "normalize" and o.dim_size == 3]
    if outs:
        last_step = max(o.step for o in outs)
        for o in outs:
            if o.step == last_step and o.mean_norm is not None and last_step >= 1 and \
                    abs(o.mean_norm - 1.0) > UNIT_TOLERANCE and (o.mean_norm < 0.1 or o.mean_norm > 10):
                add("GM703", o.path, o.line,
                    f"predicted direction vectors have mean length {o.mean_norm:.3g} before "
                    f"normalisation",
                    "normalise predicted normals/tangents when reading the reconstruction",
                    [f"step {o.step}: mean |v| = {o.mean_norm:.3g}"])


def last_backward(evidence: Evidence) -> Optional[StepFacts]:
    """The last backward step whose gradients were recorded (what gradient views show)."""
    steps = [s for s in evidence.steps if s.kind == "backward" and s.grads]
    return steps[-1] if steps else None


def gradient_flow(evidence: Evidence, depth: int = 2) -> list[dict]:
    """Per module (parameter name prefix of ``depth`` parts): gradients at the last backward."""
    s = last_backward(evidence)
    if s is None:
        return []
    rows: dict[str, dict] = {}
    unreached = set(s.params_unreached)
    for name, g in s.grads.items():
        parts = name.split(".")
        module = ".".join(parts[:depth]) if len(parts) > depth else ".".join(parts[:-1]) or "(model)"
        row = rows.setdefault(module, {"module": module, "params": 0, "with_grad": 0, "none": 0,
                                       "zero": 0, "nonfinite": 0, "unreached": 0, "grad_norm": 0.0})
        row["params"] += 1
        if g.state == "finite":
            row["with_grad"] += 1
            row["grad_norm"] += (g.norm or 0.0) ** 2
        else:
            row[g.state if g.state in ("none", "zero", "nonfinite") else "none"] += 1
        row["unreached"] += name in unreached
    for row in rows.values():
        row["grad_norm"] = round(row["grad_norm"] ** 0.5, 6)
        row["step"] = s.index
    return list(rows.values())
