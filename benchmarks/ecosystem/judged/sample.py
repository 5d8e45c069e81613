"""Draw a seeded random sample of gm-audit's findings on the whole corpus, for independent judging.

The old triage (``triage/``) was written by the sessions that changed the rules, and every miss it
showed was fixed there: it measures the training set. This sample is the other instrument: drawn
uniformly from every finding on every corpus repository (a fixed seed, so it can be drawn again),
each finding then judged from the code alone by readers who did not write the rule or its last
change, and the verdicts recorded before any rule is touched (``verdicts/``).

    python -m benchmarks.ecosystem.judged.sample --size 120 --seed 21 --out round1/sample.json

``--per-rule N`` draws up to N findings of each rule instead (uniformly within the rule): a
uniform draw is mostly the commonest rule, and a rule's precision needs its own findings judged.
The population per rule is recorded, so ``precision.py`` can weight the rules back to the whole.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from benchmarks.ecosystem import corpus



def all_findings() -> list[dict]:
    """Every finding of ``gm-audit check`` on every corpus repository, with its repository and
    the text of its line; in a stable order (repository, path, line, column, rule)."""
    out = []
    for repo in corpus.repositories():
        root = corpus.repo_path(repo)
        for f in corpus.run_check(root)["findings"]:
            out.append({"repo": repo, "rule": f["rule"], "name": f["name"],
                        "severity": f["severity"], "path": f["path"], "line": f["line"],
                        "column": f["column"], "line_text": corpus.line_text(root, f["path"], f["line"]),
                        "message": f["message"], "fix": f["fix"]})
    return sorted(out, key=lambda f: (f["repo"], f["path"], f["line"], f["column"], f["rule"]))


def draw(findings: Sequence[dict], size: int, seed: int) -> list[dict]:
    """``size`` findings drawn uniformly without replacement, numbered in drawing order."""
    chosen = random.Random(seed).sample(list(findings), min(size, len(findings)))
    return [{"id": i + 1, **f} for i, f in enumerate(chosen)]


def draw_per_rule(findings: Sequence[dict], per_rule: int, seed: int) -> list[dict]:
    """Up to ``per_rule`` findings of each rule, each rule's drawn uniformly, then shuffled so a
    reader's range holds a mix of rules; numbered in that order."""
    rng = random.Random(seed)
    chosen: list[dict] = []
    for rule in sorted({f["rule"] for f in findings}):
        own = [f for f in findings if f["rule"] == rule]
        chosen += rng.sample(own, min(per_rule, len(own)))
    rng.shuffle(chosen)
    return [{"id": i + 1, **f} for i, f in enumerate(chosen)]


def revision() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=corpus.REPO,
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=120)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--per-rule", type=int, default=0, help="stratify: up to N findings per rule")
    ap.add_argument("--out", type=Path, required=True, help="e.g. round2/sample.json")
    a = ap.parse_args(argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    population = all_findings()
    sample = (draw_per_rule(population, a.per_rule, a.seed) if a.per_rule
              else draw(population, a.size, a.seed))
    per_repo: dict[str, int] = {}
    per_rule: dict[str, int] = {}
    for f in population:
        per_repo[f["repo"]] = per_repo.get(f["repo"], 0) + 1
        per_rule[f["rule"]] = per_rule.get(f["rule"], 0) + 1
    a.out.write_text(json.dumps({
        "gm_audit_revision": revision(), "seed": a.seed, "population": len(population),
        "population_per_repo": per_repo, "population_per_rule": per_rule,
        "stratified_per_rule": a.per_rule or None, "findings": sample,
    }, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(sample)} of {len(population)} findings drawn (seed {a.seed}) -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
