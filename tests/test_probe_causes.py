"""Runtime observations reported at the line that caused them, with the right diagnosis: each case
a small program of its own, run by `gm-audit probe`."""

from __future__ import annotations

import sys

import pytest

from tests.test_probe import by_rule, probe, write

PY = sys.executable
pytest.importorskip("torch")

NET = """
import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 16)
        self.dec = nn.Linear(16, 6)

    def forward(self, x):
        return self.dec(torch.relu(self.enc(x)))
"""

LOOP = """
def train(model, opt, steps=12):
    for step in range(steps):
        x = torch.randn(32, 6)
        loss = F.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def run_net(cli, tmp_path, head: str, setup: str = "", steps: int = 3) -> tuple[str, dict]:
    """``head`` (the model and the loop), then ``setup`` between building the model and
    training it with SGD, as train.py under the probe: the program's text and the JSON report."""
    train = head + "\ntorch.manual_seed(0)\nmodel = Net()\n" + setup + \
        "train(model, torch.optim.SGD(model.parameters(), lr=0.01))\n"
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", str(steps)))
    return train, data


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def at(data: dict, rule: str, path: str, line: int) -> list[dict]:
    return [f for f in by_rule(data, rule) if f["path"] == path and f["line"] == line
            and f["status"] in ("confirmed", "runtime")]


def errors(data: dict, rule: str) -> list[dict]:
    return [f for f in by_rule(data, rule) if f["status"] in ("confirmed", "runtime")]


def test_eval_in_a_helper_is_reported_at_the_eval_with_its_caller(cli, tmp_path):
    validate = """
    import torch

    def validate(model):
        model.eval()
        with torch.no_grad():
            return float(model(torch.randn(8, 6)).pow(2).mean())
    """
    train = NET + LOOP.replace("        opt.step()\n", "        opt.step()\n"
                               "        if step % 3 == 2:\n"
                               "            validate(model)\n") + """
from validate import validate
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"validate.py": validate, "train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "8"))
    found = at(data, "GM201", "validate.py", 5)
    assert found, data["findings"]
    ev = " ".join(found[0]["evidence"])
    assert f"called from train.py:{line_of(train, 'validate(model)')}" in ev
    assert "ran in eval" in " ".join(found[0]["evidence"]) or "training=False" in ev
    # the backward line is evidence, not a location
    assert not at(data, "GM201", "train.py", line_of(train, "loss.backward()"))


def test_frozen_encoder_is_gm103_at_requires_grad(cli, tmp_path):
    train, data = run_net(cli, tmp_path, NET + LOOP, """\
model.enc.requires_grad_(False)
""")
    assert at(data, "GM103", "train.py", line_of(train, "requires_grad_(False)")), data["findings"]
    assert not errors(data, "GM102") and not errors(data, "GM101")


def test_an_evaluation_under_no_grad_between_steps_is_no_cause_of_missing_gradients(cli, tmp_path):
    # the training step runs the model through its methods (never its own __call__), and an
    # evaluation of the whole model under no_grad runs before each step: the frozen encoder is
    # GM103 at the freeze, not gradients disabled at the evaluation
    net = NET + """
    def encode(self, x):
        return torch.relu(self.enc(x))

    def decode(self, h):
        return self.dec(h)
"""
    loop = """
@torch.no_grad()
def evaluate(model):
    return F.mse_loss(model(torch.randn(8, 6)), torch.zeros(8, 6)).item()

