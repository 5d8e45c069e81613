"""Static score (issue 11, point 4): recall per rule on generated mutants of each corpus
repository and the bundled fixture, and how many benign twins are flagged.

    python -m benchmarks.ecosystem.static_score [--repos R ...] [--rules GM101 ...]
                                                [--cap 3] [--max-mutants N] [--json FILE]
    python -m benchmarks.ecosystem.static_score --coverage [--repos R ...] [--rules GM101 ...]

A mutant is found when the check reports its rule at one of its truth lines, and that finding
is not one the unmodified repository already has (same rule, file and line text). A benign twin
is flagged when its rule reports there at error or warning. Speed: each repository is copied
once to a temp dir and checked once with gm-audit's per-file cache there; every mutant is then
written over that copy, checked (only the mutated file is re-analysed, the cross-file stage is
recomputed as always) and reverted.

``--coverage`` checks nothing: for each operator, the sites it finds in each repository and the
number of corpus repositories it applies to (issue 11 asks each rule for an operator that applies
to at least three); a rule without one is named, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from benchmarks.ecosystem import corpus
from benchmarks.ecosystem.mutant import Mutant, copy_tree
from benchmarks.ecosystem.mutators import generate, operators, sites

FLAGGING = ("error", "warning")


@dataclass
class Scored:
    id: str
    repo: str
    operator: str
    rule: str
    benign: bool
    hit: bool  # bug found at its truth line / benign twin flagged there
    truth: list[tuple[str, int]]
    description: str


def source_root(repo: str, scratch: Path) -> Path:
    """Where ``repo``'s unmodified code is: the corpus folder, or the fixture built in scratch."""
    if repo != corpus.FIXTURE:
        return corpus.repo_path(repo)
    dest = scratch / "fixture-source"
    subprocess.run([sys.executable, str(corpus.REPO / "fixtures" / "build.py"), "clean", str(dest)],
                   check=True, capture_output=True)
    return dest


def hit(mutant: Mutant, found: Iterable[corpus.Reported], clean: set[tuple[str, str, str]]) -> bool:
    at = {(t.path, t.line) for t in mutant.truth}
    return any(f.rule == mutant.rule and (f.path, f.line) in at and f.key not in clean
               and (not mutant.benign or f.severity in FLAGGING) for f in found)


def score_repo(repo: str, rules: Optional[Sequence[str]], cap: int,
               max_mutants: Optional[int]) -> tuple[list[Scored], dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="gm-static-") as tmp:
        scratch = Path(tmp)
        source = source_root(repo, scratch)
        start = time.perf_counter()
        mutants = generate(repo, source, rules, cap)[:max_mutants]
        generated = time.perf_counter()
        work = copy_tree(source, scratch / "work")
        clean = {f.key for f in corpus.findings(work, report=corpus.run_check(work, cache=True))}
        warmed = time.perf_counter()
        out = []
        for i, mutant in enumerate(mutants, 1):
            mutant.write(work)
            found = corpus.findings(work, report=corpus.run_check(work, cache=True))
            mutant.revert(source, work)
            out.append(Scored(mutant.id, repo, mutant.operator, mutant.rule, mutant.benign,
                              hit(mutant, found, clean), [(t.path, t.line) for t in mutant.truth],
                              mutant.description))
            # a long run (OpenHGNN: minutes per mutant on a loaded machine) shows as it goes
            print(f"  [{i}/{len(mutants)}] {mutant.id}: {'hit' if out[-1].hit else 'miss'}",
                  file=sys.stderr, flush=True)
        end = time.perf_counter()
    return out, {"generate": generated - start, "warm_check": warmed - generated,
                 "mutant_checks": end - warmed, "mutants": len(mutants)}


def tally(scored: Sequence[Scored], benign: bool) -> dict[str, dict[str, list[int]]]:
    """rule -> repo -> [hits, mutants]."""
    table: dict[str, dict[str, list[int]]] = {}
    for s in scored:
        if s.benign == benign:
            cell = table.setdefault(s.rule, {}).setdefault(s.repo, [0, 0])
            cell[0] += s.hit
            cell[1] += 1
    return table


