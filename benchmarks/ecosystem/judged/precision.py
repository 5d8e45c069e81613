"""Precision of gm-audit on the independently judged sample (``sample.json``, ``verdicts/``).

Each finding of the sample was judged by two readers who did not write the rules and did not see
each other's verdicts (``PROTOCOL.md``). A finding's verdict is the readers' when they agree, and
``split`` when they do not. Precision is right / (right + wrong) over the findings whose readers
agree on right or wrong; the strict figure counts every other finding (debatable, split) as not
right: right / all.

    python -m benchmarks.ecosystem.judged.precision round1 [--json OUT] [--now]

``--now`` runs gm-audit on the corpus again and keeps only the sampled findings it still reports:
the precision of today's code on the findings judged then (it cannot see new findings, which
need a new sample and new readers).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Optional, Sequence

HERE = Path(__file__).resolve().parent
VERDICTS = ("right", "wrong", "debatable")


def load(round_dir: Path) -> list[dict]:
    """A round's sampled findings (``sample.json``), each with ``readers`` (reader -> verdict,
    from ``verdicts/*.json``) and ``verdict``."""
    sample, verdicts = round_dir / "sample.json", round_dir / "verdicts"
    findings = {f["id"]: {**f, "readers": {}, "reasons": {}}
                for f in json.loads(sample.read_text(encoding="utf-8"))["findings"]}
    for path in sorted(verdicts.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for v in data["findings"]:
            if v["verdict"] not in VERDICTS:
                raise ValueError(f"{path}: unknown verdict {v['verdict']!r} for id {v['id']}")
            findings[v["id"]]["readers"][data["reader"]] = v["verdict"]
            findings[v["id"]]["reasons"][data["reader"]] = v["reason"]
    for f in findings.values():
        seen = set(f["readers"].values())
        f["verdict"] = "unjudged" if not seen else seen.pop() if len(seen) == 1 else "split"
    return sorted(findings.values(), key=lambda f: f["id"])


def figures(findings: Sequence[dict]) -> dict:
    counts = Counter(f["verdict"] for f in findings)
    decided = counts["right"] + counts["wrong"]
    return {"findings": len(findings), **{k: counts[k] for k in (*VERDICTS, "split", "unjudged")},
            "precision": round(counts["right"] / decided, 3) if decided else None,
            "strict": round(counts["right"] / len(findings), 3) if findings else None}


def agreement(findings: Sequence[dict]) -> Optional[float]:
    both = [f for f in findings if len(f["readers"]) >= 2]
    return round(sum(f["verdict"] != "split" for f in both) / len(both), 3) if both else None


def table(findings: Sequence[dict]) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for f in findings:
        groups[f["rule"]].append(f)
        groups[f"severity {f['severity']}"].append(f)
        groups[f"repo {f['repo']}"].append(f)
    return {"all": figures(findings), "reader_agreement": agreement(findings),
            **{k: figures(v) for k, v in sorted(groups.items())}}


def render(t: dict) -> str:
    rows = [f"{'group':42} {'n':>4} {'right':>5} {'wrong':>5} {'deb.':>5} {'split':>5} "
            f"{'prec.':>6} {'strict':>6}"]
    for k, v in t.items():
        if k == "reader_agreement":
            continue
        p = "-" if v["precision"] is None else f"{v['precision']:.2f}"
        rows.append(f"{k:42} {v['findings']:>4} {v['right']:>5} {v['wrong']:>5} "
                    f"{v['debatable']:>5} {v['split']:>5} {p:>6} {v['strict']:>6.2f}")
    rows.append(f"readers agreed on {t['reader_agreement']} of the findings both judged")
    return "\n".join(rows)


def still_reported(findings: Sequence[dict]) -> list[dict]:
    """The sampled findings that gm-audit still reports on the corpus (rule, file, line, text)."""
    from benchmarks.ecosystem import corpus

    now: set[tuple] = set()
    for repo in sorted({f["repo"] for f in findings}):
        root = corpus.repo_path(repo)
        now |= {(repo, r.rule, r.path, r.line, r.line_text) for r in corpus.findings(root)}
    return [f for f in findings
            if (f["repo"], f["rule"], f["path"], f["line"], f["line_text"]) in now]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("round", help="a folder beside this file: round1, round2, ...")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--now", action="store_true", help="only the findings still reported today")
    a = ap.parse_args(argv)
    findings = load(HERE / a.round)
    if a.now:
        kept = still_reported(findings)
        gone = Counter(f["verdict"] for f in findings if f not in kept)
        print(f"{len(kept)} of {len(findings)} sampled findings still reported; gone: "
              + ", ".join(f"{n} {v}" for v, n in sorted(gone.items())))
        findings = kept
    t = table(findings)
    print(render(t))
    if a.json:
        a.json.write_text(json.dumps({"table": t, "findings": findings}, indent=1,
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