def train(model, opt, steps=12):
    for step in range(steps):
        evaluate(model)
        x = torch.randn(32, 6)
        loss = F.mse_loss(model.decode(model.encode(x)), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    train, data = run_net(cli, tmp_path, net + loop, "model.enc.requires_grad_(False)\n")
    assert at(data, "GM103", "train.py", line_of(train, "requires_grad_(False)")), data["findings"]
    assert not errors(data, "GM102"), data["findings"]


def test_frozen_by_attribute_is_gm103_at_the_assignment(cli, tmp_path):
    train, data = run_net(cli, tmp_path, NET + LOOP, """\
for p in model.enc.parameters():
    p.requires_grad = False
""")
    assert at(data, "GM103", "train.py", line_of(train, "p.requires_grad = False")), data["findings"]


def test_detach_is_gm101_at_the_detach(cli, tmp_path):
    net = NET.replace("torch.relu(self.enc(x))", "torch.relu(self.enc(x)).detach()")
    train, data = run_net(cli, tmp_path, net + LOOP)
    assert at(data, "GM101", "train.py", line_of(train, ".detach()")), data["findings"]
    assert not errors(data, "GM102") and not errors(data, "GM103")


def test_no_grad_around_part_of_the_forward_is_gm102_at_the_swallowed_forward(cli, tmp_path):
    train = NET.replace("        return self.dec(torch.relu(self.enc(x)))",
                        "        with torch.no_grad():\n"
                        "            h = torch.relu(self.enc(x))\n"
                        "        return self.dec(h)") + LOOP + """
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    # the statement to move out of the block, as the static finding names it
    assert at(data, "GM102", "train.py", line_of(train, "h = torch.relu(self.enc(x))")), data["findings"]
    assert len(errors(data, "GM102")) == 1, data["findings"]
    # (the static pass also flags the module call under no_grad as GM101: a static matter)
    runtime = [f["rule"] for f in data["findings"] if f["status"] == "runtime"]
    assert "GM101" not in runtime and "GM103" not in runtime


def test_no_grad_block_is_gm102_at_the_forward_it_swallows_not_at_the_block(cli, tmp_path):
    # the block opens two statements above the forward it swallows: the run names that
    # forward (the statement to move out), as the static finding does; the static pass is
    # kept off this file, so what is reported is the run's own finding
    train = NET.replace("        return self.dec(torch.relu(self.enc(x)))",
                        "        with torch.no_grad():\n"
                        "            noise = torch.zeros_like(x)\n"
                        "            h = torch.relu(self.enc(x + noise))\n"
                        "        return self.dec(h)") + LOOP + """
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"train.py": train, "other.py": "\n"})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3", "--paths", "other.py"))
    assert [(f["line"], f["status"]) for f in errors(data, "GM102")] == \
        [(line_of(train, "h = torch.relu(self.enc("), "runtime")], data["findings"]


@pytest.mark.parametrize("groups", ["trainable", "all"])
def test_frozen_ema_teacher_and_unused_mask_token_are_no_errors(cli, tmp_path, groups):
    # the optimizer holds only the trainable parameters, or all of them (GraphMAE2 does that:
    # its EMA teacher is never stepped, having no gradient, and is updated by copy)
    params = {"trainable": "[p for p in model.parameters() if p.requires_grad]",
              "all": "model.parameters()"}[groups]
    train = """
import copy
import torch, torch.nn as nn, torch.nn.functional as F

class Student(nn.Module):
    def __init__(self, use_mask_token=False):
        super().__init__()
        self.enc = nn.Linear(6, 16)
        self.dec = nn.Linear(16, 6)
        self.mask_token = nn.Parameter(torch.zeros(1, 6))
        self.use_mask_token = use_mask_token
        self.teacher = copy.deepcopy(self.enc)
        for p in self.teacher.parameters():
            p.requires_grad = False

    def forward(self, x):
        if self.use_mask_token:
            x = x + self.mask_token
        h = self.enc(x)
        with torch.no_grad():
            target = self.teacher(x)
        return F.mse_loss(self.dec(h), x) + F.mse_loss(h, target)

torch.manual_seed(0)
model = Student()
opt = torch.optim.Adam(PARAMS, lr=1e-2)
for step in range(10):
    loss = model(torch.randn(32, 6))
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():  # EMA update by copy
        for t, s in zip(model.teacher.parameters(), model.enc.parameters()):
            t.mul_(0.9).add_(0.1 * s)
""".replace("PARAMS", params)
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    for rule in ("GM101", "GM102", "GM103", "GM105"):
        assert not errors(data, rule), (rule, data["findings"])
    assert data["run"]["steps"] == 4


def test_model_rebuilt_after_the_optimizer_is_gm105_at_the_rebuild(cli, tmp_path):
    train = NET + LOOP + """
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model = Net()  # rebuilt: opt still holds the first instance's parameters
train(model, opt)
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    found = at(data, "GM105", "train.py", line_of(train, "rebuilt:"))
    assert found, data["findings"]
    # a static finding there is confirmed by the rule itself; a runtime one names the order
    assert found[0]["status"] == "confirmed" or any("built after the SGD" in e
                                                    for e in found[0]["evidence"])
    assert not at(data, "GM105", "train.py", line_of(train, "opt.step()"))


def test_second_add_self_loop_is_gm501_at_that_call(cli, tmp_path):
    pytest.importorskip("dgl")
    train = """
import dgl, torch, torch.nn as nn, torch.nn.functional as F
from dgl.nn import GraphConv

def build():
    g = dgl.graph((torch.arange(9), torch.arange(1, 10)), num_nodes=10)
    return dgl.add_self_loop(g)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GraphConv(4, 4)

    def forward(self, g, x):
        return self.conv(g, x)

