"""``gm-audit diff [OPTIONS] REF_CMD CANDIDATE_CMD``: both runs under the probe, side by side.

Each command runs under the probe's recorder (``auditor/probe/launch.py``) in snapshot mode
(``auditor/diff/snapshot.py``): every RNG seeded with ``--seed`` at start-up, ``--steps`` training
steps (default 2) recorded stage by stage, the process stopped when the next one starts. The two
runs go concurrently. ``--steps auto`` (the probe's, ``auditor/probe/command.py``): the candidate
runs until every line of a static finding in the modules it imports has run, then one step more
(at most ``--max-steps``), and the reference stops after as many. Then
``auditor/diff/compare.py`` finds the first divergence and ``auditor/diff/attribute.py`` the line
that caused it.

Tolerances: ``--atol`` 1e-5 and ``--rtol`` 1e-4 by default. On CPU the kernels these pipelines use
are deterministic (two runs of one script are bit-identical), and float32 re-association noise
between two equivalent scripts is about 1e-7 relative: 1e-4 leaves three orders of margin, while
the bugs the diff is for move values by 1e-2 and more. ``--calibrate`` (automatic when a run used
CUDA, whose scatter kernels are not deterministic) runs each command once more and widens
``atol`` to ten times the largest self-difference measured.

Exit codes: 0 the runs agree, 1 they diverge, 2 usage error or a run that crashed, timed out or
ended before its first training step (its last output lines are shown, no traceback).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from auditor.config import Config
from auditor.emit import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError, emit
from auditor.diff.align import align
from auditor.diff.attribute import Cause, explain, refine
from auditor.diff.compare import Tolerance, compare_runs, self_noise
from auditor.diff.outcome import WINDOW_STEPS
from auditor.diff.outcome_report import (
    DIVERGENCE_STEPS, finish_outcome, outcome_progress, outcome_steps,
)
from auditor.diff.snapshot import ENV_DIR, ENV_OUTCOME, ENV_SEED, ENV_STEPS, ENV_STOP
from auditor.findings import Finding, Severity, Status
from auditor.probe.command import (
    ProbeUsageError, _resolve_executable, classify, progress_display, step_budget,
)
from auditor.probe.evidence import Evidence
from auditor.probe.reach import watch_list
from auditor.probe.launch import (
    RunOutcome, prepare, pymp_dirs, remove_new_pymp, run_command, stop_programs_on_signals,
    stop_signal,
)
from auditor.reports import Report, source_line

DEFAULT_TIMEOUT_S = 300.0
# two steps: the first shows what differs from the start, the second what one step leaves to the
# next (gradients never cleared, state carried over), which a first step cannot show
DEFAULT_STEPS = "2"
EXIT_DIVERGED = EXIT_FINDINGS  # the candidate diverges from the reference
TOP_ITEMS = 5


@dataclass
class Run:
    role: str  # reference | candidate
    cmd: list[str]
    outcome: Optional[RunOutcome] = None
    evidence: Evidence = field(default_factory=Evidence)
    snapshot: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return len(self.snapshot.get("steps") or [])

    def facts(self) -> dict[str, Any]:
        o = self.outcome
        return {"command": " ".join(shlex.quote(c) for c in self.cmd), "steps": self.steps,
                "exit": o.exit_code if o else None, "stopped": o.stopped if o else "",
                "seconds": round(o.seconds, 2) if o else 0.0,
                "device": ", ".join(self.evidence.devices) or "cpu",
                "model": (self.snapshot.get("steps") or [{}])[0].get("model", "")}


def _options(args: argparse.Namespace, config: Config) -> dict[str, Any]:

    def opt(name: str, default: Any) -> Any:
        value = getattr(args, name.replace("-", "_"), None)
        return config.probe.get(name, default) if value is None else value

    outcome = outcome_steps(args)
    try:
        steps, max_steps, budget = step_budget(args, config, DEFAULT_STEPS) if not outcome else (
            str(outcome), outcome, str(min(outcome, DIVERGENCE_STEPS)))
    except ProbeUsageError as exc:
        raise UsageError(f"diff: {exc}") from None
    try:
        timeout = float(opt("timeout", DEFAULT_TIMEOUT_S))
        tol = Tolerance(float(opt("atol", Tolerance.atol)), float(opt("rtol", Tolerance.rtol)))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"diff: invalid option: {exc}") from None
    if timeout <= 0 or tol.atol < 0 or tol.rtol < 0:
        raise UsageError("diff: --timeout must be positive, --atol and --rtol not negative")
    cmds = []
    for text in (args.ref_cmd, args.candidate_cmd):
        try:
            cmd = shlex.split(text)
        except ValueError as exc:
            raise UsageError(f"diff: cannot parse command {text!r}: {exc}") from None
        if not cmd:
            raise UsageError("diff: empty command; quote each one: "
                             'gm-audit diff "python minimal.py" "python train.py"')
        cmds.append(cmd)
    device = opt("device", "auto")
    return {"cmds": cmds, "auto": steps == "auto", "steps": max_steps if steps == "auto" else int(budget),
            "max_steps": max_steps, "timeout": timeout, "tol": tol, "device": device,
            "seed": int(getattr(args, "seed", 0) or 0), "paths": opt("paths", None) or ["."],
            "calibrate": bool(getattr(args, "calibrate", False)), "outcome": outcome}


def _execute(run: Run, opts: dict, watch: list, cwd: Path, stop: Path, tick=None) -> Run:
    """One run. The recorder gets one step more than the snapshot records, so that the process
    lives on to the start of the next step (what happens between steps is part of ``update``);
    in ``--steps auto`` the candidate decides when to stop and tells the reference through
    ``stop`` (the number of steps it recorded)."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"gm-audit-diff-{run.role}-"))
    pymp = pymp_dirs()
    driver = opts["auto"] and run.role == "candidate"
    try:
        # --outcome: the run goes on past the snapshot's steps; its last forward is the model's
        # after --steps updates
        budget = f"auto:{opts['steps']}" if driver else str((opts["outcome"] or opts["steps"]) + 1)
        env = prepare(run_dir, cwd, budget, watch, opts["device"])
        snap_dir = run_dir / "snapshot"
        snap_dir.mkdir()
        env.update({ENV_DIR: str(snap_dir), ENV_SEED: str(opts["seed"]),
                    ENV_STEPS: str(opts["steps"])})
        if opts["outcome"]:
            env[ENV_OUTCOME] = str(WINDOW_STEPS)
        if opts["auto"] and not driver:
            env[ENV_STOP] = str(stop)
        cmd = _resolve_executable(run.cmd, env)
        run.outcome = run_command(cmd, env, cwd, opts["timeout"], run_dir / "output.log", tick)
        run.evidence = Evidence.load(run_dir / "evidence")
        run.snapshot = _load_snapshot(snap_dir)
    finally:
        if driver:  # written even when the run failed: the reference must not wait for it
            stop.write_text(str(run.steps), encoding="utf-8")
        shutil.rmtree(run_dir, ignore_errors=True)
        remove_new_pymp(pymp)
    return run


