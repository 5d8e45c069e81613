"""Command line: ``gm-audit [check] PATH...``, ``probe``, ``diff``, ``rules``, ``explain``.

Exit codes: 0 nothing at or above the failing severity, 1 findings, 2 usage or internal error.
The static path never imports torch or dgl.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from auditor import __version__
from auditor.config import Config, ConfigError, load_config
from auditor.findings import Severity
from auditor.registry import RUNTIME_CHECKS, UnknownRule, all_rules, select
from auditor.reports import FORMATS, Report, render, write_atomic

COMMANDS = ("check", "probe", "diff", "rules", "explain")
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A clear one-line message for the user; exit code 2."""


def _codes(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="text", help="output format")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (atomically)")
    p.add_argument("--select", type=_codes, metavar="CODES", help="rules or prefixes, comma-separated (GM1,GM201)")
    p.add_argument("--ignore", type=_codes, metavar="CODES", default=[], help="rules or prefixes to skip")
    p.add_argument("--config", metavar="FILE", help="config file (default: [tool.gm-audit] in the nearest pyproject.toml)")
    p.add_argument("--fail-on", choices=[s.value for s in Severity], help="lowest severity that makes the exit code 1")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the on-disk cache")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="cache folder (default: $GM_AUDIT_CACHE_DIR, else .gm_audit_cache in the project)")
    p.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="parallel workers (default: all cores)")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--baseline", metavar="FILE",
                   help="report only findings whose fingerprint is not recorded in FILE")
    p.add_argument("--write-baseline", action="store_true",
                   help="record the current findings in the --baseline FILE (then none is reported)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gm-audit",
        description="Audit PyTorch + DGL GraphMAE training pipelines: static rules, a runtime "
        "probe that confirms them, and a diff against a reference script.",
    )
    parser.add_argument("--version", action="version", version=f"gm-audit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="static pass over PATH... (the default command)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument("--report-unused-ignores", action="store_true",
                       help="report `# gm-audit: ignore` comments that suppress nothing (GM001)")
    check.add_argument("--fix", action="store_true", help="apply the safe fixes in place")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff; write nothing")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix/--diff: also the fixes that change behaviour on purpose")
    common_options(check)

    probe = sub.add_parser("probe", help="run a training command under the probe: gm-audit probe -- CMD...")
    probe.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD")
    common_options(probe)
    _probe_options(probe)

    diff = sub.add_parser("diff", help='compare a reference and a candidate run: gm-audit diff "python minimal.py" "python train.py"')
    diff.add_argument("ref_cmd", metavar="REF_CMD")
    diff.add_argument("candidate_cmd", metavar="CANDIDATE_CMD")
    common_options(diff)
    _probe_options(diff)
    diff.add_argument("--seed", type=int, default=0, help="seed of every RNG at start-up (default 0)")
    diff.add_argument("--atol", type=float, default=None, help="absolute tolerance (default 1e-5)")
    diff.add_argument("--rtol", type=float, default=None, help="relative tolerance (default 1e-4)")
    diff.add_argument("--calibrate", action="store_true",
                      help="also run each command a second time and widen the tolerances to cover "
                      "its self-difference (automatic when a run used CUDA)")

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    explain = sub.add_parser("explain", help="show one rule's documentation")
    explain.add_argument("code", metavar="CODE")
    return parser


def _probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", default=None, metavar="N|auto", help="training steps to observe (default: auto)")
    p.add_argument("--max-steps", type=int, default=None, metavar="N")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None)
    p.add_argument("--paths", nargs="*", default=None, metavar="PATH", help="what the static pass covers (default: the current folder)")


def settings(args: argparse.Namespace) -> tuple[Config, list, Severity]:
    if getattr(args, "write_baseline", False) and not args.baseline:
        raise UsageError("--write-baseline needs --baseline FILE")
    start = Path(getattr(args, "paths", None) and args.paths[0] or ".")
    config = load_config(args.config, start if start.exists() else Path("."))
    try:
        chosen = select(args.select or config.select, [*config.ignore, *args.ignore])
    except UnknownRule as exc:
        raise UsageError(str(exc)) from None
    fail_on = Severity(args.fail_on) if args.fail_on else config.fail_on
    return config, chosen, fail_on


def progress_callback(args: argparse.Namespace) -> Optional[Callable[[int, int], None]]:
    """A rich progress bar on stderr, for long runs on a terminal only."""
    if args.quiet or not sys.stderr.isatty():
        return None
    state: dict = {}

    def update(done: int, total: int) -> None:
        if total < 200:
            return
        if "bar" not in state:
            from rich.progress import Progress

            bar = Progress(transient=True, console=None)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("checking", total=total)
        state["bar"].update(state["task"], completed=done)
        if done >= total:
            state["bar"].stop()

    return update


def apply_baseline(report: Report, args: argparse.Namespace) -> Report:
    """``--baseline FILE``: drop the findings it records (``--write-baseline`` records them first)."""
    if not getattr(args, "baseline", None):
        return report
    from dataclasses import replace

    from auditor.baseline import BaselineError, load_baseline, new_findings, write_baseline

    if args.write_baseline:
        write_baseline(args.baseline, report.findings)
        if not args.quiet:
            print(f"gm-audit: wrote {len(report.findings)} finding(s) to baseline {args.baseline}",
                  file=sys.stderr)
    try:
        known = load_baseline(args.baseline)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    kept = new_findings(report.findings, known)
    hidden = len(report.findings) - len(kept)
    if hidden and not args.quiet and not args.write_baseline:
        print(f"gm-audit: {hidden} finding(s) known from baseline {args.baseline} not reported",
              file=sys.stderr)
    extra = {**report.extra, "baseline": {"path": args.baseline, "known": hidden}}
    return replace(report, findings=kept, extra=extra)


