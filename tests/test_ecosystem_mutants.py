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


def test_detach_only_where_another_gradient_reaches_the_loss(tmp_path: Path) -> None:
    # detaching the encoder's output leaves the decoder training (silent); detaching the
    # decoder's, or the single model call's, leaves the loss without a graph (a crash)
    found = _mutants(tmp_path, ENCODER_DECODER, ["GM101"])
    assert [m.description for m in found if m.operator == "gm101.detach-module-output"] == [
        "`.detach()` on `model.encoder(...)` on the loss path"]
    assert not [m for m in _mutants(tmp_path, SINGLE_SOURCE, ["GM101"])
                if m.operator == "gm101.detach-module-output"]


# one encoder run on two views of the graph, both views in the loss (CCA-SSG's shape)
TWO_VIEWS = """\
import torch
import torch.nn as nn


class TwoView(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 8)

    def forward(self, x1, x2):
        return self.enc(x1), self.enc(x2)


def main(x1, x2):
    model = TwoView()
    head = nn.Linear(8, 8)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()))
    for epoch in range(3):
        model.train()
        z1, z2 = model(x1, x2)
        p = head(z2)
        loss = (z1 @ z2.T).diagonal().sum() + p.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_no_detach_of_one_view_while_the_other_still_trains_the_module(tmp_path: Path) -> None:
    # `z1.detach()` leaves z2 carrying the same call's gradient into the loss: every parameter of
    # `model` still trains (the stop-gradient GM101 documents as valid); the head's output is
    # the loss's only way to the head, and another module still reaches the loss
    found = [m.description for m in _mutants(tmp_path, TWO_VIEWS, ["GM101"])
             if m.operator == "gm101.detach-module-output"]
    assert found == ["`.detach()` on `head(...)` on the loss path"]


def _with_norm(norm: str) -> str:
    """A model whose layer normalises with ``norm``, trained in a loop."""
    return f"""\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.{norm}(8)

    def forward(self, x):
        return self.norm(self.lin(x)).pow(2).mean()