def _run_pair(ref: Run, cand: Run, opts: dict, watch: list, cwd: Path, args) -> None:
    """Both runs at once; on a terminal, a spinner with the candidate's last output line
    (``--outcome``: each run's steps and the time left, on stderr, terminal or not)."""
    shared = Path(tempfile.mkdtemp(prefix="gm-audit-diff-"))
    title = f"diff: running {shlex.join(ref.cmd)} and {shlex.join(cand.cmd)}"
    display = (outcome_progress(args, opts["outcome"]) if opts["outcome"]
               else progress_display(args, title))
    try:
        with stop_programs_on_signals(), display as tick, ThreadPoolExecutor(max_workers=2) as pool:
            ticks = tick if opts["outcome"] else {"candidate": tick}
            list(pool.map(lambda r: _execute(r, opts, watch, cwd, shared / "stop",
                                             ticks.get(r.role)), (ref, cand)))
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _load_snapshot(folder: Path) -> dict:
    import torch

    files = sorted(folder.glob("snapshot-*.pt"), key=lambda p: p.stat().st_mtime)
    for path in files:  # several processes (torchrun ranks): the first that trained
        try:
            doc = torch.load(path, map_location="cpu", weights_only=True)
        except Exception:
            continue
        if doc.get("steps"):
            return doc
    return {}


def _failure(run: Run) -> Optional[str]:
    o = run.outcome
    if o is None:
        return "did not run"
    if o.stopped == "error":
        return o.message
    if o.stopped == "timeout":
        return f"timed out after {o.seconds:.0f} s"
    if o.exit_code not in (0, None):
        return f"exited with code {o.exit_code}"
    if not run.steps:
        return "ended before its first training step (no backward was observed)"
    return None


