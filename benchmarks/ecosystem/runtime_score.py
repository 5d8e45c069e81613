"""Runtime score on real code (issue 11, point 5): the probe on real corpus pipelines run offline.

    python -m benchmarks.ecosystem.runtime_score [--pipeline NAME] [--rules GM101,...] [--cap 1]

For each pipeline (``runtime/pipelines.py``): the clean copy runs bare (it must train: its loss
falls) and under the probe (any finding the probe confirms or raises there is a false alarm);
then every generated mutant whose truth lines the clean run executed (line coverage of the
bare run) is probed (``--cap`` per operator: each probe is a whole run of the script). A mutant
is caught when a finding of its rule at one of its truth lines is ``confirmed``, or raised by
the probe alone (``runtime``); a benign twin so flagged is a false alarm. Not showable, and
counted apart: an operator whose every mutant sits on lines the clean run never executes, and a
low-precision mutant that crashes on CPU (DGL has no float16/bfloat16 kernels there). Prints a
table per rule and writes the whole record as JSON.

    python -m benchmarks.ecosystem.runtime_score --fixtures [VARIANT ...]

scores the bundled fixture's variants the same way (truth: each variant's ``expect`` lines; a
benign variant or the clean pipeline must get no confirmed or runtime error of any rule).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Optional

from auditor.processes import gm_audit_command
from auditor.probe.verdicts import RAISES
from benchmarks.ecosystem.corpus import REPO, repo_path
from benchmarks.ecosystem.mutant import Mutant, Truth
from benchmarks.ecosystem.mutators import generate
from benchmarks.ecosystem.runtime.pipelines import PIPELINES, Pipeline, probe, run

CAUGHT = ("confirmed", "runtime")
OUTPUT = REPO / "build" / "ecosystem" / "runtime_score.json"


def copy(mutant: Mutant, dest: Path) -> Path:
    """The corpus repository with the mutant's files written over it, at ``dest``."""
    return mutant.materialise(repo_path(mutant.repo), dest)


def verdict(mutant: Mutant, report: dict) -> dict:
    """The statuses the probe gave to findings of the mutant's rule at its truth lines."""
    truth = {(t.path, t.line) for t in mutant.truth}
    at_truth = sorted({f["status"] for f in report.get("findings", [])
                       if f["rule"] == mutant.rule and (f["path"], f["line"]) in truth})
    status = next((s for s in CAUGHT if s in at_truth), None)
    run = report.get("run") or {}
    crash = f"{run.get('error') or ''} {' '.join(report.get('output_tail') or [])}"
    why = None
    if status is None and run.get("stopped") == "crash" and CPU_PRECISION.search(crash):
        why = f"crashes on CPU in low precision ({(run.get('error') or '')[:120]})"
    elif status is None and mutant.operator in NEEDS_CUDA and "cuda" not in str(run.get("device")):
        why = NEEDS_CUDA[mutant.operator]
    elif status is None and not mutant.benign:
        why = unobservable(mutant.rule, at_truth)
    return {"not_showable": why,"id": mutant.id, "rule": mutant.rule, "operator": mutant.operator,
            "benign": mutant.benign, "description": mutant.description,
            "truth": [[t.path, t.line] for t in mutant.truth], "statuses_at_truth": at_truth,
            "caught": status, "run": report.get("run"), "error": report.get("error")}


def unobservable(rule: str, at_truth: list[str]) -> Optional[str]:
    """Why the probe cannot show a bug of ``rule`` whose truth lines ran, given the statuses of
    that rule's findings there (None: it could). The probe shows a bug through its rule's
    runtime check on the static finding at the line, or by raising the rule itself: a finding
    left ``static`` (its line ran, and the rule's check had nothing on this run to judge it by)
    and no finding of a rule the probe never raises have neither."""
    if at_truth == ["static"]:
        return f"its line ran, but the run gives {rule}'s runtime check nothing to judge it by"
    if not at_truth and rule not in RAISES:
        return f"the static pass does not flag it, and the probe never raises {rule} by itself"
    return None


