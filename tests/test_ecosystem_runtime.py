"""A real corpus pipeline (GraphMAE2's full-batch script) runs offline, unchanged, and trains;
the probe runs on it (issue 11, point 5). Real torch and dgl, no stand-ins for either."""

from pathlib import Path

from benchmarks.ecosystem.corpus import repo_path
from benchmarks.ecosystem.mutant import Mutant, Truth
from benchmarks.ecosystem.runtime.pipelines import PIPELINES, probe, run
from benchmarks.ecosystem.runtime_score import runnable, verdict

PIPELINE = PIPELINES["graphmae2-full-batch"]


def test_graphmae2_trains_offline_and_the_probe_runs_on_it(tmp_path: Path) -> None:
    assert repo_path(PIPELINE.repo).is_dir(), "the corpus (../shared/corpus) is needed"
    root = Mutant("clean", PIPELINE.repo, "clean", "", False, {}).materialise(
        repo_path(PIPELINE.repo), tmp_path / "copy")
    clean = run(PIPELINE, root, timeout=300)
    assert clean.exit_code == 0, clean.output[-3000:]
    assert clean.trains, clean.losses
    assert {"main_full_batch.py", "models/edcoder.py"} <= set(clean.lines)
    # line coverage, not the lines of called functions: main() runs, its checkpoint branch not
    script = (root / "main_full_batch.py").read_text(encoding="utf-8").splitlines()
    pretrain, load = (next(i for i, text in enumerate(script, 1) if needle in text)
                      for needle in ("model = pretrain(", 'torch.load("checkpoint.pt")'))
    assert pretrain in clean.lines["main_full_batch.py"]
    assert load not in clean.lines["main_full_batch.py"]

    report = probe(PIPELINE, root, timeout=300, max_steps=5)
    assert "error" not in report, report.get("error")
    assert report["run"]["stopped"] == "budget", report["run"]
    assert report["run"]["steps"] >= 5
    # every static finding on the code the run covers got a verdict from the run
    assert {f["status"] for f in report["findings"]} <= {"confirmed", "refuted", "unexercised",
                                                          "runtime", "outside", "untaken"}


STOPPER = '''class Stopper:
    def save(self, model):
        torch.save(model.state_dict(),
                   self.filename)

    def load(self, model):
        model.load_state_dict(torch.load(self.filename))


def train(loader):
    for batch in loader:
        step(batch)
'''


def test_a_mutant_inserted_in_a_block_is_picked_by_its_own_block_having_run(tmp_path: Path) -> None:
    """An inserted line runs when a statement of its own block runs: not when the ``def`` after
    it ran (the class body defines it at import) or the loop header before it."""
    (tmp_path / "stop.py").write_text(STOPPER, encoding="utf-8")
    lines = STOPPER.splitlines()

    def inserted(after: str, text: str) -> Mutant:
        n = next(i for i, line in enumerate(lines, 1) if after in line)
        new = [*lines[:n], text, *lines[n:]]
        return Mutant(f"m{n}", "repo", f"op{n}", "GM602", False, {"stop.py": "\n".join(new) + "\n"},
                      [Truth("stop.py", n + 1)])

    reload = inserted("self.filename)", "        reloaded = torch.load(self.filename)")
    # two lines, the second deeper: it runs where the first does
    first = inserted("for batch in loader", "        with torch.no_grad():\n            model(batch)")
    first.truth.append(Truth("stop.py", first.truth[0].line + 1))
    # an import ran the class and function bodies' headers only, and the loop's header
    imported = {"stop.py": {1, 2, 6, 10, 11}}
    kept, unshowable = runnable([reload, first], tmp_path, imported, cap=1)
    assert not kept and {m.id for m in unshowable} == {reload.id, first.id}
    # once the save ran (its first line) and the loop's body ran
    kept, _ = runnable([reload, first], tmp_path, {"stop.py": imported["stop.py"] | {3, 12}}, cap=1)
    assert {m.id for m in kept} == {reload.id, first.id}


def test_a_bug_the_probe_has_no_signal_for_is_counted_not_showable() -> None:
    """Showable: the probe judges the static finding at the truth line by its rule's runtime
    check, or raises the rule itself. A finding left `static` (ran, nothing to judge) and no
    finding of a rule the probe never raises are not showable; the same for a rule it raises,
    or a line the probe's run never reached, are misses."""
    def scored(rule: str, statuses: list[str], benign: bool = False) -> dict:
        mutant = Mutant("m", "repo", "op", rule, benign, {}, [Truth("train.py", 7)])
        report = {"findings": [{"rule": rule, "path": "train.py", "line": 7, "status": s}
                               for s in statuses], "run": {"stopped": "exit", "device": "cpu"}}
        return verdict(mutant, report)

    assert "nothing to judge" in scored("GM503", ["static"])["not_showable"]
    assert "never raises GM502" in scored("GM502", [])["not_showable"]
    for rule, statuses in [("GM101", []), ("GM603", ["unexercised"]), ("GM201", ["refuted"])]:
        result = scored(rule, statuses)
        assert result["not_showable"] is None and result["caught"] is None, (rule, result)
    assert scored("GM603", ["static", "confirmed"])["caught"] == "confirmed"
    assert scored("GM502", [], benign=True)["not_showable"] is None  # a twin is scored apart
