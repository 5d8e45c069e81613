"""The committed triage of gm-audit's findings on the unmodified corpus.

One file per repository, ``triage/<repo>.json``: every finding judged by reading the code and
its callers, keyed by rule, path, line and the text of that line (the corpus is pinned at a
commit). Verdicts: ``true_positive``,
``benign``, ``debatable``; ``untriaged`` marks an entry added by ``report --update`` that a
person has still to judge.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.ecosystem.corpus import Reported

TRIAGE_DIR = Path(__file__).resolve().parent / "triage"
VERDICTS = ("true_positive", "benign", "debatable")
UNTRIAGED = "untriaged"


@dataclass
class Judgement:
    rule: str
    path: str
    line: int
    line_text: str
    severity: str
    verdict: str
    reason: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.rule, self.path, self.line, self.line_text)


def triage_file(repo: str) -> Path:
    return TRIAGE_DIR / f"{repo}.json"


def load(repo: str) -> dict[tuple[str, str, str], Judgement]:
    path = triage_file(repo)
    if not path.exists():
        return {}
    entries = json.loads(path.read_text(encoding="utf-8"))["findings"]
    judged = [Judgement(**e) for e in entries]
    for j in judged:
        if j.verdict not in (*VERDICTS, UNTRIAGED):
            raise ValueError(f"{path}: unknown verdict {j.verdict!r} for {j.key}")
    return {j.key: j for j in judged}


def save(repo: str, judgements: dict[tuple[str, str, str], Judgement]) -> None:
    ordered = sorted(judgements.values(), key=lambda j: (j.path, j.line, j.rule))
    data = {"repo": repo, "findings": [asdict(j) for j in ordered]}
    triage_file(repo).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                 encoding="utf-8")


def untriaged_entry(f: Reported) -> Judgement:
    return Judgement(f.rule, f.path, f.line, f.line_text, f.severity, UNTRIAGED, f.message)