def _origin(before: str, after: str, line: int) -> set[int]:
    """The 1-based lines of ``before`` where line ``line`` of ``after`` comes from: itself when
    the edit kept it, the lines it replaced, or the statements of the block the insertion sits
    in on either side of it (a line inside the inserted code too). Not a block's header: a ``def`` line runs when the module is
    imported, an ``if`` test whether or not its body runs."""
    old = before.splitlines()
    new = after.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if j1 < line <= j2:
            if tag == "equal":
                return {i1 + line - j1}
            if i2 > i1:
                return set(range(i1 + 1, i2 + 1))
            indent = _indent(new[j1])  # the block the inserted lines sit in: their first's
            return ({_sibling(old, range(i1, 0, -1), indent)}
                    | {_sibling(old, range(i1 + 1, len(old) + 1), indent)}) - {0}
    return set()


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _sibling(lines: list[str], order: Iterable[int], indent: int) -> int:
    """The first statement at ``indent`` met walking ``order`` (1-based line numbers) before
    the block ends (a line indented less); 0 when none. Blank and comment lines, deeper lines
    (nested blocks, continuations) and closing brackets are passed over: they are no statement
    of the block."""
    for n in order:
        text = lines[n - 1].strip()
        if not text or text.startswith("#") or text[0] in ")]}" or _indent(lines[n - 1]) > indent:
            continue
        return n if _indent(lines[n - 1]) == indent else 0
    return 0


def runnable(mutants: Iterable[Mutant], root: Path, ran: dict[str, set[int]],
             cap: int) -> tuple[list[Mutant], list[Mutant]]:
    """Mutants whose truth lines the clean run executed, ``cap`` per operator in the order
    ``generate`` ranked them (the same sites on every run); and, for each operator none of whose
    mutants qualifies, its first one: not showable by this run. An edit's added imports do not
    count: they run in any case."""
    kept: dict[str, list[Mutant]] = defaultdict(list)
    unshowable: dict[str, Mutant] = {}
    for m in mutants:
        if len(kept[m.operator]) >= cap:
            continue
        if m.truth and all(
                _origin((root / t.path).read_text(encoding="utf-8"), m.files[t.path], t.line)
                & ran.get(t.path, set()) for t in m.truth if t.path in m.files):
            kept[m.operator].append(m)
        else:
            unshowable.setdefault(m.operator, m)
    return ([m for ms in kept.values() for m in ms],
            [m for op, m in unshowable.items() if not kept[op]])


# a low-precision mutant that cannot run on CPU: DGL has no float16/bfloat16 kernels there, and a
# model cast alone meets float32 inputs (the crash a GPU run would give too is just as loud)
CPU_PRECISION = re.compile(r"not implemented for '(Half|BFloat16)'|(Half|BFloat16|float16)\b.*"
                           r"(not (implemented|supported))|expected scalar type (Half|BFloat16|Float)"
                           r"|(Half|BFloat16) (did not match|!=)|must have the same dtype"
                           r"|dtype.*(Half|BFloat16)|(Half|BFloat16).*dtype", re.I)
# operators whose effect needs a CUDA device: on a CPU run they change nothing
NEEDS_CUDA = {"gm301.fp16-autocast": "autocast('cuda') is disabled on a CPU-only run: nothing changes"}


def not_showable(mutant: Mutant, reason: str) -> dict:
    return {"id": mutant.id, "rule": mutant.rule, "operator": mutant.operator,
            "benign": mutant.benign, "description": mutant.description,
            "truth": [[t.path, t.line] for t in mutant.truth], "statuses_at_truth": [],
            "caught": None, "not_showable": reason, "run": None, "error": None}