torch.manual_seed(0)
g = build()
g = dgl.add_self_loop(g)  # again
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    x = torch.randn(10, 4)
    loss = F.mse_loss(model(g, x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    assert at(data, "GM501", "train.py", line_of(train, "# again")), data["findings"]
    assert not at(data, "GM501", "train.py", line_of(train, "return dgl.add_self_loop"))


@pytest.mark.parametrize("keys", ["match", "partial"])
def test_strict_false_is_refuted_when_every_key_matched(cli, tmp_path, keys):
    # a restore of the model's own weights: every key matches, nothing replaced; a partial
    # checkpoint of another instance leaves the decoder at its fresh initialisation
    save = "sd = {k: v for k, v in Net().state_dict().items() if k.startswith('enc')}\n" \
        if keys == "partial" else ""
    train = NET + LOOP + f"""
torch.manual_seed(0)
model = Net()
sd = model.state_dict()
{save}torch.save(sd, "ckpt.pt")
model.load_state_dict(torch.load("ckpt.pt", weights_only=True), strict=False)
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    line = line_of(train, "strict=False")
    gm601 = [f for f in by_rule(data, "GM601") if f["line"] == line]
    assert gm601, data["findings"]
    assert gm601[0]["status"] == ("refuted" if keys == "match" else "confirmed"), gm601


@pytest.mark.parametrize("when", ["warm-start", "restore"])
def test_a_warm_start_is_judged_by_the_loaded_models_own_training(cli, tmp_path, when):
    # a helper trains another model to make the checkpoint first (steps before the load): the
    # load still precedes the fresh model's training, and replaces its weights; loaded after
    # that model's own steps, the same weights are a restore
    train = NET + LOOP + """
torch.manual_seed(0)
helper = Net()
train(helper, torch.optim.SGD(helper.parameters(), lr=0.01), steps=3)
torch.save(helper.state_dict(), "ckpt.pt")
del helper
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
""" + ("train(model, opt, steps=3)\n" if when == "restore" else "") + """\
model.load_state_dict(torch.load("ckpt.pt", weights_only=True), strict=False)
""" + ("torch.save(model.state_dict(), 'final.pt')\n" if when == "restore" else "train(model, opt, steps=3)\n")
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "8"))
    found = at(data, "GM601", "train.py", line_of(train, "strict=False"))
    if when == "warm-start":
        assert found and found[0]["status"] == "confirmed", data["findings"]
        assert any("replaced" in e for e in found[0]["evidence"]), found
    else:
        assert all(f["status"] != "confirmed" for f in found), found


@pytest.mark.parametrize("drop", ["bias", "dec."])
def test_strict_false_load_that_skips_part_of_a_module_is_gm601_at_the_load(cli, tmp_path, drop):
    # biases cut from the checkpoint leave every layer half loaded, an error; a whole module
    # left out (a new head for fine-tuning) is what strict=False is for
    keep = "not k.endswith('bias')" if drop == "bias" else "not k.startswith('dec.')"
    train = NET + LOOP + f"""
torch.manual_seed(0)
model = Net()
options = {{"strict": False}}
sd = {{k: v for k, v in Net().state_dict().items() if {keep}}}
model.load_state_dict(sd, **options)
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    found = at(data, "GM601", "train.py", line_of(train, "**options"))
    if drop == "bias":
        assert found and any("whose other keys" in e and "enc.bias" in " ".join(f["evidence"])
                             for f in found for e in f["evidence"]), data["findings"]
    else:  # the rule may still judge the warm start itself; the cut-short signal stays quiet
        assert not any("whose other keys" in " ".join(f["evidence"]) for f in errors(data, "GM601"))


def test_findings_in_modules_never_imported_are_outside_and_do_not_hold_auto(cli, tmp_path):
    other = """
    import torch

    def restore(model, path):
        model.load_state_dict(torch.load(path))
    """
    train = NET + LOOP.replace("steps=12", "steps=400") + """
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"other_entry.py": other, "train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "auto", "--max-steps", "60"))
    assert data["run"]["stopped"] == "budget" and data["run"]["steps"] < 60, data["run"]
    outside = [f for f in data["findings"] if f["path"] == "other_entry.py"]
    assert outside and all(f["status"] == "outside" for f in outside), outside


def test_lines_this_run_will_not_reach_are_untaken_and_do_not_hold_auto(cli, tmp_path):
    """A load only another script's calls reach, and one in an `if resume:` that this run's
    once-run main decided false, are `untaken` and do not hold --steps auto; a load in a branch
    of the loop whose test changes every step (`step == 7`) is waited for."""
    loaders = """
    import torch

    def restore(model, path):
        model.load_state_dict(torch.load(path))

    def restore_for_eval(model, path):
        model.load_state_dict(torch.load(path))
    """
    evaluate = """
    from loaders import restore_for_eval
    if __name__ == "__main__":
        restore_for_eval(None, "ckpt.pt")
    """
    train = NET + """
import sys
from loaders import restore

def main(resume):
    torch.manual_seed(0)
    model = Net()
    torch.save(model.state_dict(), "ckpt.pt")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(400):
        if resume:
            restore(model, "ckpt.pt")
        if step == 7:
            model.load_state_dict(torch.load("ckpt.pt"))
        loss = F.mse_loss(model(torch.randn(32, 6)), torch.zeros(32, 6))
        opt.zero_grad()
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main(resume="--resume" in sys.argv)
"""
    write(tmp_path, {"loaders.py": loaders, "evaluate.py": evaluate, "train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "auto", "--max-steps", "60"))
    assert data["run"]["stopped"] == "budget" and 8 <= data["run"]["steps"] < 20, data["run"]
    status = {(f["path"], f["line"]): f for f in by_rule(data, "GM602")}
    load_line = line_of(loaders, "torch.load")
    assert status[("loaders.py", load_line)]["status"] == "untaken", status
    assert "evaluate.py" in status[("loaders.py", load_line + 3)]["evidence"][-1], status
    assert status[("loaders.py", load_line + 3)]["status"] == "untaken", status
    in_loop = status[("train.py", line_of(train, "if step == 7") + 1)]
    assert in_loop["status"] not in ("untaken", "unexercised", "refuted"), in_loop


def test_gradients_accumulating_without_zero_grad_are_gm104(cli, tmp_path):
    train, data = run_net(cli, tmp_path, NET + LOOP.replace("        opt.zero_grad()\n", ""))
    assert errors(data, "GM104"), data["findings"]


def test_zero_grad_each_step_is_no_gm104(cli, tmp_path):
    train, data = run_net(cli, tmp_path, NET + LOOP)
    assert not errors(data, "GM104") and not errors(data, "GM402"), data["findings"]


def test_loss_term_weighted_zero_is_gm402(cli, tmp_path):
    train = """
import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 16)
        self.dec = nn.Linear(16, 6)
        self.aux = nn.Linear(16, 6)

    def forward(self, x):
        h = torch.relu(self.enc(x))
        return self.dec(h), self.aux(h)

W_AUX = 0.0
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(12):
    x = torch.randn(32, 6)
    rec, aux = model(x)
    loss = F.mse_loss(rec, x) + W_AUX * aux.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    found = errors(data, "GM402")
    assert found and any("aux.weight" in e for f in found for e in f["evidence"]), data["findings"]


SKIP_NET = """
import torch, torch.nn as nn, torch.nn.functional as F

class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.skip = nn.Linear(6, 6, bias=False)  # alone in its module

    def forward(self, x, mask):
        hidden = x.clone()
        hidden[mask] = 0.0  # re-masked: the skip sees zeros on exactly the rows the loss reads
        return self.fc(x) + self.skip(hidden)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Layer()
        self.aux = nn.Linear(6, 6, bias=False)

    def forward(self, x, mask):
        return self.layer(x, mask), self.aux(x)

W_AUX = {w_aux}
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    x = torch.randn(32, 6)
    mask = torch.arange(32) % 2 == 0
    out, aux = model(x, mask)
    loss = F.mse_loss(out[mask], x[mask]) + W_AUX * aux.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("w_aux", ["0.0", "0.5"])
def test_a_zero_gradient_of_a_lone_parameter_is_judged_by_its_enclosing_module(cli, tmp_path, w_aux):
    # `layer.skip.weight` gets no gradient (its input is zero on the rows the loss reads) while
    # `layer.fc` does: that is the layer's arithmetic, not a term weighted 0. `aux`, alone in
    # the model beside `layer`, gets none only when its term is weighted 0
    write(tmp_path, {"train.py": SKIP_NET.replace("{w_aux}", w_aux)})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    evidence = [e for f in errors(data, "GM402") for e in f["evidence"]]
    assert not any("skip.weight" in e for e in evidence), data["findings"]
    assert any("aux.weight" in e for e in evidence) == (w_aux == "0.0"), data["findings"]


def test_cuda_autocast_on_a_cpu_run_is_not_refuted(cli, tmp_path):
    # torch disables autocast('cuda') when there is no CUDA device: the float32 loss this run
    # sees acquits nothing of the GPU run the line was written for
    train, data = run_net(cli, tmp_path, NET + LOOP.replace(
        "        loss = F.mse_loss(model(x), x)\n",
        "        with torch.autocast('cuda', dtype=torch.float16):\n"
        "            loss = F.mse_loss(model(x), x)\n"), steps=3)
    gm301 = [f for f in by_rule(data, "GM301") if f["line"] == line_of(train, "autocast(")]
    assert gm301 and gm301[0]["status"] != "refuted", data["findings"]


def test_prediction_cast_to_low_precision_is_gm301_at_the_loss(cli, tmp_path):
    train = NET.replace("return self.dec(torch.relu(self.enc(x)))",
                        "return self.dec(torch.relu(self.enc(x))).bfloat16()") + """
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(12):
    x = torch.randn(32, 6)
    loss = F.mse_loss(model(x).float(), x) + F.l1_loss(model(x), x.bfloat16()).float()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    assert at(data, "GM301", "train.py", line_of(train, "F.l1_loss")), data["findings"]


def test_model_cast_to_bfloat16_is_gm301_at_the_cast(cli, tmp_path):
    # (CPU has no bfloat16 mse_loss kernel: the error written out)
    loop = LOOP.replace("x = torch.randn(32, 6)", "x = torch.randn(32, 6, dtype=torch.bfloat16)") \
        .replace("F.mse_loss(model(x), x)", "(model(x) - x).pow(2).mean()")
    train, data = run_net(cli, tmp_path, NET + loop, """\
model = model.to(torch.bfloat16)
""")
    assert at(data, "GM301", "train.py", line_of(train, "model.to(torch.bfloat16)")), \
        data["findings"]
    assert not at(data, "GM301", "train.py", line_of(train, "loss.backward()"))



MAE = """
import torch, torch.nn as nn


class MAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(torch.zeros(1, 6))
        self.enc = nn.Linear(6, 16)
        self.dec = nn.Linear(16, 6)

    def forward(self, x, mask):
        h = torch.where(mask[:, None], self.token.expand_as(x), x)
        return self.dec(torch.relu(self.enc(h)))


def train(model, opt, steps=12):
    crit = nn.MSELoss(reduction="sum")
    for step in range(steps):
        x = torch.randn(200, 6)
        mask = torch.rand(200) < (0.2 + 0.6 * (step % 2))  # masked nodes: about 40, then 160
        recon = model(x, mask)
        err = (recon[mask] - x[mask]).pow(2).mean(1)
        loss = err.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


torch.manual_seed(0)
model = MAE()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""


@pytest.mark.parametrize("body, cause, status", [
    # summed over the masked nodes: the loss grows with their number
    ("", "err.sum()", "confirmed"),
    # nn.MSELoss(reduction="sum"): at the module's construction, where the reduction is chosen
    ("        loss = crit(recon[mask], x[mask])\n", 'reduction="sum"', "confirmed"),
    # the sum scaled by one over the count on its own line: a mean
    ("        err = (recon[mask] - x[mask]).pow(2).mean(1)\n        inv_n = 1.0 / len(err)\n"
     "        loss = err.sum() * inv_n\n", "err.sum()", "refuted"),
    # each row divided by the count before the sum: a mean that looks like a sum
    ("        err = (recon[mask] - x[mask]).pow(2).mean(1) / int(mask.sum())\n"
     "        loss = err.sum()\n", "err.sum()", "refuted"),
])
def test_sum_reduction_over_masked_nodes_is_gm401_at_the_sum(cli, tmp_path, body, cause,
                                                            status):
    train = MAE.replace("        err = (recon[mask] - x[mask]).pow(2).mean(1)\n        loss = err.sum()\n",
                        body) if body else MAE
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    line = line_of(train, cause)
    found = [f for f in by_rule(data, "GM401") if f["path"] == "train.py" and f["line"] == line]
    assert found and {f["status"] for f in found} == {status}, data["findings"]
    others = [f for f in errors(data, "GM401") if f["line"] != line]
    assert not others, others


def test_sum_over_a_fixed_number_of_masked_nodes_divided_by_a_smaller_constant_is_confirmed(
        cli, tmp_path):
    # 150 masked nodes every step, the sum divided by 16 (a batch size of graphs, say): no change
    # in the count to watch, but a divisor far below it
    train = MAE.replace("        mask = torch.rand(200) < (0.2 + 0.6 * (step % 2))",
                        "        mask = torch.arange(200) < 150") \
        .replace("        loss = err.sum()\n", "        loss = err.sum() / 16\n")
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    found = [f for f in by_rule(data, "GM401") if f["line"] == line_of(train, "err.sum() / 16")]
    assert found and {f["status"] for f in found} == {"confirmed"}, data["findings"]
    mean = train.replace("err.sum() / 16", "err.sum() / 150")  # the count itself
    write(tmp_path, {"train.py": mean})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    found = [f for f in by_rule(data, "GM401") if f["line"] == line_of(mean, "err.sum() / 150")]
    assert found and {f["status"] for f in found} == {"refuted"}, data["findings"]


BN_NET = NET.replace("self.dec = nn.Linear(16, 6)",
                     "self.bn = nn.BatchNorm1d(16)\n        self.dec = nn.Linear(16, 6)") \
    .replace("self.dec(torch.relu(self.enc(x)))", "self.dec(torch.relu(self.bn(self.enc(x))))")


@pytest.mark.parametrize("mode, error", [("", True), ("model.eval()\n    ", False)])
def test_extra_forward_between_steps_moving_batchnorm_stats_is_gm202_there(cli, tmp_path, mode,
                                                                          error):
    # a "monitoring" pass after each step, in train mode unless the twin puts the model in eval
    monitor = f"""
def monitor(model):
    {mode}with torch.no_grad():
        out = model(torch.randn(64, 6))
    model.train()
    return float(out.std())
"""
    loop = LOOP.replace("        opt.step()\n", "        opt.step()\n        monitor(model)\n")
    train, data = run_net(cli, tmp_path, BN_NET + monitor + loop)
    line = line_of(train, "out = model(torch.randn(64, 6))")
    assert bool(at(data, "GM202", "train.py", line)) == error, data["findings"]
    assert not [f for f in errors(data, "GM202") if f["line"] != line], data["findings"]
    if error:
        assert any("bn" in e and f"train.py:{line_of(train, '    monitor(model)')}" in e
                   for f in at(data, "GM202", "train.py", line) for e in f["evidence"])


@pytest.mark.parametrize("frozen, error", [(True, False), (False, True)])
def test_a_frozen_copys_forward_outside_the_step_is_no_gm202(cli, tmp_path, frozen, error):
    # an EMA teacher: a deep copy run in train mode under no_grad after each step. Frozen, its
    # running statistics are its own, not the trained model's; a copy that still requires grad
    # is not told apart from the model (the twin keeps the finding)
    freeze = "    for p in teacher.parameters():\n        p.requires_grad_(False)\n" if frozen else ""
    teacher = f"""
import copy

def make_teacher(model):
    teacher = copy.deepcopy(model)
{freeze}    return teacher

def target(teacher):
    with torch.no_grad():
        return teacher(torch.randn(64, 6))
"""
    loop = LOOP.replace("def train(model, opt, steps=12):\n",
                        "def train(model, opt, steps=12):\n    teacher = make_teacher(model)\n") \
        .replace("        opt.step()\n", "        opt.step()\n        target(teacher)\n")
    train, data = run_net(cli, tmp_path, BN_NET + teacher + loop)
    line = line_of(train, "return teacher(torch.randn(64, 6))")
    assert bool(at(data, "GM202", "train.py", line)) == error, data["findings"]


@pytest.mark.parametrize("keep, grows", [
    ("            total += loss\n", "total += loss"),
    ("            self.history.append(loss)\n", "self.history.append(loss)"),
    ("            total += loss.item()\n", None),  # a number: no graph held
])
def test_graph_held_across_steps_is_gm106_at_the_statement_that_grows_the_holder(
        cli, tmp_path, keep, grows):
    train = NET + f"""
class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt, self.history = model, opt, []

    def fit(self, steps=12):
        total = 0.0
        for step in range(steps):
            x = torch.randn(32, 6)
            loss = F.mse_loss(self.model(x), x)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
{keep}        return total


torch.manual_seed(0)
model = Net()
Trainer(model, torch.optim.SGD(model.parameters(), lr=0.01)).fit()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "5"))
    if grows is None:
        assert not errors(data, "GM106"), data["findings"]
        return
    found = at(data, "GM106", "train.py", line_of(train, grows))
    holder = "total" if "total" in grows else "history"
    assert found and any(f"{holder}`" in f["message"] for f in found), data["findings"]
    assert not [f for f in errors(data, "GM106") if f not in found], data["findings"]


