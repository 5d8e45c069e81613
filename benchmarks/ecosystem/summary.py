"""The ecosystem check in one table (issue 11, point 6): rule x corpus repository, each cell
``static recall · probe recall · precision`` from the JSON the three measurements write.

    python -m benchmarks.ecosystem.static_score --json static.json
    python -m benchmarks.ecosystem.runtime_score --output runtime.json
    python -m benchmarks.ecosystem.report --json precision.json
    python -m benchmarks.ecosystem.summary --static static.json --runtime runtime.json \
        --precision precision.json

Static recall: bug mutants found at their truth line / bug mutants. Probe recall: bug mutants
the probe confirmed (or raised) at their truth line / bug mutants probed that the run can show. Precision: findings on
the unmodified repository judged true positives / true positives plus benign. ``–``: nothing to
measure there. Several files of one kind (repositories scored in separate runs) are merged.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Optional, Sequence

from benchmarks.ecosystem.corpus import FIXTURE

Cell = list[int]  # [hits, out of]


def _load(paths: Sequence[Path]) -> list:
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


def static_cells(reports: list[dict]) -> dict[str, dict[str, Cell]]:
    cells: dict[str, dict[str, Cell]] = defaultdict(dict)
    for report in reports:
        for rule, by_repo in report["recall"].items():
            cells[rule].update(by_repo)
    return cells


def probe_cells(runs: list[list[dict]]) -> dict[str, dict[str, Cell]]:
    """A mutant probed in several files (a rule rerun on its own) counts once, as the last file
    has it; one the run cannot show (its lines never run, a cast the CPU cannot compute) is not
    counted."""
    latest: dict[tuple[str, str], dict] = {}
    for pipelines in runs:
        for score in pipelines:
            for m in score["mutants"]:
                latest[(score["repo"], m["id"])] = m
    cells: dict[str, dict[str, Cell]] = defaultdict(dict)
    for (repo, _), m in latest.items():
        if not m["benign"] and not m.get("not_showable"):
            cell = cells[m["rule"]].setdefault(repo, [0, 0])
            cell[0] += bool(m["caught"])
            cell[1] += 1
    return cells


def precision_cells(reports: list[dict]) -> dict[str, dict[str, Cell]]:
    cells: dict[str, dict[str, Cell]] = defaultdict(dict)
    for report in reports:
        for repo, by_rule in report["by_repo"].items():
            for rule, c in by_rule.items():
                tp, benign = c.get("true_positive", 0), c.get("benign", 0)
                if tp + benign:
                    cells[rule][repo] = [tp, tp + benign]
    return cells


def _fmt(cell: Optional[Cell]) -> str:
    return f"{cell[0]}/{cell[1]}" if cell else "–"


def _total(by_repo: dict[str, Cell]) -> Optional[Cell]:
    return [sum(c[0] for c in by_repo.values()), sum(c[1] for c in by_repo.values())] if by_repo else None


def table(static: dict, probe: dict, precision: dict, repos: Sequence[str]) -> str:
    short = [r.split("+")[-1] for r in repos]
    lines = ["| rule | " + " | ".join([*short, "all"]) + " |", "|---" * (len(repos) + 2) + "|"]
    for rule in sorted({*static, *probe, *precision}):
        cells = [" · ".join(_fmt(kind.get(rule, {}).get(repo)) for kind in (static, probe, precision))
                 for repo in repos]
        total = " · ".join(_fmt(_total(kind.get(rule, {}))) for kind in (static, probe, precision))
        lines.append(f"| {rule} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", type=Path, nargs="*", default=[], help="static_score --json files")
    parser.add_argument("--runtime", type=Path, nargs="*", default=[], help="runtime_score --output files")
    parser.add_argument("--precision", type=Path, nargs="*", default=[], help="report --json files")
    args = parser.parse_args(argv)
    static, probe = static_cells(_load(args.static)), probe_cells(_load(args.runtime))
    precision = precision_cells(_load(args.precision))
    seen = {repo for kind in (static, probe, precision) for by_repo in kind.values() for repo in by_repo}
    repos = [*([FIXTURE] if FIXTURE in seen else []), *sorted(seen - {FIXTURE})]
    print(table(static, probe, precision, repos))
    return 0


if __name__ == "__main__":
    sys.exit(main())
