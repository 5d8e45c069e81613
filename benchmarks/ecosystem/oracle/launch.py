"""Run a command with the recorder installed in its Python process (a generated
``sitecustomize.py`` on ``PYTHONPATH``, as coverage.py measures subprocesses) and read back what
it recorded."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

RECORDER = Path(__file__).resolve().parent / "recorder.py"

_SITECUSTOMIZE = f"""\
import os
if os.environ.get("GM_ORACLE_OUT"):
    import importlib.util
    import sys
    _spec = importlib.util.spec_from_file_location("gm_oracle_recorder", {str(RECORDER)!r})
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["gm_oracle_recorder"] = _module
    _spec.loader.exec_module(_module)
"""


@dataclass
class Run:
    exit_code: int
    evidence: dict  # what the recorder wrote; empty when it wrote nothing
    output: str  # the tail of stdout and stderr
    seconds: float
    timed_out: bool = False
    watched: dict[str, list[int]] = field(default_factory=dict)

    @property
    def crashed(self) -> bool:
        """Ended by an error of its own: not stopped by the recorder, not a clean exit."""
        return self.timed_out or not self.evidence or (
            self.exit_code != 0 and not self.evidence.get("stopped"))

    def crash_reason(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        lines = [line for line in self.output.strip().splitlines() if line.strip()]
        last = lines[-1].strip() if lines else ""
        return f"exit {self.exit_code}: {last[:200]}" if last else f"exit {self.exit_code}"

    def ran(self) -> bool:
        """Some watched line executed."""
        return any(self.evidence.get("lines", {}).values())


def statement_lines(text: str, lines: Sequence[int]) -> list[int]:
    """``lines`` plus the first line of the innermost statement holding each: a line event
    fires on a statement's first line only, so a truth line inside a multi-line call is seen
    running through its statement's."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return sorted(set(lines))
    found = set(lines)
    for line in lines:
        inner = None
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
                if inner is None or node.lineno >= inner.lineno:
                    inner = node
        if inner is not None:
            found.add(inner.lineno)
    return sorted(found)


def run(command: Sequence[str], cwd: Path, steps: int, watch: Optional[dict[str, list[int]]] = None,
        timeout: float = 300, cover: bool = False) -> Run:
    """Run ``command`` in ``cwd`` for ``steps`` optimizer steps under the recorder; ``watch``:
    lines of files (relative to ``cwd``) whose execution is reported; ``cover``: every line
    run in the files under ``cwd`` is reported instead (slower)."""
    watch = watch or {}
    with tempfile.TemporaryDirectory(prefix="gm-oracle-") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
        out = Path(tmp) / "evidence.json"
        full = {**os.environ,
                "PYTHONPATH": os.pathsep.join([tmp, *filter(None, [os.environ.get("PYTHONPATH")])]),
                "GM_ORACLE_OUT": str(out), "GM_ORACLE_STEPS": str(steps),
                "GM_ORACLE_ROOT": str(cwd.resolve()),
                "GM_ORACLE_COVER": "1" if cover else "0",
                "GM_ORACLE_WATCH": json.dumps({str((cwd / k).resolve()): v for k, v in watch.items()}),
                # a rewritten file must never run as a stale .pyc of the clean one
                "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
        start = time.perf_counter()
        try:
            proc = subprocess.run(list(command), cwd=cwd, env=full, capture_output=True, text=True,
                                  timeout=timeout)
            code, output, timed_out = proc.returncode, proc.stdout + proc.stderr, False
        except subprocess.TimeoutExpired as exc:
            code, timed_out = -9, True
            output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                             for x in (exc.stdout, exc.stderr))
        seconds = time.perf_counter() - start
        evidence = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    # the recorder reports real paths: back to paths relative to the copy
    root = str(cwd.resolve()) + os.sep
    if evidence:
        evidence["lines"] = {k[len(root):].replace(os.sep, "/") if k.startswith(root) else k: v
                             for k, v in evidence["lines"].items()}
    return Run(code, evidence, output[-4000:], seconds, timed_out, watch)