def score_pipeline(pipeline: Pipeline, rules: Optional[list[str]], cap: int, max_steps: Optional[int],
                   timeout: float, log: Callable[[str], None] = print) -> dict:
    """The clean run (bare and probed) and every runnable mutant's verdict, as one record."""
    clean = Mutant(f"{pipeline.repo}:clean", pipeline.repo, "clean", "", False, {})
    with tempfile.TemporaryDirectory() as tmp:
        root = copy(clean, Path(tmp) / "clean")
        bare = run(pipeline, root, timeout)
        log(f"{pipeline.name}: clean run exit {bare.exit_code}, loss "
            + (f"{bare.losses[0]:.4f} -> {bare.losses[-1]:.4f} over {len(bare.losses)} steps"
               if bare.losses else "not found"))
        report = probe(pipeline, root, timeout, max_steps)
        mutants, skipped = runnable(generate(pipeline.repo, root, rules, cap=10_000), root,
                                    bare.lines, cap)
    clean_findings = [{k: f.get(k) for k in ("rule", "path", "line", "status", "message")}
                      for f in report.get("findings", [])]
    log(f"{pipeline.name}: probe on the clean run: {len(clean_findings)} finding(s), "
        f"{sum(f['status'] in CAUGHT for f in clean_findings)} confirmed/runtime; "
        f"{len(mutants)} mutant(s) to probe")
    results = [not_showable(m, "its truth lines never run in the clean run") for m in skipped]
    for r in results:
        log(f"  {r['id']}: not showable ({r['not_showable']})")
    for i, mutant in enumerate(mutants, 1):
        with tempfile.TemporaryDirectory() as tmp:
            result = verdict(mutant, probe(pipeline, copy(mutant, Path(tmp) / "m"), timeout, max_steps))
        log(f"  [{i}/{len(mutants)}] {mutant.id}: "
            f"{result['caught'] or ('not showable' if result['not_showable'] else 'missed')} "
            f"{result['statuses_at_truth']} ({(result['run'] or {}).get('stopped', result['error'])})")
        results.append(result)
    return {"pipeline": pipeline.name, "repo": pipeline.repo,
            "clean": {"exit": bare.exit_code, "trains": bare.trains, "losses": bare.losses,
                      "probe_run": report.get("run"), "probe_error": report.get("error"),
                      "findings": clean_findings},
            "mutants": results}


def _fixture_build():
    spec = importlib.util.spec_from_file_location("fixture_build", REPO / "fixtures" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _probe_fixture(root: Path, timeout: float) -> dict:
    proc = subprocess.run(
        [*gm_audit_command(), "probe", "--format", "json", "--no-cache", "--exit-zero",
         "--steps", "auto", "--timeout", str(timeout), "--", sys.executable, "train.py"],
        cwd=root, capture_output=True, text=True, timeout=timeout + 300)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"findings": [], "error": f"probe exit {proc.returncode}: {proc.stderr[-1500:]}"}