def test_nonfinite_loss_names_the_first_module_whose_output_went_nonfinite(cli, tmp_path):
    net = NET.replace("self.dec = nn.Linear(16, 6)",
                      "self.dec = nn.Linear(16, 6)\n        self.blow = Blow()") \
        .replace("return self.dec(torch.relu(self.enc(x)))",
                 "return self.dec(self.blow(torch.relu(self.enc(x))))")
    blow = """
class Blow(nn.Module):
    def forward(self, h):
        return torch.log(h - 1e3)  # log of negative numbers: NaN
"""
    train, data = run_net(cli, tmp_path, net.replace("class Net", blow + "\n\nclass Net") + LOOP)
    found = errors(data, "GM701")
    assert found and "first non-finite module output: blow" in found[0]["message"], found


def test_a_later_training_phase_is_traced_from_its_first_steps(cli, tmp_path):
    """A linear probe trained after pre-training (a new optimizer, steps 12-16) is a new phase:
    its first steps are traced like the run's first ones, so an unseeded draw in its loop is
    seen, not left `unexercised` between the every-10th-step samples."""
    train = NET + LOOP + """
import numpy as np
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
head = nn.Linear(16, 2)
probe_opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(5):
    idx = np.random.permutation(32)
    emb = model.enc(torch.randn(32, 6)[idx]).detach()
    loss = F.cross_entropy(head(emb), torch.zeros(32, dtype=torch.long))
    probe_opt.zero_grad()
    loss.backward()
    probe_opt.step()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "20"))
    # reported at the seeding that leaves numpy out
    draw = [f for f in by_rule(data, "GM603") if f["line"] == line_of(train, "torch.manual_seed(0)")]
    assert draw and draw[0]["status"] in ("confirmed", "runtime"), by_rule(data, "GM603")
    # every draw of the new phase's first steps is seen (before: only the one at a sampled step)
    assert "drawn from 5x" in " ".join(draw[0]["evidence"]), draw[0]["evidence"]


# the model run through its own methods (as GraphMAE's encode/decode/embed), BatchNorm inside
METHODS_NET = """
import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16))
        self.dec = nn.Linear(16, 6)

    def forward(self, x):
        return self.decode(self.encode(x))

    def encode(self, x):
        return torch.relu(self.enc(x))

    def decode(self, h):
        return self.dec(h)

    @torch.no_grad()
    def embed(self, x):
        return self.encode(x)