def _cause_for(stage: str, item, ref: Run, cand: Run, static: list[Finding]) -> Cause:
    cause = explain(stage, item, ref.evidence, cand.evidence, ref.snapshot, cand.snapshot)
    return refine(cause, static, ref.evidence, cand.evidence)


def _finding(cause: Cause, stage: str, item, rules: dict,
             static: list[Finding]) -> Optional[Finding]:
    """The divergence as a finding at its cause: the span and fix of the static finding of that
    rule on that line when there is one; else the line's first code column, and the fix the rule
    gives its findings elsewhere (or where to read it)."""
    rule = rules.get(cause.rule) if cause.rule else None
    if rule is None or not cause.path:
        return None
    line = max(cause.line, 1)
    same_rule = [f for f in static if f.rule == rule.code]
    here = next((f for f in same_rule if f.path == cause.path and f.line == line), None)
    if here is not None:
        span = (here.line, here.column, here.end_line, here.end_column)
    else:
        text = source_line(cause.path, line)
        start = len(text) - len(text.lstrip()) + 1
        span = (line, start, line, max(start, len(text.rstrip()) + 1))
    fix = next((f.fix for f in [here, *same_rule] if f is not None and f.fix),
               f"see `gm-audit explain {rule.code}` (Use instead)")
    return Finding(rule=rule.code, name=rule.name, severity=rule.severity, path=cause.path,
                   line=span[0], column=span[1], end_line=span[2], end_column=span[3],
                   message=f"first divergence from the reference at stage {stage}: "
                           f"{item.name}: {item.detail}",
                   fix=fix, status=Status.RUNTIME,
                   evidence=[cause.why] if cause.why else [])


def _notes(ref: Run, cand: Run, ref_tree: dict, cand_tree: dict) -> list[str]:
    """``ref_tree``, ``cand_tree``: the snapshots as compared (aligned, auditor/diff/align.py)."""
    notes = []
    ca = (ref_tree.get("steps") or [{}])[0].get("classes") or {}
    cb = (cand_tree.get("steps") or [{}])[0].get("classes") or {}
    a, b = ca.get(""), cb.get("")
    if a and b and a != b:
        notes.append(f"the scripts train different model classes: {a} (reference) vs {b} "
                     "(candidate); parameters are compared by name where they match")
    other = [n for n in ca.keys() & cb.keys() if ca[n] != cb[n] and n]
    if other:
        notes.append("modules of another class under the same name: " + ", ".join(
            f"{n} ({ca[n]} vs {cb[n]})" for n in sorted(other)[:5]))
    only_a, only_b = sorted(ca.keys() - cb.keys()), sorted(cb.keys() - ca.keys())
    if only_a:
        notes.append("modules in the reference only: " + ", ".join(only_a[:8]))
    if only_b:
        notes.append("modules in the candidate only: " + ", ".join(only_b[:8]))
    if ref.steps != cand.steps:
        notes.append(f"steps recorded: {ref.steps} (reference) vs {cand.steps} (candidate); "
                     "compared the first {0}".format(min(ref.steps, cand.steps)))
    return notes


def first_run_steps(snapshot: dict) -> dict[tuple[str, int], int]:
    """(path, line) of a watched line -> the step during which it first ran (the steps after the
    last recorded one: one past it)."""
    out: dict[tuple[str, int], int] = {}
    steps = snapshot.get("steps") or []
    for k, step in enumerate(steps, 1):
        for path, line in step.get("lines") or []:
            out.setdefault((path, line), k)
    for path, line in snapshot.get("lines_after") or []:
        out.setdefault((path, line), len(steps) + 1)
    return out


