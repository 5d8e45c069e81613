"""Where the real-code corpus lies and how gm-audit is run on it.

The corpus (``../shared/corpus/``, one folder per repository) is read in place and never copied
into this repository. ``GM_AUDIT_CORPUS`` points elsewhere. gm-audit runs as a user would, in a
subprocess through its console entry point, with the cache off (the corpus may be read-only).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from auditor.processes import gm_audit_command

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("GM_AUDIT_CORPUS", REPO.parent / "shared" / "corpus"))
FIXTURE = "fixture"  # the bundled clean pipeline, scored beside the corpus repositories
# seconds one `gm-audit check` of a repository may take (OpenHGNN's 336 files need more than the
# default on a loaded machine)
CHECK_TIMEOUT = float(os.environ.get("GM_ECOSYSTEM_CHECK_TIMEOUT", "900"))


def repositories() -> list[str]:
    """Corpus folder names (``owner+name``), sorted; empty when the corpus is absent."""
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("."))


def repo_path(name: str) -> Path:
    return CORPUS / name


@dataclass(frozen=True)
class Reported:
    """One finding as the JSON report gives it, plus the stripped text of its line."""

    rule: str
    severity: str
    path: str
    line: int
    line_text: str
    message: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        """What identifies a finding across runs: rule, file, line and its text (the corpus is
        pinned at a commit; the text makes a moved line a new finding, not a wrong match)."""
        return (self.rule, self.path, self.line, self.line_text)


def line_text(root: Path, path: str, line: int) -> str:
    try:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def run_check(root: Path, extra: Sequence[str] = (), timeout: Optional[float] = None,
              cache: bool = False) -> dict:
    """``gm-audit check .`` in ``root``; the parsed JSON report. ``cache`` keeps gm-audit's
    per-file cache in ``root`` (only for writable copies: the corpus itself may be read-only)."""
    proc = subprocess.run(
        [*gm_audit_command(), "check", ".", "--format", "json",
         *(() if cache else ("--no-cache",)), "--exit-zero", "--quiet", *extra],
        cwd=root, capture_output=True, text=True, timeout=timeout or CHECK_TIMEOUT,
        env={**os.environ, "GM_AUDIT_DEBUG": ""},
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"gm-audit check failed in {root} (exit {proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def findings(root: Path, extra: Sequence[str] = (), report: Optional[dict] = None) -> list[Reported]:
    """The findings of ``gm-audit check`` on ``root``, with their line texts."""
    report = report if report is not None else run_check(root, extra)
    return [
        Reported(f["rule"], f["severity"], f["path"], f["line"],
                 line_text(root, f["path"], f["line"]), f["message"])
        for f in sorted(report["findings"], key=lambda f: (f["path"], f["line"], f["column"]))
    ]
