"""Reports: one module per output format, all rendering the same :class:`Report`."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from auditor.findings import FileError, Finding, Severity, Status
from auditor.static.reading import python_lines

FORMATS = ("text", "json", "sarif", "markdown", "github", "html", "concise", "gitlab")


@dataclass
class Report:
    command: str  # check | probe | diff
    findings: list[Finding]
    errors: list[FileError] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0
    # command-specific, JSON-ready sections merged into the JSON output (probe run facts, diff)
    extra: dict[str, Any] = field(default_factory=dict)
    # --show-fixes: Finding.sort_key() -> safe | unsafe, for the findings whose rule's fix
    # applies to them (auditor.fix.available_fixes); None where nothing was computed
    fix_marks: Optional[dict[tuple, str]] = None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.severity.value] = out.get(f.severity.value, 0) + 1
        return out

    def failing(self, fail_on: Severity) -> list[Finding]:
        """Findings that make the exit code 1: at or above ``fail_on`` and not refuted."""
        return [
            f for f in self.findings
            if f.severity.rank >= fail_on.rank and f.status != Status.REFUTED
        ]


def probe_failed(run: dict[str, Any]) -> bool:
    """Did a probe or diff run (``extra["run"]``) end by crash, timeout, interruption, launch
    error or an early non-zero exit, rather than by its step budget or by finishing?"""
    stopped = run.get("stopped")
    return stopped in ("crash", "timeout", "interrupted", "error") or (
        stopped == "exit" and run.get("exit") not in (0, None))


def failed_run(report: Report) -> Optional[dict[str, Any]]:
    """The run facts of a probe or diff report whose run failed (:func:`probe_failed`), else None."""
    run = (report.extra or {}).get("run")
    return run if isinstance(run, dict) and probe_failed(run) else None


def no_divergence(extra: dict[str, Any]) -> str:
    """What a diff report says when the runs did not diverge: an interrupted diff compared only
    what both runs recorded until then."""
    run = extra.get("run")
    if isinstance(run, dict) and run.get("stopped") == "interrupted":
        return "No divergence in what both runs recorded before they were interrupted."
    outcome = extra.get("outcome")
    if isinstance(outcome, dict) and isinstance(outcome.get("divergence_steps"), int):
        return (f"No divergence in the first {outcome['divergence_steps']} step(s), compared "
                "tensor by tensor (`gm-audit diff --steps auto` looks further).")
    return "The runs agree at every stage."


def render(fmt: str, report: Report, color: Optional[bool] = None, statistics: bool = False,
           show_fixes: bool = False) -> str:
    """``report`` in ``fmt``; colour, statistics and fix marks concern the text format only."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    module = importlib.import_module(f"auditor.reports.{fmt}_report")
    if fmt == "text":
        return module.render(report, color=color, statistics=statistics, show_fixes=show_fixes)
    return module.render(report)


def current_umask() -> int:
    """The process umask (reading it means setting it: set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str, text: str) -> None:
    """Readers never see a half-written report: temporary file in the same folder, then rename.

    A target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO a CI
    step reads from) is written through instead: renaming over it would replace the device or
    pipe with a plain file (as root, ``--output /dev/null`` would destroy ``/dev/null``)."""
    target = Path(path)
    if target.exists() and not target.is_file():
        with open(target, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only a run writing a file pays for it

    # a short name: the target's own may already be near NAME_MAX (255 bytes)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".gm-audit-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        # mkstemp makes the file 0600; a report or baseline is created like any file the user
        # writes (CI uploads it, colleagues read it): the mode the umask gives
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# absolute path -> (mtime_ns, size, lines): re-read when the file changes, so a long-lived process
# (tests, an editor integration) never hashes or shows a stale line
_lines: dict[str, tuple[int, int, list[str]]] = {}


def source_lines(path: str) -> list[str]:
    """The text lines of a reported file (empty when it cannot be read)."""
    target = Path(path).absolute()
    try:
        st = target.stat()
    except OSError:
        return []
    key = str(target)
    cached = _lines.get(key)
    if cached is None or cached[:2] != (st.st_mtime_ns, st.st_size):
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        cached = _lines[key] = (st.st_mtime_ns, st.st_size, python_lines(text))
    return cached[2]


def source_line(path: str, line: int) -> str:
    """The reported line's text (reports show it; fingerprints hash it)."""
    lines = source_lines(path)
    return lines[line - 1] if 0 < line <= len(lines) else ""
