"""Draw a seeded random sample of gm-audit's findings on the whole corpus, for independent judging.

The old triage (``triage/``) was written by the sessions that changed the rules, and every miss it
showed was fixed there: it measures the training set. This sample is the other instrument: drawn
uniformly from every finding on every corpus repository (a fixed seed, so it can be drawn again),
each finding then judged from the code alone by readers who did not write the rule or its last
change, and the verdicts recorded before any rule is touched (``verdicts/``).

    python -m benchmarks.ecosystem.judged.sample --size 120 --seed 21 --out round1/sample.json
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


def revision() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=corpus.REPO,
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=120)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", type=Path, required=True, help="e.g. round2/sample.json")
    a = ap.parse_args(argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    population = all_findings()
    sample = draw(population, a.size, a.seed)
    per_repo: dict[str, int] = {}
    for f in population:
        per_repo[f["repo"]] = per_repo.get(f["repo"], 0) + 1
    a.out.write_text(json.dumps({
        "gm_audit_revision": revision(), "seed": a.seed, "population": len(population),
        "population_per_repo": per_repo, "findings": sample,
    }, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(sample)} of {len(population)} findings drawn (seed {a.seed}) -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