def score_fixtures(variants: Optional[list[str]], timeout: float,
                   log: Callable[[str], None] = print) -> dict:
    """The bundled fixture's variants under ``gm-audit probe --steps auto``, scored like the
    mutants: a bug variant is caught at its ``expect`` lines; a benign look-alike (and the clean
    pipeline) must get no confirmed or runtime error of any rule."""
    build = _fixture_build()
    names = variants or build.variant_names()
    with tempfile.TemporaryDirectory() as tmp:
        report = _probe_fixture(build.materialize(build.CLEAN, Path(tmp) / "clean"), timeout)
    clean = [{k: f.get(k) for k in ("rule", "path", "line", "status", "message", "severity")}
             for f in report.get("findings", [])]
    log(f"fixture: clean run {(report.get('run') or {}).get('summary', report.get('error'))}; "
        f"{sum(_alarm(f) for f in clean)} confirmed/runtime error(s)")
    results = []
    for i, name in enumerate(names, 1):
        meta = build.load_variant(name)
        truth = [Truth(e["file"], e["line"]) for e in meta["expect"] if e["rule"] == meta["rule"]]
        mutant = Mutant(f"fixture:{name}", "fixture", f"fixture.{name}", meta["rule"],
                        meta["kind"] != "bug", {}, truth, meta.get("description", "").strip())
        with tempfile.TemporaryDirectory() as tmp:
            report = _probe_fixture(build.materialize(name, Path(tmp) / "v"), timeout)
        result = verdict(mutant, report)
        result["alarms"] = [f"{f['rule']} {f['status']} {f['path']}:{f['line']}"
                            for f in report.get("findings", []) if _alarm(f)]
        if mutant.benign:  # a benign look-alike: any confirmed/runtime error is a false alarm
            result["caught"] = "runtime" if result["alarms"] else None
        log(f"  [{i}/{len(names)}] {name}: {result['caught'] or ('-' if mutant.benign else 'missed')} "
            f"{result['statuses_at_truth']} alarms {result['alarms']} "
            f"({(result['run'] or {}).get('stopped', result['error'])})")
        results.append(result)
    return {"pipeline": "fixture", "repo": "fixture",
            "clean": {"exit": 0, "trains": True, "losses": [], "probe_run": report.get("run"),
                      "probe_error": report.get("error"),
                      "findings": [f for f in clean if f.get("severity") == "error"]},
            "mutants": results}


def _alarm(f: dict) -> bool:
    return f.get("status") in CAUGHT and f.get("severity") == "error"


def table(scores: list[dict]) -> list[str]:
    """One row per rule: bug mutants, caught confirmed / runtime at truth, missed; benign twins
    flagged; findings the probe confirmed or raised on the clean runs."""
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for score in scores:
        for f in score["clean"]["findings"]:
            rows[f["rule"]]["clean_flagged" if f["status"] in CAUGHT else "clean_other"] += 1
        for m in score["mutants"]:
            row = rows[m["rule"]]
            if m["benign"]:
                row["twins"] += 1
                row["twins_flagged"] += bool(m["caught"])
            elif m.get("not_showable"):
                row["not_showable"] += 1
            else:
                row["mutants"] += 1
                row[m["caught"] or "missed"] += 1
    head = ("rule", "showable mutants", "confirmed", "runtime", "missed", "not showable",
            "twins", "twins flagged", "clean: confirmed/runtime", "clean: other")
    keys = ("mutants", "confirmed", "runtime", "missed", "not_showable", "twins", "twins_flagged",
            "clean_flagged", "clean_other")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rule in sorted(rows):
        lines.append("| " + " | ".join([rule, *(str(rows[rule][k]) for k in keys)]) + " |")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", action="append", choices=sorted(PIPELINES),
                        help="a pipeline to score (repeatable; default all)")
    parser.add_argument("--rules", help="comma-separated rule codes (default all)")
    parser.add_argument("--cap", type=int, default=2, help="mutants per operator and pipeline")
    parser.add_argument("--max-steps", type=int, help="the probe's step budget (default: the "
                        "pipeline's whole short run)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--fixtures", nargs="*", metavar="VARIANT",
                        help="score the bundled fixture's variants instead (all when none named)")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="JSON",
                        help="no probing: the table of earlier runs' JSON files, merged")
    args = parser.parse_args(argv)
    rules = args.rules.split(",") if args.rules else None
    if args.fixtures is not None:
        scores = [score_fixtures(args.fixtures, args.timeout)]
    elif args.merge:
        scores = [s for path in args.merge for s in json.loads(path.read_text(encoding="utf-8"))]
    else:
        scores = [score_pipeline(PIPELINES[name], rules, args.cap, args.max_steps, args.timeout)
                  for name in args.pipeline or sorted(PIPELINES)]
    print("\n".join(table(scores)))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(scores, indent=1), encoding="utf-8")
    print(f"written {args.output}")
    return 0 if all(s["clean"]["trains"] for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