def emit(report: Report, args: argparse.Namespace, fail_on: Severity) -> int:
    report = apply_baseline(report, args)
    color = {"always": True, "never": False}.get(args.color)
    if args.output:
        write_atomic(args.output, render(args.format, report, color=False))
    else:
        sys.stdout.write(render(args.format, report, color=color))
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if report.failing(fail_on) or report.errors else EXIT_CLEAN


def cmd_check(args: argparse.Namespace) -> int:
    from auditor.static.engine import run_check
    from auditor.discovery import PathMissing

    config, chosen, fail_on = settings(args)
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes needs --fix or --diff")
    try:
        result = run_check(
            args.paths, config, chosen, jobs=args.jobs, use_cache=not args.no_cache,
            report_unused_ignores=args.report_unused_ignores, progress=progress_callback(args),
            need_project=bool(args.fix or args.diff),
        )
    except PathMissing as exc:
        raise UsageError(str(exc)) from None
    if args.fix or args.diff:
        from auditor.fix import fix_command

        return fix_command(args, result, config, chosen, emit, fail_on)
    report = Report("check", result.findings, result.errors, result.files, result.seconds)
    return emit(report, args, fail_on)


def rule_rows() -> list[dict[str, str]]:
    """Every code: the rules, then the probe-only runtime checks."""
    rows = [{"code": r.code, "name": r.name, "severity": r.severity.value, "summary": r.summary,
             "fix": r.fix_safety} for r in all_rules().values()]
    rows += [{"code": code, "name": name, "severity": sev.value, "summary": f"{summary} (probe only)",
              "fix": "none"} for code, (name, sev, summary) in RUNTIME_CHECKS.items()]
    return rows


def cmd_rules(args: argparse.Namespace) -> int:
    if args.format == "json":
        import json

        print(json.dumps(rule_rows(), indent=2))
        return EXIT_CLEAN
    from rich.console import Console
    from rich.table import Table

    table = Table("code", "name", "severity", "fix", "summary", box=None, header_style="bold")
    for row in rule_rows():
        table.add_row(row["code"], row["name"], row["severity"], row["fix"], row["summary"])
    # a pipe or file gets full lines, not a table wrapped at 80 columns
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    return EXIT_CLEAN


def cmd_explain(args: argparse.Namespace) -> int:
    code = args.code.strip().upper()
    rule = all_rules().get(code)
    if rule is not None:
        text = f"# {rule.code} {rule.name} ({rule.severity.value})\n\n{rule.summary}\n\n{rule.doc.strip()}\n"
    elif code in RUNTIME_CHECKS:
        name, severity, summary = RUNTIME_CHECKS[code]
        text = (f"# {code} {name} ({severity.value})\n\n{summary}.\n\nA check of the probe "
                "(`gm-audit probe`) on the run itself: there is no static pattern to report.\n")
    else:
        raise UsageError(f"unknown rule {args.code!r} (see `gm-audit rules`)")
    from rich.console import Console
    from rich.markdown import Markdown

    if sys.stdout.isatty():
        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)
    return EXIT_CLEAN


def cmd_probe(args: argparse.Namespace) -> int:
    from auditor.probe.command import run_probe_command

    return run_probe_command(args, *settings(args), emit=emit)


def cmd_diff(args: argparse.Namespace) -> int:
    from auditor.diff.command import run_diff_command

    return run_diff_command(args, *settings(args), emit=emit)


HANDLERS = {"check": cmd_check, "probe": cmd_probe, "diff": cmd_diff, "rules": cmd_rules,
            "explain": cmd_explain}


def normalise_argv(argv: Sequence[str]) -> list[str]:
    """``gm-audit src/`` means ``gm-audit check src/``."""
    argv = list(argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    if "--version" in argv or "-h" in argv[:1] or "--help" in argv[:1]:
        return argv
    if first is None or first not in COMMANDS:
        return ["check", *argv]
    return argv


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = normalise_argv(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "debug", False):
        os.environ["GM_AUDIT_DEBUG"] = "1"
    if getattr(args, "cache_dir", None):
        from auditor.static.cache import CACHE_DIR_ENV

        os.environ[CACHE_DIR_ENV] = os.path.abspath(args.cache_dir)  # one place for every stage
    try:
        code = HANDLERS[args.command](args)
    except (UsageError, ConfigError) as exc:
        print(f"gm-audit: error: {exc}", file=sys.stderr)
        code = EXIT_ERROR
    except KeyboardInterrupt as exc:
        print(f"gm-audit: interrupted{f' ({exc})' if str(exc) else ''}", file=sys.stderr)
        code = 128 + getattr(exc, "signum", 2)  # the shell's convention: 130 for Ctrl-C, 143 SIGTERM
    except BrokenPipeError:
        code = EXIT_CLEAN
    except Exception as exc:  # never a traceback unless asked
        if getattr(args, "debug", False):
            raise
        print(f"gm-audit: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
              file=sys.stderr)
        code = EXIT_ERROR
    sys.exit(code)
