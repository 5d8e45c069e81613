"""What every command ends with: the report written (after the baseline), the exit code, and the
error a user gets in one line. Below ``cli``, ``probe.command`` and ``diff.command``, which all
use it, so none of them imports another to finish."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator

from auditor.findings import Severity
from auditor.reports import Report, render, write_atomic

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A clear one-line message for the user; exit code 2."""


@contextlib.contextmanager
def writing(path: str, what: str) -> Iterator[None]:
    """A file the user named that cannot be written (a folder, a full disk, a missing
    permission) is a one-line error, not an internal one."""
    try:
        yield
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror or exc}") from None


def apply_baseline(report: Report, args: argparse.Namespace) -> Report:
    """``--baseline FILE``: drop the findings it records (``--write-baseline`` records them first)."""
    if not getattr(args, "baseline", None):
        return report
    from dataclasses import replace

    from auditor.baseline import BaselineError, load_baseline, new_findings, write_baseline

    if args.write_baseline:
        with writing(args.baseline, "baseline"):
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
    if color is None and os.environ.get("NO_COLOR"):  # https://no-color.org: any non-empty value
        color = False
    text = {"statistics": getattr(args, "statistics", False),
            "show_fixes": getattr(args, "show_fixes", False)}
    if args.output:
        with writing(args.output, "the report to"):
            write_atomic(args.output, render(args.format, report, color=False, **text))
    else:
        sys.stdout.write(render(args.format, report, color=color, **text))
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if report.failing(fail_on) or report.errors else EXIT_CLEAN
