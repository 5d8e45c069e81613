"""Whether a mutant's run shows its bug class: one comparator per class, reading only the
quantity that class changes, against two clean runs of the same command (their disagreement is
the noise a difference must exceed).

A verdict is ``live`` (the quantity differs from the clean run: the reason says how), ``dead``
(the mutated line ran and the quantity is the clean run's: the reason says what was compared),
``never-ran`` (no mutated line executed) or ``crash`` (the mutant's run failed: counted apart,
not a silent bug).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from benchmarks.ecosystem.oracle.launch import Run

LIVE, DEAD, NEVER_RAN, CRASH = "live", "dead", "never-ran", "crash"


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str


# a comparator: (clean run, second clean run, mutant run, mutant's second run or None) ->
# (the reason when the class's quantity differs, or None; what was compared)
Comparator = Callable[[dict, dict, dict, Optional[dict]], tuple[Optional[str], str]]


def _steps(e: dict) -> list[dict]:
    return e.get("steps", [])


def _close(m: float, a: float, b: float) -> bool:
    """``m`` is ``a`` within the clean runs' own spread (and float rounding)."""
    return abs(m - a) <= max(4 * abs(a - b), 1e-5 * max(abs(a), 1e-3))


def _prefix(names: Sequence[str]) -> str:
    """The modules (root and first level: ``GraphMAE.encoder.*``) the names are under."""
    parts = sorted({".".join(n.split(".")[:2]) for n in names})
    return ", ".join(f"{p}.*" for p in parts[:4]) + (", ..." if len(parts) > 4 else "") or "the model"


