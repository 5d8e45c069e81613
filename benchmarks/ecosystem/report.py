"""The ecosystem report: gm-audit on every corpus repository, compared with the triage.

Prints, like a Ruff ecosystem report, the findings that are new (not in the triage) or gone (in
the triage, no longer reported: judged findings are kept, so a false alarm that comes back is
known), then precision per rule over the findings reported now, all severities (true positives
over true positives plus benign; debatable and untriaged ones are counted apart).

    python -m benchmarks.ecosystem.report            # report
    python -m benchmarks.ecosystem.report --update   # also add new findings as `untriaged`
    python -m benchmarks.ecosystem.report --json out.json  # per rule, and per rule and repo
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Optional, Sequence

from benchmarks.ecosystem import triage
from benchmarks.ecosystem.corpus import Reported, findings, repo_path, repositories


@dataclass
class RepoOutcome:
    repo: str
    reported: list[Reported]
    judged: list[triage.Judgement]  # the triage entries of the reported findings
    new: list[Reported] = field(default_factory=list)  # reported, unknown to the triage
    gone: list[triage.Judgement] = field(default_factory=list)  # triaged, no longer reported


def compare(repo: str, reported: list[Reported]) -> RepoOutcome:
    known = triage.load(repo)
    outcome = RepoOutcome(repo, reported, [])
    seen = set()
    for f in reported:
        seen.add(f.key)
        if f.key in known:
            outcome.judged.append(known[f.key])
        else:
            outcome.new.append(f)
    outcome.gone = [j for k, j in known.items() if k not in seen]
    return outcome


def precision_table(outcomes: Sequence[RepoOutcome]) -> dict[str, Counter]:
    per_rule: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        for j in o.judged:
            per_rule[j.rule][j.verdict] += 1
        for f in o.new:
            per_rule[f.rule][triage.UNTRIAGED] += 1
    return dict(sorted(per_rule.items()))


def precision(counts: Counter) -> Optional[float]:
    tp, benign = counts["true_positive"], counts["benign"]
    return tp / (tp + benign) if tp + benign else None


def render(outcomes: Sequence[RepoOutcome], verbose: bool = False) -> str:
    lines = []
    for o in outcomes:
        lines.append(f"## {o.repo}: {len(o.reported)} findings, {len(o.new)} new, "
                     f"{len(o.gone)} gone")
        lines += [f"+ {f.rule} {f.severity} {f.path}:{f.line}  {f.line_text}" for f in o.new]
        if verbose:
            lines += [f"- {j.rule} {j.severity} {j.path}:{j.line}  {j.line_text}  ({j.verdict})"
                      for j in o.gone]
        gone = Counter(f"{j.rule} {j.verdict}" for j in o.gone)
        if gone:
            lines.append("  gone: " + ", ".join(f"{k} x{n}" for k, n in sorted(gone.items())))
    lines.append("")
    lines.append(f"{'rule':<7} {'tp':>4} {'benign':>6} {'debat.':>6} {'untri.':>6} {'precision':>9}")
    table = precision_table(outcomes)
    total: Counter = Counter()
    for rule, counts in table.items():
        total.update(counts)
        lines.append(_row(rule, counts))
    lines.append(_row("all", total))
    return "\n".join(lines)


def _row(rule: str, c: Counter) -> str:
    p = precision(c)
    shown = f"{p:.0%}" if p is not None else "-"
    return (f"{rule:<7} {c['true_positive']:>4} {c['benign']:>6} {c['debatable']:>6} "
            f"{c[triage.UNTRIAGED]:>6} {shown:>9}")


def run(repos: Sequence[str]) -> list[RepoOutcome]:
    outcomes = []
    for repo in repos:
        print(f"checking {repo} ...", file=sys.stderr, flush=True)
        outcomes.append(compare(repo, findings(repo_path(repo))))
    return outcomes


def update(outcome: RepoOutcome) -> None:
    """Add the new findings as untriaged entries (a person judges them before committing)."""
    known = triage.load(outcome.repo)
    for f in outcome.new:
        known[f.key] = triage.untriaged_entry(f)
    triage.save(outcome.repo, known)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("repos", nargs="*", help="corpus folders (default: all)")
    p.add_argument("--update", action="store_true", help="add new findings as untriaged")
    p.add_argument("--json", metavar="FILE", help="also write per-rule counts as JSON")
    p.add_argument("--verbose", "-v", action="store_true", help="list every gone finding")
    args = p.parse_args(argv)
    repos = args.repos or repositories()
    if not repos:
        p.error("no corpus found (set GM_AUDIT_CORPUS)")
    outcomes = run(repos)
    print(render(outcomes, args.verbose))
    if args.update:
        for o in outcomes:
            update(o)
    if args.json:
        def counts(of: Sequence[RepoOutcome]) -> dict[str, dict]:
            return {rule: dict(c, precision=precision(c)) for rule, c in precision_table(of).items()}
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"repos": repos, "rules": counts(outcomes),
                       "by_repo": {o.repo: counts([o]) for o in outcomes}}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