@torch.no_grad()
def evaluate(model):
    model.eval()
    out = F.mse_loss(model(torch.randn(8, 6)), torch.zeros(8, 6)).item()
    model.train()
    return out
"""


def run_steps(cli, tmp_path, step_body: str, after_step: str = "") -> tuple[str, dict]:
    """METHODS_NET trained for a few steps, each preceded by an evaluation under no_grad:
    ``step_body`` computes ``loss`` from ``x``, ``after_step`` runs after the optimizer step."""
    train = METHODS_NET + f"""
def train(model, opt, steps=12):
    for step in range(steps):
        evaluate(model)
        x = torch.randn(32, 6)
{step_body}        opt.zero_grad()
        loss.backward()
        opt.step()
{after_step}
torch.manual_seed(0)
model = Net()
train(model, torch.optim.SGD(model.parameters(), lr=0.01))
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    return train, data


def test_no_grad_swallowing_the_steps_encoder_is_gm102_and_an_extra_forward_gm202_at_callers(
        cli, tmp_path):
    # the encoder runs as a root forward of its own, wholly under the step's no_grad: GM102 at
    # the forward that no_grad swallows, not at the evaluation's before it (which never covered
    # a training forward);
    # after the step, a logging line runs the model through its own no_grad method in train
    # mode: GM202 at that line, not inside the model, and the swallowed forward is none
    train, data = run_steps(cli, tmp_path, """\
        with torch.no_grad():
            h = model.encode(x)
        loss = F.mse_loss(model.decode(h), x)
""", after_step="        spread = model.embed(x).std(0).mean().item()\n")
    swallowed = line_of(train, "h = model.encode(x)")
    assert at(data, "GM102", "train.py", swallowed), data["findings"]
    assert not [f for f in errors(data, "GM102") if f["line"] != swallowed], data["findings"]
    assert not errors(data, "GM101"), data["findings"]
    line = line_of(train, "spread = model.embed(x)")
    assert at(data, "GM202", "train.py", line), data["findings"]
    assert not [f for f in errors(data, "GM202") if f["line"] != line], data["findings"]