def main(loader):
    model = Encoder()
    opt = torch.optim.Adam(model.parameters())
    for x in loader:
        model.train()
        loss = model(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_extra_forward_only_on_a_model_that_holds_batchnorm(tmp_path: Path) -> None:
    # the program model says where `model` was made and what its class builds: a BatchNorm's
    # running statistics move in the extra forward, a LayerNorm has none to move
    def extra(norm: str) -> list[str]:
        (tmp_path / norm).mkdir()
        return [m.files["train.py"].splitlines()[-1].strip()
                for m in _mutants(tmp_path / norm, _with_norm(norm), ["GM202"])]
    assert extra("BatchNorm1d") == ["model(x)"]
    assert extra("LayerNorm") == []


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


FULL_BATCH = """\
import torch
from tqdm import tqdm


def train(model, crit, g, x, y, opt, epochs, loader):
    model.train()
    epoch_iter = tqdm(range(epochs)) if epochs > 10 else range(epochs)
    for epoch in epoch_iter:
        loss = crit(model(g, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for bg, bx, by in loader:
        loss = crit(model(bg, bx), by)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_per_batch_statistics_only_where_there_are_batches(tmp_path: Path) -> None:
    # a loop over epochs of full-batch training standardises the whole dataset: no bug there
    found = [m for m in _mutants(tmp_path, FULL_BATCH, ["GM502"])
             if m.operator == "gm502.per-batch-stats"]
    assert [m.description for m in found] == ["`bx` standardised with its batch's statistics"]


def test_per_batch_statistics_of_data_not_of_embeddings(tmp_path: Path) -> None:
    # `predictor(h[u], h[v])` reads what the encoder computed in the loop: no data feature there
    program = ("import torch\nmodel, predictor = build(), head()\n"
               "opt = torch.optim.Adam(list(model.parameters()) + list(predictor.parameters()))\n"
               "for x, u, v in loader:\n    h = model(g, x)\n    out = predictor(h[u], h[v])\n"
               "    loss = out.mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    found = [m.description for m in _mutants(tmp_path, program, ["GM502"])
             if m.operator == "gm502.per-batch-stats"]
    assert found == ["`x` standardised with its batch's statistics"]


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
    assert rows["gm101.detach-module-output"] == ["3", "1", "1", "1", "0"]
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


def test_bfloat16_model_only_where_the_loss_is_not_upcast(tmp_path: Path) -> None:
    # GM301 documents a bfloat16 model whose prediction is cast back with `.float()` before the
    # loss as fine: no mutant there; a float16 model without a GradScaler stays one
    program = ("import torch\nmodel = build()\nopt = torch.optim.Adam(model.parameters())\n"
               "for x, y in loader:\n    pred = model(x)\n    loss = crit(pred{cast}, y)\n"
               "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")

    def made(cast: str, name: str) -> list[str]:
        (tmp_path / name).mkdir()
        return sorted(m.operator for m in _mutants(tmp_path / name, program.format(cast=cast), ["GM301"])
                      if m.operator.endswith("-model"))
    assert made(".float()", "upcast") == ["gm301.half-model"]
    assert made("", "plain") == ["gm301.bfloat16-model", "gm301.half-model"]


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


def test_fresh_generator_only_in_a_program_that_seeds(tmp_path: Path) -> None:
    # GM603 is about the RNG a seeding program leaves out: a fresh Generator in a script that
    # seeds nothing (while another script of the repository does) is no such bug
    loop = ("import numpy as np\nimport torch\n{seed}def fit(model, opt, loader):\n"
            "    for x in loader:\n        loss = model(x).sum()\n        opt.zero_grad()\n"
            "        loss.backward()\n        opt.step()\n"
            "if __name__ == '__main__':\n    fit(build(), make_opt(), load())\n")
    (tmp_path / "seeds.py").write_text("import torch\nif __name__ == '__main__':\n    torch.manual_seed(0)\n")

    def fresh(seed: str, name: str) -> list[str]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "seeds.py").write_text((tmp_path / "seeds.py").read_text())
        return [m.operator for m in _mutants(tmp_path / name, loop.format(seed=seed), ["GM603"])
                if m.operator == "gm603.fresh-generator"]
    assert fresh("", "unseeded") == []
    assert fresh("torch.manual_seed(0)\n", "seeded") == ["gm603.fresh-generator"]


def test_detach_prediction_only_on_a_loss_that_is_backpropagated(tmp_path: Path) -> None:
    # `test_loss` is only printed (`.item()`): detaching its prediction changes no gradient
    program = ("import torch.nn.functional as F\n"
               "def fit(model, opt, x, y, test_idx):\n    for epoch in range(10):\n"
               "        logits = model(x)\n        loss = F.cross_entropy(logits, y)\n"
               "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
               "        test_loss = F.cross_entropy(logits[test_idx], y[test_idx])\n"
               "        print(test_loss.item())\n")
    found = [(m.truth[0].line, m.description) for m in _mutants(tmp_path, program, ["GM101"])
             if m.operator == "gm101.detach-prediction"]
    assert found == [(5, "`.detach()` on the prediction of `F.cross_entropy`")]


# a GAN trainer: the discriminator's step reads the generator's sample, but its optimizer holds
# the discriminator only (the generator's gradients are cleared before its own step)
GAN = """\
import torch
import torch.nn.functional as F


class GANTrainer:
    def __init__(self, model):
        self.model = model
        self.opt_d = torch.optim.Adam(self.model.discriminator.parameters())
        self.opt_g = torch.optim.Adam(self.model.generator.parameters())

    def step(self, x, z):
        for _ in range(2):
            fake = self.model.generator.sample(z)
            real_score = self.model.discriminator(x)
            fake_score = self.model.discriminator(fake)
            d_loss = F.softplus(-real_score).mean() + F.softplus(fake_score).mean()
            self.opt_d.zero_grad()
            d_loss.backward()
            self.opt_d.step()
        for _ in range(2):
            fake = self.model.generator(z)
            g_loss = F.softplus(-self.model.discriminator(fake)).mean()
            self.opt_g.zero_grad()
            g_loss.backward()
            self.opt_g.step()
"""


def test_no_detach_where_the_stepped_optimizers_hold_other_modules(tmp_path: Path) -> None:
    # detaching the generator's sample in the discriminator's step changes nothing the
    # optimizers step: no bug (GM101 stays quiet, as the program model has it); in the
    # generator's step it is GM101's bug
    found = [m.description for m in _mutants(tmp_path, GAN, ["GM101"])
             if m.operator == "gm101.detach-module-output"]
    assert "`.detach()` on `self.model.generator.sample(...)` on the loss path" not in found
    assert "`.detach()` on `self.model.generator(...)` on the loss path" in found
