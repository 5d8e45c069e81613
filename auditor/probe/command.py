"""``gm-audit probe [OPTIONS] -- CMD...``: static pass, run CMD under the recorder, verdicts."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from auditor.config import Config, selection
from auditor.emit import EXIT_ERROR, UsageError, emit
from auditor.findings import Finding, Severity, Status
from auditor.probe.charts import (
    parameter_gradients, point_error, reconstruction_view, too_short_text,
)
from auditor.probe.evidence import Evidence
from auditor.probe.reach import watch_list
from auditor.probe.launch import (
    RunOutcome, prepare, pymp_dirs, remove_new_pymp, run_command, stop_programs_on_signals,
    stop_signal, tail,
)
from auditor.probe.verdicts import decide, gradient_flow, runtime_findings
from auditor.registry import select_runtime_checks
from auditor.static.severity import as_run
from auditor.reports import Report, probe_failed

# auto mode stops as soon as every finding is decided; the cap matters only for findings whose
# code runs late (a validation every few epochs), so it is generous: a step is cheap next to
# what the user pays for a wrong answer
DEFAULT_MAX_STEPS = 300
DEFAULT_TIMEOUT_S = 300.0


class ProbeUsageError(Exception):
    pass


def _option(args: argparse.Namespace, config: Config, name: str, default: Any) -> Any:
    value = getattr(args, name.replace("-", "_"), None)
    if value is None:
        value = config.probe.get(name, default)
    return value


def resolve_options(args: argparse.Namespace, config: Config) -> dict[str, Any]:
    """Command line first, then ``[tool.gm-audit.probe]``, then the defaults."""
    cmd = list(args.cmd or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        configured = config.probe.get("command")
        cmd = shlex.split(configured) if isinstance(configured, str) else list(configured or [])
    if not cmd:
        raise ProbeUsageError("no command to probe: gm-audit probe -- python train.py")
    steps, max_steps, budget = step_budget(args, config, "auto")
    try:
        timeout = float(_option(args, config, "timeout", DEFAULT_TIMEOUT_S))
    except (TypeError, ValueError) as exc:
        raise ProbeUsageError(f"invalid probe option: {exc}") from None
    if timeout <= 0:
        raise ProbeUsageError("--max-steps and --timeout must be positive")
    paths = _option(args, config, "paths", None) or ["."]
    device = _option(args, config, "device", "auto")
    if device not in ("auto", "cpu", "cuda"):
        raise ProbeUsageError(f"--device must be auto, cpu or cuda, not {device!r}")
    return {"cmd": cmd, "budget": budget, "timeout": timeout, "paths": list(paths),
            "device": device, "steps": steps, "max_steps": max_steps}


def step_budget(args: argparse.Namespace, config: Config, default: str) -> tuple[str, int, str]:
    """``--steps N|auto`` and ``--max-steps`` (shared with ``gm-audit diff``): the steps asked
    for, the cap, and the recorder's budget (``"12"``, or ``"auto:300"``: run until every watched
    line ran, then one step more, at most 300)."""
    steps = str(_option(args, config, "steps", default)).strip().lower()
    try:
        max_steps = int(_option(args, config, "max-steps", DEFAULT_MAX_STEPS))
    except (TypeError, ValueError) as exc:
        raise ProbeUsageError(f"invalid probe option: {exc}") from None
    if steps != "auto" and (not steps.isdigit() or int(steps) < 1):
        raise ProbeUsageError(f"--steps must be a positive number or 'auto', not {steps!r}")
    if max_steps < 1:
        raise ProbeUsageError("--max-steps and --timeout must be positive")
    # an explicit --steps N wins over the default cap; an explicit --max-steps caps it
    explicit_cap = getattr(args, "max_steps", None) is not None
    budget = (f"auto:{max_steps}" if steps == "auto"
              else str(min(int(steps), max_steps) if explicit_cap else int(steps)))
    return steps, max_steps, budget


def classify(outcome: RunOutcome, evidence: Evidence) -> str:
    """budget | exit | crash | timeout | interrupted | error, from the process outcome and the
    evidence."""
    if outcome.stopped in ("timeout", "interrupted", "error"):
        return outcome.stopped
    if any(r.status == "budget" for r in evidence.runs):
        return "budget"
    if outcome.exit_code not in (0, None) and (
            outcome.exit_code < 0 or any(r.status == "exception" for r in evidence.runs)):
        return "crash"
    return "exit"


def run_facts(outcome: RunOutcome, evidence: Evidence, stopped: str, opts: dict) -> dict:
    steps = evidence.total_steps
    devices = evidence.devices or (["cpu"] if opts["device"] == "cpu" else [])
    # what stopped an interrupted run is gm-audit's signal, whatever the program made of it
    errors = [r.error for r in evidence.runs if r.error and stopped != "interrupted"]
    return {
        "command": " ".join(shlex.quote(c) for c in opts["cmd"]),
        "steps": steps,
        "budget": opts["budget"],
        "device": ", ".join(devices) or "unknown",
        "world_size": evidence.world_size,
        "processes": len(evidence.docs),
        "exit": outcome.exit_code,
        "stopped": stopped,
        "seconds": round(outcome.seconds, 2),
        "error": errors[0] if errors else outcome.message,
    }


def describe(stopped: str, run: dict, opts: dict) -> str:
    n = run["steps"]
    if stopped == "budget":
        return f"stopped after {n} step(s) (step budget {opts['budget']})"
    if stopped == "timeout":
        return f"timed out after {opts['timeout']:g} s ({n} step(s) observed); every process killed"
    if stopped == "interrupted":
        return (f"{run['error']} after {n} step(s); every process stopped, the report holds what "
                "was gathered until then")
    if stopped == "error":
        return f"could not run the command: {run['error']}"
    if stopped == "crash":
        why = f": {run['error']}" if run["error"] else ""
        return f"the program crashed with exit code {run['exit']} after {n} step(s){why}"
    if run["exit"] not in (0, None):
        return f"the program exited early with code {run['exit']} after {n} step(s)"
    return f"the program finished by itself after {n} step(s)"


def reconstruction_lines(view: Optional[dict]) -> list[str]:
    """The reconstruction sample in one line (the HTML report draws it), and whether the run was
    long enough to read anything into it."""
    if not view or "target" not in view or not view["target"]:
        return []
    err, spread = point_error(view["target"], view["predicted"])
    lines = [f"reconstruction after {view['step']} step(s): {len(set(map(str, view['node'])))} "
             f"masked node(s), mean distance target→reconstruction {err:.3g} against a spread "
             f"of the targets of {spread:.3g} (as far off as the spread: scattered)"]
    if view.get("too_short"):
        lines.append(f"reconstruction: {too_short_text(view['too_short'])}")
    return lines


def text_sections(run: dict, summary: str, flow: list[dict], tail: list[str],
                  notes: list[str], recon: Optional[dict] = None) -> list[str]:
    lines = [f"probe: {summary}",
             f"probe: device {run['device']} · world size {run['world_size']} · "
             f"{run['processes']} process(es) · exit {run['exit']} · {run['seconds']:.1f} s"]
    if flow:
        lines.append(f"gradient flow at step {flow[0]['step']} (module: params with grad / "
                     "none / zero / non-finite, |grad|):")
        width = max(len(r["module"]) for r in flow)
        for r in flow:
            lines.append(f"  {r['module']:<{width}}  {r['with_grad']:>3}/{r['params']:<3} "
                         f"none {r['none']:<3} zero {r['zero']:<3} nonfinite {r['nonfinite']:<3} "
                         f"|g| {r['grad_norm']:.3g}"
                         + (f"  ({r['unreached']} unreachable from the loss)" if r["unreached"] else ""))
    lines += reconstruction_lines(recon)
    if tail and probe_failed(run):
        lines.append("last output of the program:")
        lines.extend(f"  | {t}" for t in tail)
    lines.extend(f"probe note: {n}" for n in notes)
    return lines


@contextlib.contextmanager
def progress_display(args: argparse.Namespace, title: str) -> Iterator[Optional[Callable[[float, Path], None]]]:
    """On a terminal (and without --quiet): a spinner on stderr with the elapsed time and the
    program's last output line, so a long training command is visibly alive."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status(title) as status:
        def tick(seconds: float, log: Path) -> None:
            last = tail(log, 1)
            status.update(f"{title} · {seconds:.0f}s" + (f" · {last[0][:80]}" if last else ""))

        yield tick