def _flagged_but_agreeing(static: list[Finding], ref: Run, cand: Run, opts: dict) -> Optional[str]:
    """When the runs agree but the static pass flags the pipeline: which findings, whether their
    lines ran in the steps compared, and which step to ask for (an agreement over the first steps
    is no acquittal of code that runs later, such as an evaluation every few epochs)."""
    if not static:
        return None
    n = min(ref.steps, cand.steps)
    first = first_run_steps(cand.snapshot)
    outside = [f for f in static if cand.evidence.outside(f.path)]
    later: dict[int, list[Finding]] = {}  # step to ask for -> findings whose lines ran by then
    never = []
    for f in static:
        if f in outside:
            continue
        ran = [first[(f.path, ln)] for ln in range(f.line, f.end_line + 1) if (f.path, ln) in first]
        if not ran:
            never.append(f)
        elif min(ran) > n:
            later.setdefault(min(ran), []).append(f)

    def listed(fs: list[Finding]) -> str:
        return ", ".join(f"{f.rule} at {f.path}:{f.line}" for f in fs[:4]) + (
            f" and {len(fs) - 4} more" if len(fs) > 4 else "")

    advice = []
    stopped = classify(cand.outcome, cand.evidence) == "budget" if cand.outcome else False
    for k, fs in sorted(later.items()):
        advice.append(f"{listed(fs)} first ran after step {k - 1}: ask for --steps {k}"
                      if stopped or k <= cand.steps else
                      f"{listed(fs)} ran only after the last training step")
    if never:
        if not stopped:
            advice.append(f"{listed(never)} never ran before the program ended")
        elif opts["auto"]:
            advice.append(f"{listed(never)} did not run within --max-steps {opts['max_steps']}: "
                          f"ask for more (--max-steps {2 * opts['max_steps']})")
        else:
            advice.append(f"{listed(never)} never ran in them: --steps auto runs until "
                          "each flagged line has run")
    if outside:
        advice.append(f"{listed(outside)} in modules this program never imported")
    unrun = len(never) + sum(len(fs) for fs in later.values())
    head = (f"no divergence, but the static pass flags {len(static)} finding(s): {listed(static)}; ")
    if unrun:
        return head + (f"{unrun} of them never ran in the {n} step(s) compared: "
                       + "; ".join(advice))
    return head + ("every flagged line ran without changing what was compared"
                   + ("" if not outside else f" ({advice[-1]})")
                   + ": `gm-audit probe` decides each finding from its own evidence")


def _interrupted(ref: Run, cand: Run) -> Optional[dict[str, Any]]:
    """The run facts of a diff stopped by a signal (reports mark it like a crashed probe run)."""
    if not stop_signal():
        return None
    steps = min(ref.steps, cand.steps)
    return {"stopped": "interrupted", "exit": None,
            "summary": f"interrupted by {signal.Signals(stop_signal()).name} after {steps} step(s) "
                       "recorded by both runs; every process stopped, the report compares what "
                       "was recorded until then"}


def _text(stages: list, first: Optional[dict], runs: dict, tol: Tolerance,
          notes: list[str], interrupted: Optional[dict] = None, why: str = "") -> list[str]:
    lines = []
    for role in ("reference", "candidate"):
        r = runs[role]
        lines.append(f"diff: {role:<9} {r['command']}  ({r['model'] or '?'}, {r['steps']} step(s), "
                     f"{r['seconds']:.1f} s)")
    lines.append(f"diff: tolerance atol {tol.atol:g}, rtol {tol.rtol:g}")
    lines.append("")
    lines.append(f"  {'stage':<8} {'status':<8} compared  differing items")
    for s in stages:
        lines.append(f"  {s['stage']:<8} {s['status']:<8} {s['compared']:>8}  "
                     f"{sum(1 for i in s['items'] if i['status'] == 'differs')}")
        for i in s["items"][:TOP_ITEMS]:
            at = f" (step {i['step']})" if i["step"] > 1 else ""
            lines.append(f"      {i['status']:<14} {i['name']}{at}: {i['detail']}")
        if len(s["items"]) > TOP_ITEMS:
            lines.append(f"      … {len(s['items']) - TOP_ITEMS} more")
    lines.append("")
    lines.extend(f"diff note: {n}" for n in notes)
    if interrupted is not None:
        lines.append(f"diff: {interrupted['summary']}")
    if first is None and interrupted is not None:
        lines.append("diff: verdict: none — no divergence in what both runs recorded before they "
                     "were interrupted")
    elif first is None:
        lines.append("diff: verdict: no divergence — the runs agree at every stage")
    else:
        where = f" at {first['path']}:{first['line']}" if first.get("path") else ""
        rule = f" [{first['rule']}]" if first.get("rule") else ""
        lines.append(f"diff: verdict: first divergence at stage {first['stage']}: {first['name']} "
                     f"— {first['detail']}{rule}{where}")
        if why:
            lines.append(f"diff: cause: {why}")
    return lines


