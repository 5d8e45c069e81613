"""The ecosystem check's mutation operators and static score (issue 11): operators make
well-formed mutants on the fixture and the small corpus repositories, and the static score runs
end to end and prints its tables. Recall numbers are measured, not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest

from benchmarks.ecosystem import corpus, static_score
from benchmarks.ecosystem.mutators import generate, operators

# the corpus repositories small enough for CI (a few files each); the fixture always
SMALL = ("hengruizhang98+CCA-SSG", "RecLusIve-F+BGRL-dgl")
REPOS = [corpus.FIXTURE, *(r for r in SMALL if r in corpus.repositories())]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ecosystem")


@pytest.fixture(scope="module", params=REPOS)
def generated(request: pytest.FixtureRequest, scratch: Path):
    source = static_score.source_root(request.param, scratch / request.param)
    return source, generate(request.param, source, cap=2)


def test_every_rule_has_an_operator() -> None:
    assert {op.rule for op in operators()} == {f"GM{n}" for n in (
        101, 102, 103, 104, 105, 106, 201, 202, 301, 302, 401, 402, 501, 502, 503, 601, 602, 603, 604)}


def test_mutants_parse_and_truth_points_at_the_injected_code(generated) -> None:
    source, mutants = generated
    assert mutants
    for m in mutants:
        assert m.truth, m.id
        for rel, text in m.files.items():
            cst.parse_module(text)
            old, new = (source / rel).read_text(encoding="utf-8").splitlines(), text.splitlines()
            assert new != old, m.id
            lines = [t.line for t in m.truth if t.path == rel]
            assert all(0 < n <= len(new) for n in lines), m.id
            # at least one truth line holds injected text: a line the mutant made more of
            assert any(new.count(new[n - 1]) > old.count(new[n - 1]) for n in lines), m.id


def test_generation_is_deterministic(generated) -> None:
    source, mutants = generated
    again = generate(mutants[0].repo, source, cap=2)
    assert [m.id for m in again] == [m.id for m in mutants]


def test_materialise_writes_the_mutant_into_a_copy(generated, tmp_path: Path) -> None:
    source, mutants = generated
    m = mutants[0]
    dest = m.materialise(source, tmp_path / "copy")
    (rel, text), = m.files.items()
    assert (dest / rel).read_text(encoding="utf-8") == text
    m.revert(source, dest)
    assert (dest / rel).read_text(encoding="utf-8") == (source / rel).read_text(encoding="utf-8")


def test_static_score_runs_and_prints_its_tables(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "score.json"
    assert static_score.main(["--repos", corpus.FIXTURE, "--rules", "GM501", "GM602",
                              "--max-mutants", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Recall" in printed and "Benign twins" in printed
    report = json.loads(out.read_text())
    assert len(report["mutants"]) == 3
    assert all(isinstance(m["hit"], bool) and m["truth"] for m in report["mutants"])
    assert report["timing"][corpus.FIXTURE]["mutants"] == 3
