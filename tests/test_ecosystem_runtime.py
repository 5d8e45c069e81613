"""A real corpus pipeline (GraphMAE2's full-batch script) runs offline, unchanged, and trains;
the probe runs on it (issue 11, point 5). Real torch and dgl, no stand-ins for either."""

from pathlib import Path

from benchmarks.ecosystem.corpus import repo_path
from benchmarks.ecosystem.mutant import Mutant
from benchmarks.ecosystem.runtime.pipelines import PIPELINES, probe, run

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
