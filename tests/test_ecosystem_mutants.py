"""The ecosystem check's mutation operators, oracle and static score (issue 11): operators make
well-formed mutants by syntax alone on the fixture and the small corpus repositories; the oracle
that runs them tells a live bug from a dead one; the static score runs end to end and prints its
tables. Recall numbers are measured, not asserted here."""

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


# a training loop of the usual DGL shape: graph methods and a feature-dict pop beside the model's
# encoder/decoder calls, and a loss module; the optimizer is built over the model
ENCODER_DECODER = """\
import torch


def main(g, model):
    opt = torch.optim.Adam(model.parameters())
    crit = torch.nn.MSELoss()
    for epoch in range(3):
        model.train()
        g = g.add_self_loop()
        x = g.ndata.pop("feat")
        h = model.encoder(g, x)
        out = model.decoder(g, h)
        loss = crit(out, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

# the model returns the loss's only graph through a criterion handed in as an argument
SINGLE_SOURCE = """\
import torch


def train(model, crit, g, y, opt):
    model.train()
    for step in range(3):
        loss = crit(model(g, g.ndata["feat"]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def _mutants(tmp_path: Path, program: str, rules: list[str]):
    (tmp_path / "train.py").write_text(program)
    return generate("toy", tmp_path, rules, cap=10)


def test_forward_sites_are_module_calls_not_graph_methods(tmp_path: Path) -> None:
    from benchmarks.ecosystem.mutators.base import Source
    from benchmarks.ecosystem.mutators.structure import forward_sites
    src = Source("train.py", ENCODER_DECODER)
    assert [src.code(call.func) for _, call, _ in forward_sites(src)] == ["model.decoder", "model.encoder"]


def test_eval_before_the_loop_switches_the_model_not_the_criterion(tmp_path: Path) -> None:
    found = [m for m in _mutants(tmp_path, SINGLE_SOURCE, ["GM201"]) if m.operator == "gm201.eval-before-loop"]
    assert [m.description for m in found] == ["`model` switched to eval mode before the loop"]
    assert "    model.eval()\n    for step" in found[0].files["train.py"]


def test_drop_train_only_where_an_eval_can_run_before_the_train(tmp_path: Path) -> None:
    # the model starts in training mode: removing a `.train()` that no `.eval()` precedes (the
    # only eval comes after the loop) changes nothing, so it is no mutant; an eval in the loop is
    after_only = ("import torch\nmodel = build()\nopt = torch.optim.Adam(model.parameters())\n"
                  "model.train()\nfor g in loader:\n    loss = model(g)\n    loss.backward()\n"
                  "    opt.step()\nmodel.eval()\nprint(model(g))\n")
    in_loop = ("import torch\nmodel = build()\nopt = torch.optim.Adam(model.parameters())\n"
               "for g in loader:\n    model.train()\n    loss = model(g)\n    loss.backward()\n"
               "    opt.step()\n    model.eval()\n    print(model(g))\n")

    def dropped(program: str, name: str) -> list:
        (tmp_path / name).mkdir()
        return [m for m in _mutants(tmp_path / name, program, ["GM201"])
                if m.operator == "gm201.drop-train-after-eval"]
    # every seed builds its model anew before training it: the evaluated one is never trained
    rebuilt = ("import torch\ndef fit(net, data, opt):\n    net.train()\n    for g in data:\n"
               "        loss = net(g)\n        loss.backward()\n        opt.step()\n"
               "def score(net, g):\n    net.eval()\n    return net(g)\n"
               "for seed in range(3):\n    model = build()\n"
               "    fit(model, loader, torch.optim.Adam(model.parameters()))\n    score(model, g)\n")
    assert dropped(after_only, "after") == []
    assert dropped(rebuilt, "rebuilt") == []
    assert dropped(rebuilt.replace("    model = build()\n", ""), "kept") != []
    assert [m.description for m in dropped(in_loop, "loop")] == ["`model.train()` after evaluation removed"]


def test_coverage_counts_the_repositories_each_operator_applies_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    # three repositories with the loop, one without: operators of the loop apply to 3
    for name, program in [("a", ENCODER_DECODER), ("b", ENCODER_DECODER), ("c", ENCODER_DECODER),
                          ("d", "import torch\n")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(program)
    monkeypatch.setattr(corpus, "CORPUS", tmp_path)
    assert static_score.main(["--coverage", "--repos", "a", "b", "c", "d"]) == 1
    printed = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in printed if line.startswith("gm")}
    assert rows["gm101.detach-module-output"] == ["3", "2", "2", "2", "0"]
    assert rows["gm104.drop-zero-grad"][0] == "3"
    # nothing here loads a checkpoint: no GM601 operator applies
    summary = printed[-1]
    assert summary.startswith("rules without") and "GM601" in summary and "GM104" not in summary


def test_summary_puts_static_recall_and_precision_in_one_table(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from benchmarks.ecosystem import report, summary
    static = tmp_path / "static.json"
    assert static_score.main(["--repos", corpus.FIXTURE, "--rules", "GM104",
                              "--max-mutants", "2", "--json", str(static)]) == 0
    repo = SMALL[0]
    precision = tmp_path / "precision.json"
    assert report.main([repo, "--json", str(precision)]) == 0
    capsys.readouterr()
    assert summary.main(["--static", str(static), "--precision", str(precision)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"| rule | fixture | {repo.split('+')[-1]} | all |"
    found = json.loads(static.read_text())["recall"]["GM104"][corpus.FIXTURE]
    row = next(line for line in printed if line.startswith("| GM104 |"))
    assert row.split(" | ")[1] == f"{found[0]}/{found[1]} · – · –"
    judged = json.loads(precision.read_text())["by_repo"][repo]
    for rule, counts in judged.items():
        tp, benign = counts.get("true_positive", 0), counts.get("benign", 0)
        if tp + benign:
            cell = next(line for line in printed if line.startswith(f"| {rule} |")).split(" | ")[2]
            assert cell.endswith(f" · {tp}/{tp + benign}")


def test_rebuild_copies_only_a_construction_that_does_not_read_its_own_name(tmp_path: Path) -> None:
    # `self.model = build_model(self.model)...` turns a model *name* into a model: repeated after
    # the optimizer it would build from the module, no rebuild of the same model
    program = ("import torch\nclass Trainer:\n    def __init__(self, args):\n"
               "        self.model = args.model\n"
               "        self.model = {build}\n"
               "        self.optimizer = torch.optim.Adam(self.model.parameters())\n"
               "    def train(self, loader):\n        for g in loader:\n"
               "            loss = self.model(g)\n            loss.backward()\n"
               "            self.optimizer.step()\n")

    def rebuilt(build: str, name: str) -> list[str]:
        (tmp_path / name).mkdir()
        return [m.description for m in _mutants(tmp_path / name, program.format(build=build), ["GM105"])
                if m.operator == "gm105.rebuild-after-optimizer"]
    assert rebuilt("build_model(self.model).from_args(args)", "reads") == []
    assert rebuilt("Net(args.hidden)", "fresh") == ["`self.model` built again after its optimizer"]


def test_extra_term_swamps_the_loss_and_gm402_finds_it(tmp_path: Path) -> None:
    # GM402's class is an extra term whose weight dominates (`loss + 100 * reg`); a term of
    # weight 1 is an ordinary regulariser the rule never reports, so it makes no bug mutant
    from auditor.testing import check_code
    from rules.gm402_loss_weights import LossWeights

    program = ("import torch.nn.functional as F\n"
               "def fit(model, opt, loader):\n    for x, y in loader:\n"
               "        loss = F.mse_loss(model(x), y)\n        opt.zero_grad()\n"
               "        loss.backward()\n        opt.step()\n")
    [m] = [m for m in _mutants(tmp_path, program, ["GM402"]) if m.operator == "gm402.extra-term"]
    text = m.files["train.py"]
    assert "F.mse_loss(model(x), y) + 100 * F.l1_loss(model(x), y)" in text
    found = [(f.rule, f.line) for f in check_code(text, [LossWeights]).findings]
    assert ("GM402", 4) in found and [(t.path, t.line) for t in m.truth] == [("train.py", 4)]


def test_detach_prediction_on_every_loss_even_one_only_printed(tmp_path: Path) -> None:
    # `test_loss` is only printed (`.item()`): detaching its prediction changes no gradient
    program = ("import torch.nn.functional as F\n"
               "def fit(model, opt, x, y, test_idx):\n    for epoch in range(10):\n"
               "        logits = model(x)\n        loss = F.cross_entropy(logits, y)\n"
               "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
               "        test_loss = F.cross_entropy(logits[test_idx], y[test_idx])\n"
               "        print(test_loss.item())\n")
    found = [(m.truth[0].line, m.description) for m in _mutants(tmp_path, program, ["GM101"])
             if m.operator == "gm101.detach-prediction"]
    # the printed test loss is a site too: the oracle, not the operator, finds it dead
    assert found == [(5, "`.detach()` on the prediction of `F.cross_entropy`"),
                     (9, "`.detach()` on the prediction of `F.cross_entropy`")]


def test_detach_at_every_module_call_of_the_training_step(tmp_path: Path) -> None:
    # placed by syntax: the encoder's output (the decoder still trains: a silent bug) and the
    # decoder's (the loss loses its graph: a crash) alike; the single call of a model too
    found = _mutants(tmp_path, ENCODER_DECODER, ["GM101"])
    assert sorted(m.description for m in found if m.operator == "gm101.detach-module-output") == [
        "`.detach()` on `model.decoder(...)` in the training step",
        "`.detach()` on `model.encoder(...)` in the training step"]
    (tmp_path / "single").mkdir()
    assert [m.operator for m in _mutants(tmp_path / "single", SINGLE_SOURCE, ["GM101"])
            if m.operator == "gm101.detach-module-output"] == ["gm101.detach-module-output"]


LIGHTNING = """\
import torch
import pytorch_lightning as pl


class Lit(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)

    def training_step(self, batch, batch_idx):
        g, x = batch
        h = self.net(g, x)
        return h.pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""


def test_a_lightning_training_step_is_a_training_forward(tmp_path: Path) -> None:
    found = {m.operator: m.files["train.py"] for m in _mutants(tmp_path, LIGHTNING, ["GM101", "GM102", "GM502"])}
    assert "h = self.net(g, x).detach()" in found["gm101.detach-module-output"]
    assert "with torch.no_grad():\n            h = self.net(g, x)" in found["gm102.no-grad-forward"]
    assert "x = (x - x.mean(0, keepdim=True))" in found["gm502.per-batch-stats"]


SEEDED_LOOP = """\
import dgl
import numpy as np
import torch


def fit(model, opt, loader):
    torch.manual_seed(0)
    np.random.seed(0)
    torch.backends.cudnn.deterministic = True
    norm = torch.nn.BatchNorm1d(8)
    model.train()
    for g, x in loader:
        out = model(g, x)
        loss = (out - x).pow(2).mean() + 0.1 * out.abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_seeding_flag_loss_and_graph_operators_place_by_syntax(tmp_path: Path) -> None:
    found: dict[str, list[str]] = {}
    for m in _mutants(tmp_path, SEEDED_LOOP, ["GM202", "GM401", "GM402", "GM501", "GM603", "GM604"]):
        found.setdefault(m.operator, []).append(m.description)
    assert sorted(found["gm603.drop-seed"]) == ["`np.random.seed(0)` removed", "`torch.manual_seed(0)` removed"]
    assert found["gm604.deterministic-off"] == ["`cudnn.deterministic` set to False"]
    assert found["gm202.momentum-none"] == ["`torch.nn.BatchNorm1d` built with momentum=None"]
    assert found["gm402.drop-term"] == ["the term `0.1 * out.abs().mean()` dropped from the loss"]
    assert found["gm501.self-loop-before-forward"] == ["`add_self_loop` on `g` before `model(...)`"]
    assert found["gm401.mean-method-to-sum"]


def test_no_operator_asks_gm_audit() -> None:
    # placement by syntax alone: the mutators and the oracle import nothing of gm-audit
    import re
    folder = Path(__file__).resolve().parents[1] / "benchmarks" / "ecosystem"
    for path in [*(folder / "mutators").glob("*.py"), *(folder / "oracle").glob("*.py"),
                 folder / "live_score.py"]:
        assert not re.search(r"^\s*(from|import) (auditor|rules)\b", path.read_text(), re.M), path


@pytest.fixture(scope="module")
def fixture_runs(scratch: Path):
    """The fixture's clean copy and one run of it under the oracle's recorder (2 steps)."""
    import sys

    from benchmarks.ecosystem.oracle import launch
    source = static_score.source_root(corpus.FIXTURE, scratch / "oracle")
    command = [sys.executable, "train.py", "--epochs", "1"]
    return source, command, launch.run(command, source, 2, timeout=240)


def _judged(source: Path, command: list, clean, mutant, tmp_path: Path):
    from benchmarks.ecosystem.live_score import _watch
    from benchmarks.ecosystem.oracle import launch
    from benchmarks.ecosystem.oracle.judge import judge
    work = mutant.materialise(source, tmp_path / "copy")
    run = launch.run(command, work, 2, _watch(mutant), timeout=240)
    return judge(mutant.rule, clean, clean, run)


def test_oracle_judges_a_detached_encoder_live(fixture_runs, tmp_path: Path) -> None:
    source, command, clean = fixture_runs
    assert not clean.crashed and len(clean.evidence["steps"]) == 2, clean.output
    [mutant] = [m for m in generate(corpus.FIXTURE, source, ["GM101"], cap=100)
                if m.description == "`.detach()` on `self.encoder(...)` in `reconstruct`"]
    verdict = _judged(source, command, clean, mutant, tmp_path)
    assert verdict.status == "live", verdict
    assert "got no gradient at step 1" in verdict.reason and "GraphMAE.encoder" in verdict.reason


def test_oracle_judges_a_detach_of_a_printed_value_dead(fixture_runs, tmp_path: Path) -> None:
    from benchmarks.ecosystem.mutant import Mutant, Truth
    source, command, clean = fixture_runs
    text = (source / "engine.py").read_text()
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "total += loss.item()" in t)
    mutant = Mutant("dead", corpus.FIXTURE, "test.detach-printed", "GM101", False,
                    {"engine.py": text.replace("total += loss.item()", "total += loss.detach().item()")},
                    [Truth("engine.py", line)])
    verdict = _judged(source, command, clean, mutant, tmp_path)
    assert verdict.status == "dead", verdict
    assert "which parameters got a gradient" in verdict.reason


def test_a_site_is_reached_when_the_code_beside_it_ran(tmp_path: Path) -> None:
    # `g` was defined (its `def` line ran at import) but never called: an insertion at the top
    # of its body cannot run in this run; one before `f`'s return can
    from benchmarks.ecosystem.live_score import reached
    from benchmarks.ecosystem.mutant import Mutant
    text = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    return x\n"
    (tmp_path / "m.py").write_text(text)
    ran = {"m.py": [1, 2, 3, 6]}

    def inserted(after: int) -> Mutant:
        lines = text.splitlines()
        new = [*lines[:after], "    x = x.detach()", *lines[after:]]
        return Mutant("m", "r", "op", "GM101", False, {"m.py": "\n".join(new) + "\n"})
    assert reached(inserted(2), tmp_path, ran)
    assert not reached(inserted(6), tmp_path, ran)


def test_rescore_checks_recorded_mutants_again_without_running_them(scratch: Path, tmp_path: Path) -> None:
    # the oracle's verdicts are kept; each live mutant is rebuilt from its id and checked anew
    from benchmarks.ecosystem import live_score
    source = static_score.source_root(corpus.FIXTURE, scratch / "rescore")
    [mutant] = [m for m in generate(corpus.FIXTURE, source, ["GM101"], cap=100)
                if m.description == "`.detach()` on `self.encoder(...)` in `reconstruct`"]
    recorded = {"id": mutant.id, "operator": mutant.operator, "rule": "GM101", "benign": False,
                "truth": [[t.path, t.line] for t in mutant.truth], "status": "live",
                "reason": "recorded", "static": False, "probe": None}
    never = {**recorded, "id": "fixture:never", "status": "never-ran", "static": None}
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"steps": 3, "cap": 1, "per_rule": 1, "probe": False, "pipelines": [
        {"pipeline": corpus.FIXTURE, "clean": {"files": []}, "mutants": [recorded, never]}]}))
    out = tmp_path / "again.json"
    assert live_score.main(["--rescore", str(record), "--pipeline", corpus.FIXTURE,
                            "--json", str(out)]) == 0
    [pipeline] = json.loads(out.read_text())["pipelines"]
    live, kept = pipeline["mutants"]
    assert live["status"] == "live" and live["static"] is True and live["static_findings"]
    assert kept == never
    assert "| GM101 | 2 | 1 | 1 |" in out.with_suffix(".txt").read_text()