def run_probe_command(args: argparse.Namespace, config: Config, rules: list, fail_on: Severity) -> int:
    from auditor.discovery import PathMissing
    from auditor.static.engine import run_check

    try:
        opts = resolve_options(args, config)
    except ProbeUsageError as exc:
        raise UsageError(str(exc)) from None
    start = time.perf_counter()
    try:
        # --steps auto asks which entry points' calls reach each finding (auditor/probe/reach.py)
        static = run_check(opts["paths"], config, rules, jobs=args.jobs,
                           use_cache=not args.no_cache, need_project=opts["steps"] == "auto")
    except PathMissing as exc:
        raise UsageError(str(exc)) from None
    cwd = Path.cwd()
    watch = watch_list(static)
    run_dir = Path(tempfile.mkdtemp(prefix="gm-audit-probe-"))
    pymp = pymp_dirs()
    try:
        env = prepare(run_dir, cwd, opts["budget"], watch, opts["device"])
        cmd = _resolve_executable(opts["cmd"], env)
        with stop_programs_on_signals(), progress_display(args, f"probe: running {shlex.join(cmd)}") as tick:
            outcome = run_command(cmd, env, cwd, opts["timeout"], run_dir / "output.log", tick)
        evidence = Evidence.load(run_dir / "evidence")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        remove_new_pymp(pymp)
    stopped = classify(outcome, evidence)
    run = run_facts(outcome, evidence, stopped, opts)
    notes = list(evidence.notes)
    by_code = {r.code: r for r in rules}
    findings = decide(static.findings, evidence, by_code, notes)
    checks = select_runtime_checks(*selection(args, config))
    findings += runtime_findings(evidence, findings, by_code, checks)
    findings = as_run(findings, {r.code: r.severity for r in rules})
    findings.sort(key=Finding.sort_key)
    flow = gradient_flow(evidence)
    summary = run["summary"] = describe(stopped, run, opts)
    recon = reconstruction_view(evidence)
    report = Report(
        "probe", findings, static.errors, static.files, time.perf_counter() - start,
        extra={"run": run, "gradient_flow": flow,
               "parameter_gradients": parameter_gradients(evidence),
               "reconstruction": recon,
               "output_tail": outcome.tail if probe_failed(run) else [],
               "text_sections": text_sections(run, summary, flow, outcome.tail, notes, recon)},
    )
    if probe_failed(run) and args.format != "text":
        print(f"gm-audit probe: {summary}", file=sys.stderr)
    code = emit(report, args, fail_on)
    if stopped == "interrupted":  # the shell's convention: 130 for Ctrl-C, 143 for SIGTERM
        return 128 + stop_signal()
    if probe_failed(run) and not args.exit_zero and (code == 0 or showed_nothing(run, findings)):
        return EXIT_ERROR
    return code


def showed_nothing(run: dict, findings: list[Finding]) -> bool:
    """A failed run that never reached a training step and decided no finding (a script or
    command not found, an import error): the command could not be probed, whatever the static
    pass found, so the exit code is the error's, not the findings'."""
    return run["steps"] == 0 and not any(
        f.status in (Status.CONFIRMED, Status.RUNTIME) for f in findings)


def _resolve_executable(cmd: list[str], env: dict[str, str]) -> list[str]:
    """``python`` means the interpreter gm-audit runs in when none is on PATH."""
    if shutil.which(cmd[0], path=env.get("PATH")) is None and cmd[0] in ("python", "python3"):
        return [sys.executable, *cmd[1:]]
    return cmd