def render(table: dict[str, dict[str, list[int]]], repos: Sequence[str], title: str) -> str:
    short = [r.split("+")[-1][:12] for r in repos]
    lines = [title, "rule   " + "".join(f"{s:>14}" for s in short) + f"{'all':>10}"]
    for rule in sorted(table):
        cells = [table[rule].get(r) for r in repos]
        total = [sum(c[0] for c in cells if c), sum(c[1] for c in cells if c)]
        lines.append(f"{rule:<7}" + "".join(f"{f'{c[0]}/{c[1]}' if c else '-':>14}" for c in cells)
                     + f"{f'{total[0]}/{total[1]}':>10}")
    return "\n".join(lines)


MIN_REPOS = 3  # corpus repositories each rule needs an operator for (issue 11's acceptance)


def coverage(repos: Sequence[str], rules: Optional[Sequence[str]]) -> dict[str, dict[str, int]]:
    """operator -> repo -> sites it finds there (before any cap)."""
    table: dict[str, dict[str, int]] = {op.name: {} for op in operators(rules)}
    with tempfile.TemporaryDirectory(prefix="gm-coverage-") as tmp:
        for repo in repos:
            for name, found in sites(repo, source_root(repo, Path(tmp)), rules).items():
                table[name][repo] = len(found)
    return table


def render_coverage(table: dict[str, dict[str, int]], repos: Sequence[str]) -> tuple[str, list[str]]:
    """The coverage table, and the rules no operator of which applies to MIN_REPOS corpus repos."""
    short = [r.split("+")[-1][:12] for r in repos]
    lines = ["Sites per operator (corpus repositories it applies to)",
             f"{'operator':<32}{'repos':>6}" + "".join(f"{s:>14}" for s in short)]
    best: dict[str, int] = {}
    for op in operators():
        if op.name not in table:
            continue
        applies = sum(1 for r in repos if r != corpus.FIXTURE and table[op.name].get(r))
        best[op.rule] = max(best.get(op.rule, 0), 0 if op.benign else applies)
        lines.append(f"{op.name:<32}{applies:>6}" + "".join(f"{table[op.name].get(r, 0):>14}" for r in repos))
    short_of = sorted(rule for rule, n in best.items() if n < MIN_REPOS)
    lines.append(f"rules without a bug operator applying to {MIN_REPOS}+ corpus repositories: "
                 + (", ".join(short_of) or "none"))
    return "\n".join(lines), short_of


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", nargs="*", help="corpus folders and/or 'fixture' (default: all)")
    parser.add_argument("--rules", nargs="*", help="rule codes (default: all)")
    parser.add_argument("--cap", type=int, default=3, help="sites per operator per repository")
    parser.add_argument("--max-mutants", type=int, help="mutants per repository at most")
    parser.add_argument("--json", type=Path, help="write every mutant's result here")
    parser.add_argument("--coverage", action="store_true",
                        help="only count each operator's sites per repository (no checks)")
    args = parser.parse_args(argv)
    repos = args.repos or [*corpus.repositories(), corpus.FIXTURE]
    if args.coverage:
        text, short_of = render_coverage(coverage(repos, args.rules), repos)
        print(text)
        return 1 if short_of else 0
    scored: list[Scored] = []
    timing = {}
    for repo in repos:
        results, timing[repo] = score_repo(repo, args.rules, args.cap, args.max_mutants)
        scored.extend(results)
        print(f"{repo}: {timing[repo]['mutants']} mutants, "
              f"{sum(timing[repo][k] for k in ('generate', 'warm_check', 'mutant_checks')):.0f} s",
              file=sys.stderr, flush=True)
    recall, benign = tally(scored, False), tally(scored, True)
    print(render(recall, repos, "Recall (bugs found at their truth line / mutants)"))
    print()
    print(render(benign, repos, "Benign twins flagged at error/warning / twins"))
    if args.json:
        args.json.write_text(json.dumps({"repos": repos, "timing": timing, "recall": recall,
                                         "benign": benign, "mutants": [asdict(s) for s in scored]},
                                        indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