def test_model_rebuilt_through_a_factory_is_gm105_at_the_callers_rebuild(cli, tmp_path):
    # both builds go through the factory: the cause is where the second build's calls depart
    # from the first's, the caller's rebuild, not the factory's line that builds every model
    models = NET + """
def build_model(cfg):
    return Net()  # the factory
"""
    train = LOOP + """
from models import build_model

def setup(cfg):
    model = build_model(cfg)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)

torch.manual_seed(0)
model, opt = setup({})
model = build_model({})  # rebuilt
train(model, opt)
"""
    write(tmp_path, {"models.py": models, "train.py": "import torch, torch.nn.functional as F\n"
                     + train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    train = "import torch, torch.nn.functional as F\n" + train
    assert at(data, "GM105", "train.py", line_of(train, "# rebuilt")), data["findings"]
    assert not at(data, "GM105", "models.py", line_of(models, "# the factory")), data["findings"]
    # the parameters that never change are those in no param group: the same defect, once
    assert len(errors(data, "GM105")) == 1, data["findings"]


def test_optimizer_given_part_of_the_model_through_a_factory_is_gm105_where_the_part_is_chosen(
        cli, tmp_path):
    # every optimizer is built by one factory; the caller hands it the encoder's parameters
    # only: the cause is the caller's line that picks them, not the factory's constructor call
    optim = """import torch

OPTIMIZERS = {"sgd": torch.optim.SGD}

def build_optimizer(params, name="sgd"):
    return OPTIMIZERS[name](params, lr=0.01)  # the factory
"""
    train = "import torch, torch.nn.functional as F\n" + NET + LOOP + """
from optim import build_optimizer

torch.manual_seed(0)
model = Net()
opt = build_optimizer(model.enc.parameters())  # a part
train(model, opt)
"""
    write(tmp_path, {"optim.py": optim, "train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "3"))
    found = at(data, "GM105", "train.py", line_of(train, "# a part"))
    assert found and "only part" in found[0]["evidence"][0], data["findings"]
    assert not at(data, "GM105", "optim.py", line_of(optim, "# the factory")), data["findings"]


CONTAINER = """
import torch, torch.nn as nn, torch.nn.functional as F

def build():
    m = nn.ModuleDict({"enc": nn.Linear(6, 16), "dec": nn.Linear(16, 6)})
    m.register_parameter("token", nn.Parameter(torch.zeros(1, 6)))
    return m

def masked(m, x):
    x = x.clone()
    x[:8] = x[:8] + m.token
    return x

def forward(m, x):
    h = torch.relu(m["enc"](masked(m, x)))
    return m["dec"](h)

torch.manual_seed(0)
model = build()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(6):
    x = torch.randn(32, 6)
    loss = F.mse_loss(forward(model, x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("edit, rule, needle", [
    ({}, None, None),
    ({"+ m.token\n": "+ m.token.data\n"}, "GM101", "m.token.data"),
    ({"def masked": "@torch.no_grad()\ndef masked"}, "GM102", "@torch.no_grad()"),
    ({"torch.zeros(1, 6))": "torch.zeros(1, 6), requires_grad=False)"}, "GM103", "requires_grad=False"),
    ({"h = torch.relu(m[\"enc\"](masked(m, x)))": "h = torch.relu(m[\"enc\"](masked(m, x))).detach()"},
     "GM101", ".detach()"),
])
def test_a_model_called_by_its_entries_is_one_model_with_its_registered_parameters(
        cli, tmp_path, edit, rule, needle):
    # an nn.ModuleDict never called itself: functions handed it call its entries, and a helper
    # writes a parameter registered on the container into the input; the trained model is the
    # container, the token one of its parameters
    train = CONTAINER
    for old, new in edit.items():
        assert old in train
        train = train.replace(old, new)
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    for other in {"GM101", "GM102", "GM103"} - {rule}:
        assert not errors(data, other), (other, data["findings"])
    if rule is not None:
        assert at(data, rule, "train.py", line_of(train, needle)), data["findings"]
        assert len(errors(data, rule)) == 1, data["findings"]


def test_a_part_trained_then_frozen_for_a_later_stage_is_no_gm103(cli, tmp_path):
    # stage 2 freezes the encoder stage 1 trained and gives a new optimizer the decoder only
    train = NET + """
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for stage in range(2):
    if stage == 1:
        model.enc.requires_grad_(False)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        x = torch.randn(32, 6)
        loss = F.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    write(tmp_path, {"train.py": train})
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "6"))
    freeze = [f for f in by_rule(data, "GM103") if f["line"] == line_of(train, "requires_grad_(False)")]
    assert freeze and all(f["status"] == "refuted" for f in freeze), data["findings"]


TOKENS = """
import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.ParameterDict({t: nn.Parameter(torch.zeros(1, 6)) for t in ("a", "b")})
        self.enc = nn.Linear(6, 16)
        self.dec = nn.Linear(16, 6)

    def mask(self, x):
        out = x.clone()
        for t in ("a", "b"):
            out[:4] = out[:4] + self.tokens[t]{read}
        return out

    def forward(self, x):
        return self.dec(torch.relu(self.enc(self.mask(x))))
"""


@pytest.mark.parametrize("read, cut", [(".data", True), ("", False)])
def test_mask_tokens_of_a_parameter_dict_read_in_the_forward_are_used(cli, tmp_path, read, cut):
    """A `ParameterDict` never runs a forward of its own: the entries the forward reads off it are
    used parameters, and cut from the loss by `.data`, GM101 is confirmed at the cut."""
    train, data = run_net(cli, tmp_path, TOKENS.replace("{read}", read) + LOOP)
    confirmed = [f for f in by_rule(data, "GM101") if f["status"] == "confirmed"]
    if cut:
        assert [f["line"] for f in confirmed] == [line_of(train, ".data")], data["findings"]
        assert "tokens.a" in " ".join(confirmed[0]["evidence"])
    else:
        assert not confirmed and not errors(data, "GM101"), data["findings"]