def run_diff_command(args: argparse.Namespace, config: Config, rules: list, fail_on: Severity) -> int:
    from auditor.discovery import PathMissing
    from auditor.static.engine import run_check

    opts = _options(args, config)
    start = time.perf_counter()
    try:
        # --steps auto asks which entry points' calls reach each finding (auditor/probe/reach.py)
        static = run_check(opts["paths"], config, rules, jobs=args.jobs, use_cache=not args.no_cache,
                           need_project=opts["auto"])
    except PathMissing as exc:
        raise UsageError(str(exc)) from None
    watch = watch_list(static)
    cwd = Path.cwd()
    ref, cand = Run("reference", opts["cmds"][0]), Run("candidate", opts["cmds"][1])
    _run_pair(ref, cand, opts, watch, cwd, args)
    interrupted = _interrupted(ref, cand)
    # a crash says more than a run that merely never trained: report it first
    failures = sorted(((run, _failure(run)) for run in (ref, cand)),
                      key=lambda x: bool(x[0].outcome and x[0].outcome.exit_code == 0))
    for run, why in failures:
        if why and interrupted is None:
            tail = run.outcome.tail if run.outcome else []
            print(f"gm-audit diff: the {run.role} run `{' '.join(run.cmd)}` {why}", file=sys.stderr)
            for t in tail[-12:]:
                print(f"  | {t}", file=sys.stderr)
            return EXIT_ERROR
    if opts["auto"]:  # a reference faster than the candidate may have recorded more
        ref.snapshot["steps"] = (ref.snapshot.get("steps") or [])[:cand.steps]
    tol = opts["tol"]
    uses_cuda = any(d.startswith("cuda") for r in (ref, cand) for d in r.evidence.devices)
    again: list[Run] = []
    if (opts["calibrate"] or uses_cuda) and interrupted is None:
        again = [Run(r.role, r.cmd) for r in (ref, cand)]
        _run_pair(again[0], again[1], opts, watch, cwd, args)
        interrupted = _interrupted(ref, cand)
        if interrupted is None:  # a calibration cut short measures nothing
            noise = max(self_noise(r.snapshot, a.snapshot) for r, a in zip((ref, cand), again))
            tol = Tolerance(max(tol.atol, 10 * noise), tol.rtol)
    ref_tree, cand_tree, alignment = align(ref.snapshot, cand.snapshot)
    results, first = compare_runs(ref_tree, cand_tree, tol)
    by_code = {r.code: r for r in rules}
    findings: list[Finding] = []
    first_json = None
    why = ""
    if first is not None:
        stage_result, item = first
        own = replace(item, name=alignment.candidate_name(item.name)) if alignment else item
        cause = _cause_for(stage_result.stage, own, ref, cand, static.findings)
        step = f" (step {item.step})" if item.step > 1 else ""
        first_json = {"stage": stage_result.stage, "name": item.name,
                      "detail": item.detail + step, "rule": cause.rule,
                      "path": cause.path or None, "line": cause.line or None}
        why = cause.why
        found = _finding(cause, stage_result.stage, item, by_code, static.findings)
        if found is not None:
            findings.append(found)
    stages = [r.to_json() for r in results]
    runs = {"reference": ref.facts(), "candidate": cand.facts()}
    notes = _notes(ref, cand, ref_tree, cand_tree)
    if alignment is not None:
        notes.insert(0, alignment.describe())
    # --outcome compares the first steps only, whatever --steps says (its text says so)
    flagged = (None if first is not None or opts["outcome"]
               else _flagged_but_agreeing(static.findings, ref, cand, opts))
    if flagged:
        notes.append(flagged)
    extra: dict[str, Any] = {"first_divergence": first_json, "stages": stages, "runs": runs,
                             "tolerance": {"atol": tol.atol, "rtol": tol.rtol}, "notes": notes}
    if interrupted is not None:
        extra["run"] = interrupted
    if opts["outcome"]:
        if first_json is not None:
            first_json["cause"] = why
        code = finish_outcome(args, fail_on, Report("diff", findings, static.errors, static.files,
                                                    time.perf_counter() - start, extra=extra),
                              (ref, cand), again, opts["outcome"])
        return code if interrupted is None else 128 + stop_signal()
    if args.format == "text":
        extra = {"text_sections": _text(stages, first_json, runs, tol, notes, interrupted, why)}
    report = Report("diff", findings, static.errors, static.files, time.perf_counter() - start,
                    extra=extra)
    if interrupted is not None and args.format != "text":
        print(f"gm-audit diff: {interrupted['summary']}", file=sys.stderr)
    code = emit(report, args, fail_on)
    if interrupted is not None:  # the shell's convention: 130 for Ctrl-C, 143 for SIGTERM
        return 128 + stop_signal()
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_DIVERGED if first is not None else (code if code == EXIT_ERROR else EXIT_CLEAN)