def gradients(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    """Parameters without a gradient (none or all zero) at each step."""
    for k, (sa, sm) in enumerate(zip(_steps(a), _steps(m)), 1):
        ga, gm = sa.get("grads", {}), sm.get("grads", {})
        lost = sorted(n for n in gm if gm[n] != "nonzero" and ga.get(n, "nonzero") == "nonzero")
        if lost:
            zero = sum(gm[n] == "zero" for n in lost)
            clean = sum(v != "nonzero" for v in ga.values())
            return (f"{len(lost)} of {len(gm)} parameters under {_prefix(lost)} got no gradient at "
                    f"step {k}{f' ({zero} an all-zero one)' if zero else ''} (clean: {clean} of "
                    f"{len(ga)} without)"), "which parameters got a gradient at each step"
    return None, "which parameters got a gradient at each step"


def _first_change(a: dict, m: dict, key: str) -> Optional[tuple[int, Any, Any]]:
    """The first step whose ``key`` differs between the clean run ``a`` and the mutant ``m``:
    (step, clean value, mutant value)."""
    for k, (sa, sm) in enumerate(zip(_steps(a), _steps(m)), 1):
        if sm.get(key) != sa.get(key):
            return k, sa.get(key), sm.get(key)
    return None


def _gradients_then(key: str, says: str, what: str) -> Comparator:
    """Parameters that lost their gradient, else the first step whose ``key`` differs
    (``says``: how a difference reads, with the mutant's value first)."""
    def compare(a: dict, b: dict, m: dict, again: Optional[dict]) -> tuple[Optional[str], str]:
        found, _ = gradients(a, b, m, again)
        if found:
            return found, ""
        change = _first_change(a, m, key)
        if change:
            k, clean, got = change
            return f"{got} {says} at step {k} (clean: {clean})", ""
        return None, what
    return compare


grad_mode = _gradients_then("no_grad_forwards", "module forward(s) ran with gradients off",
                            "gradients per parameter and grad mode of each module forward, per step")
frozen = _gradients_then("requires_grad_off", "parameters had requires_grad False",
                         "gradients and requires_grad per parameter, per step")


def stale_gradients(a: dict, b: dict, m: dict, again: Optional[dict]) -> tuple[Optional[str], str]:
    for k, (sa, sm) in enumerate(zip(_steps(a), _steps(m)), 1):
        if sm.get("carried") and sa.get("carried") and sm["carried"][0] > sa["carried"][0]:
            return (f"{sm['carried'][0]} of {sm['carried'][1]} parameters carried a nonzero gradient "
                    f"into the backward of step {k} (clean: {sa['carried'][0]})"), ""
    found, _ = gradients(a, b, m, again)
    return found, "gradients carried into each backward, and gradients at each step"


def optimizer_model(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    change = _first_change(a, m, "optimizer_holds")
    if change and change[2]:
        k, clean, (held, used) = change
        clean_text = f"{clean[0]} of {clean[1]}" if clean else "none"
        return (f"the stepped optimizer held {held} of the {used} parameters that got a gradient "
                f"at step {k} (clean: {clean_text})"), ""
    return None, "the optimizer's parameters against those the forward trained, per step"


def kept_graphs(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    for k, (sa, sb, sm) in enumerate(zip(_steps(a), _steps(b), _steps(m)), 1):
        if None not in (sa.get("alive"), sm.get("alive")) and sa["alive"] == sb.get("alive") \
                and sm["alive"] > sa["alive"]:
            return (f"{sm['alive']} tensors with autograd history alive at the start of step {k} "
                    f"(clean: {sa['alive']})"), ""
    return None, "tensors with autograd history alive at the start of each step"


def train_mode(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    change = _first_change(a, m, "training")
    if change:
        k, clean, got = change
        (on, total), (clean_on, clean_total) = got or (0, 0), clean or (0, 0)
        return (f"{total - on} of {total} modules were in eval mode at the backward of step {k} "
                f"(clean: {clean_total - clean_on})"), ""
    return None, "training flags of every module at each backward"


def batchnorm(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    what = "BatchNorm momentum, num_batches_tracked and running mean, per step"
    for k, (sa, sb, sm) in enumerate(zip(_steps(a), _steps(b), _steps(m)), 1):
        clean = {n: rest for n, *rest in sa.get("batchnorm", [])}
        noise = {n: rest for n, *rest in sb.get("batchnorm", [])}
        for name, momentum, tracked, mean in sm.get("batchnorm", []):
            if name not in clean:
                continue
            cm, ct, cmean = clean[name]
            nmean = noise.get(name, clean[name])[2]
            if momentum != cm:
                return f"{name} momentum {momentum} (clean: {cm})", what
            if tracked != ct:
                return f"{name} num_batches_tracked {tracked} at step {k} (clean: {ct})", what
            if mean and cmean and not _close(mean[1], cmean[1], nmean[1]):
                return (f"{name} running mean |sum| {mean[1]:.4g} at step {k} "
                        f"(clean: {cmean[1]:.4g})"), what
    return None, what


def precision(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    if m.get("dtypes") != a.get("dtypes"):
        return f"dtypes {m.get('dtypes')} (clean: {a.get('dtypes')})", ""
    for k, (sa, sm) in enumerate(zip(_steps(a), _steps(m)), 1):
        if sm.get("loss_dtype") != sa.get("loss_dtype"):
            return f"loss in {sm['loss_dtype']} at step {k} (clean: {sa['loss_dtype']})", ""
    return None, "parameter, output and loss dtypes"


def distributed(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    if m.get("ddp") and not a.get("ddp"):
        return "a DistributedDataParallel module ran the forward (clean: none)", ""
    return None, "whether a DistributedDataParallel module ran the forward"


def loss_value(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    sa, sb, sm = (_steps(e)[0] if _steps(e) else {} for e in (a, b, m))
    for key in ("losses", "criteria"):
        va, vb, vm = sa.get(key) or [], sb.get(key) or [], sm.get(key) or []
        if len(vm) != len(va):
            return f"{len(vm)} {key} at step 1 (clean: {len(va)})", ""
        for x, y, z in zip(vm, va, vb or va):
            if None not in (x, y, z) and not _close(x, y, z):
                return f"{'loss' if key == 'losses' else 'loss component'} {x:.6g} at step 1 (clean: {y:.6g})", ""
    return None, "the loss value and its components at step 1"


def self_loops(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    for k, (sa, sm) in enumerate(zip(_steps(a), _steps(m)), 1):
        if sm.get("self_loops") != sa.get("self_loops"):
            return (f"self loops per node of the graphs entering the model at step {k}: "
                    f"{sm['self_loops']} (clean: {sa['self_loops']})"), ""
    return None, "self loops per node of the graphs entering the model, per step"


def inputs(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    clean = {key: rest for key, *rest in a.get("inputs", [])}
    noise = {key: rest for key, *rest in b.get("inputs", [])}
    for key, shape, mean, std in m.get("inputs", []):
        if key not in clean:
            continue
        cshape, cmean, cstd = clean[key]
        _, nmean, nstd = noise.get(key, clean[key])
        if shape != cshape or not _close(mean, cmean, nmean) or not _close(std, cstd, nstd):
            return (f"first-batch input {key}: mean {mean:.4g}, std {std:.4g} "
                    f"(clean: {cmean:.4g}, {cstd:.4g})"), ""
    return None, "statistics of the first batch's inputs to the model"


def weights(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    ia, ib, im = a.get("init", {}), b.get("init", {}), m.get("init", {})
    moved = [n for n in im if n in ia and not _close(im[n][1], ia[n][1], ib.get(n, ia[n])[1])]
    if moved:
        return (f"{len(moved)} of {len(im)} parameters/buffers under {_prefix(moved)} differ from the "
                f"clean run's at the first forward"), ""
    missing = [x for x in m.get("state_loads", []) if not x[0] and (x[1] or x[2])]
    if len(missing) > len([x for x in a.get("state_loads", []) if not x[0] and (x[1] or x[2])]):
        return f"a non-strict load_state_dict left {missing[0][1]} key(s) missing", ""
    return None, "parameters and buffers at the first forward, and what load_state_dict loaded"


def unsafe_loads(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    def unsafe(e: dict) -> int:
        return sum(w is not True for w in e.get("loads", []))
    if unsafe(m) > unsafe(a):
        return f"{unsafe(m)} torch.load call(s) without weights_only=True (clean: {unsafe(a)})", ""
    return None, "the weights_only of each torch.load call"


def _trajectory(e: dict) -> list:
    return [s.get("losses") for s in _steps(e)] + [sorted(e.get("init", {}).items())]


def reproducible(a: dict, b: dict, m: dict, again: Optional[dict]) -> tuple[Optional[str], str]:
    what = "losses and initial parameters of two runs with the same seed"
    if _trajectory(a) != _trajectory(b):
        return None, what + " (the clean run itself does not reproduce: nothing to tell)"
    if again is not None and _trajectory(m) != _trajectory(again):
        return "two runs with the same seed disagree (the clean run's two runs agree)", what
    return None, what


def flags(a: dict, b: dict, m: dict, _: Optional[dict]) -> tuple[Optional[str], str]:
    if m.get("flags") != a.get("flags"):
        return f"determinism flags {m.get('flags')} (clean: {a.get('flags')})", ""
    return None, "cudnn.benchmark, cudnn.deterministic, deterministic algorithms, misspelled flags"


COMPARATORS: dict[str, Comparator] = {
    "GM101": gradients, "GM102": grad_mode, "GM103": frozen, "GM104": stale_gradients,
    "GM105": optimizer_model, "GM106": kept_graphs, "GM201": train_mode, "GM202": batchnorm,
    "GM301": precision, "GM302": distributed, "GM401": loss_value, "GM402": loss_value,
    "GM501": self_loops, "GM502": inputs, "GM503": inputs, "GM601": weights,
    "GM602": unsafe_loads, "GM603": reproducible, "GM604": flags,
}

# the classes whose effect is a disagreement between two runs of the mutant itself
RUN_TWICE = frozenset({"GM603"})


def judge(rule: str, clean: Run, clean_again: Run, mutant: Run, again: Optional[Run] = None) -> Verdict:
    if mutant.crashed:
        return Verdict(CRASH, mutant.crash_reason())
    if mutant.watched and not mutant.ran():
        return Verdict(NEVER_RAN, "no mutated line executed before the run stopped")
    reason, compared = COMPARATORS[rule](clean.evidence, clean_again.evidence, mutant.evidence,
                                         again.evidence if again is not None and not again.crashed else None)
    if reason:
        return Verdict(LIVE, reason)
    return Verdict(DEAD, f"same as clean: {compared}")
