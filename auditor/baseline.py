"""``--baseline FILE``: accept today's findings, report only new ones from then on.

A baseline is a JSON file of fingerprints. A finding's fingerprint hashes its rule, its path and
the *text* of the reported line (:meth:`auditor.findings.Finding.fingerprint`), never the line
number, so inserting or deleting lines elsewhere in the file, or re-indenting the line, does not
turn a known finding into a new one. Two findings of one rule on identical lines of one file are
told apart by their order in the file (``<hash>:1``, ``<hash>:2``), as GitHub code scanning does
for its own line hashes; SARIF's ``partialFingerprints`` carry the same values.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from auditor import __version__
from auditor.findings import Finding
from auditor.reports import source_line, write_atomic
from auditor.static.reading import read_source

FORMAT_VERSION = 1
MAX_BASELINE_BYTES = 64 * 1024 * 1024  # some 200,000 findings of a few hundred bytes each


class BaselineError(ValueError):
    """The baseline file is missing or not a gm-audit baseline (a usage error, exit code 2)."""


def repository_root(start: Path) -> Path:
    """The nearest folder holding ``.git`` (else ``start``): what paths are made relative to."""
    for folder in [start, *start.parents]:
        if (folder / ".git").exists():
            return folder
    return start


def repository_path(path: str, root: Path) -> str:
    """``path`` (relative to the current folder) relative to ``root``, POSIX; unchanged outside."""
    try:
        return (Path.cwd() / path).resolve().relative_to(root).as_posix()
    except ValueError:
        return path


def fingerprints(findings: Sequence[Finding]) -> list[str]:
    """One fingerprint per finding, in the order given; duplicates numbered in file order.

    Paths are hashed relative to the repository root, so running from a subfolder
    (``cd src && gm-audit .``) gives the same fingerprints as running from the top.
    """
    root = repository_root(Path.cwd().resolve())
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    seen: Counter[str] = Counter()
    out = [""] * len(findings)
    for i in order:
        f = findings[i]
        anchored = replace(f, path=repository_path(f.path, root))
        base = anchored.fingerprint(source_line(f.path, f.line))
        seen[base] += 1
        out[i] = f"{base}:{seen[base]}"
    return out


def write_baseline(path: str, findings: Sequence[Finding]) -> None:
    """Record ``findings`` as known; readable entries so the file can be reviewed in a diff."""
    entries = [
        {"fingerprint": fp, "rule": f.rule, "path": f.path, "line": f.line, "message": f.message}
        for fp, f in sorted(zip(fingerprints(findings), findings), key=lambda p: p[1].sort_key())
    ]
    data = {
        "gm-audit-baseline": FORMAT_VERSION,
        "tool": {"name": "gm-audit", "version": __version__},
        "findings": entries,
    }
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def load_baseline(path: str) -> set[str]:
    """The fingerprints recorded in ``path``."""
    try:
        # never blocking (a FIFO), never more than the cap (/dev/zero): see read_source
        raw = read_source(Path(path), MAX_BASELINE_BYTES)
        if len(raw) > MAX_BASELINE_BYTES:
            raise BaselineError(f"baseline {path} is larger than {MAX_BASELINE_BYTES // 2**20} MiB")
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise BaselineError(
            f"baseline {path} does not exist (create it with --baseline {path} --write-baseline)"
        ) from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc}") from None
    except RecursionError:
        raise BaselineError(f"cannot read baseline {path}: JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("gm-audit-baseline") != FORMAT_VERSION:
        raise BaselineError(f"{path} is not a gm-audit baseline (version {FORMAT_VERSION})")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries
    ):
        raise BaselineError(f"{path}: `findings` must be a list of objects with a `fingerprint`")
    return {e["fingerprint"] for e in entries}


def new_findings(findings: Sequence[Finding], known: set[str]) -> list[Finding]:
    """The findings whose fingerprint is not in the baseline, in their original order."""
    return [f for f, fp in zip(findings, fingerprints(findings)) if fp not in known]
