"""``gm-audit diff`` units: tensor and stage comparison, and the command's error paths."""

from __future__ import annotations

import json
import shlex
import sys

import torch

from auditor.diff.compare import Tolerance, compare_record, compare_runs, compare_tensor
from auditor.diff.snapshot import strip_prefixes

PY = shlex.quote(sys.executable)
TOL = Tolerance()


def rec(t: torch.Tensor, **extra) -> dict:
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "numel": t.numel(), "hash": "", "values": t, **extra}


def step(weight: torch.Tensor, grad, training: bool = True) -> dict:
    return {"index": 1, "model": "Net", "init": {"fc.weight": rec(weight)},
            "graphs": {"encoder": {"num_nodes": 4, "self_loops": 4}}, "features": {},
            "masks": [], "modes": {"": training, "fc": training},
            "forward": {"fc": rec(weight * 2)}, "loss": {"loss": rec(weight.sum())},
            "grad": {"fc.weight": grad}, "update": {"fc.weight": rec(weight - 1)}}


def test_tensor_tolerance_shape_and_dtype():
    a = torch.linspace(-1, 1, 50)
    assert compare_tensor(rec(a), rec(a + 1e-7), TOL) is None
    assert "max |a-b| = 0.1" in compare_tensor(rec(a), rec(a + 0.1), TOL)
    assert compare_tensor(rec(a), rec(a.reshape(5, 10)), TOL).startswith("shape [50] vs [5, 10]")
    assert "dtype float32 vs bfloat16" in compare_tensor(rec(a), rec(a.bfloat16()), TOL)
    nan = torch.tensor([float("nan"), 1.0])
    assert compare_tensor(rec(nan), rec(nan.clone()), TOL) is None


def test_large_tensors_compare_by_hash_then_sample():
    same = {"shape": [10_000], "dtype": "float32", "hash": "h", "stats": {"norm": 1.0}}
    assert compare_tensor(same, dict(same), TOL) is None
    a = dict(same, hash="a", sample=torch.zeros(8), stats={"norm": 1.0})
    b = dict(same, hash="b", sample=torch.ones(8), stats={"norm": 1.0})
    assert "over a sample" in compare_tensor(a, b, TOL)


def test_missing_gradient_and_flags():
    g = rec(torch.ones(3))
    assert "no gradient in the candidate" in compare_record(g, "none", TOL)
    assert compare_record({"training": True}, {"training": False}, TOL) == "training True vs False"


def test_first_divergence_in_pipeline_order():
    w = torch.randn(4, 3)
    ref = {"steps": [step(w, rec(torch.ones(4, 3)))]}
    stages, first = compare_runs(ref, {"steps": [step(w, rec(torch.ones(4, 3)))]}, TOL)
    assert first is None and {s.status for s in stages} == {"same"}
    stages, first = compare_runs(ref, {"steps": [step(w, "none", training=False)]}, TOL)
    assert first[0].stage == "mode" and first[1].name == "<model>"
    assert [s.status for s in stages] == ["same", "same", "differs", "same", "same",
                                          "differs", "same"]


def test_parameters_in_one_run_only_are_a_divergence():
    w = torch.randn(4, 3)
    other = step(w, rec(torch.ones(4, 3)))
    other["init"] = {**other["init"], "extra.bias": rec(torch.zeros(3))}
    _, first = compare_runs({"steps": [step(w, rec(torch.ones(4, 3)))]}, {"steps": [other]}, TOL)
    assert first[0].stage == "init" and first[1].status == "only_candidate"


def test_wrapper_prefixes_are_normalised():
    assert strip_prefixes("module.encoder.fc.weight") == "encoder.fc.weight"
    assert strip_prefixes("_orig_mod.module.decoder") == "decoder"
    assert strip_prefixes("module") == ""


def test_crash_is_a_clear_error(cli, tmp_path):
    (tmp_path / "boom.py").write_text("print('loading')\nraise ValueError('no data here')\n")
    (tmp_path / "ok.py").write_text("print('nothing to train')\n")
    proc = cli("diff", "-q", f"{PY} ok.py", f"{PY} boom.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback (most recent call last)" not in proc.stderr.split("|")[0]
    assert "the candidate run" in proc.stderr and "exited with code 1" in proc.stderr
    assert "ValueError: no data here" in proc.stderr


def test_no_training_step_is_an_error(cli, tmp_path):
    (tmp_path / "ok.py").write_text("print('nothing to train')\n")
    proc = cli("diff", "-q", "--format", "json", f"{PY} ok.py", f"{PY} ok.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "before its first training step" in proc.stderr


def test_usage_errors(cli, tmp_path):
    proc = cli("diff", "", f"{PY} x.py", cwd=tmp_path)
    assert proc.returncode == 2 and "empty command" in proc.stderr
    proc = cli("diff", "--steps", "0", "a", "b", cwd=tmp_path)
    assert proc.returncode == 2 and "--steps" in proc.stderr


def test_json_shape_of_a_tiny_torch_run(cli, tmp_path):
    script = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "x = torch.randn(8, 3)\n"
        "for _ in range(3):\n"
        "    loss = net(x).pow(2).mean()\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
    )
    (tmp_path / "a.py").write_text(script)
    (tmp_path / "b.py").write_text(script.replace("x = torch.randn(8, 3)\n",
                                                  "x = torch.randn(8, 3)\nnet.eval()\n"
                                                  "net[0].weight.data.mul_(2)\n"))
    proc = cli("diff", "--format", "json", "-q", f"{PY} a.py", f"{PY} b.py", cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    first = data["first_divergence"]
    assert first["stage"] == "init" and first["name"] == "0.weight"
    assert set(first) == {"stage", "name", "detail", "rule", "path", "line"}
    assert [s["status"] for s in data["stages"]][:3] == ["differs", "same", "differs"]
    proc = cli("diff", "-q", f"{PY} a.py", f"{PY} a.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: no divergence" in proc.stdout


def test_agreement_names_the_flagged_lines_and_the_step_to_ask_for(cli, tmp_path):
    script = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "x = torch.randn(8, 3)\n"
        "for i in range(4):\n"
        "    loss = net(x).pow(2).mean()\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
    )
    (tmp_path / "ref.py").write_text(script)
    (tmp_path / "train.py").write_text(script + "    if i == 1:\n        net.eval()\n")
    proc = cli("diff", "-q", "--format", "json", "--paths", "train.py", "--",
               f"{PY} ref.py", f"{PY} train.py", cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert data["first_divergence"] is None, proc.stdout
    [note] = [n for n in data["notes"] if n.startswith("no divergence, but")]
    assert "GM201 at train.py:10" in note and "1 of them never ran in the 1 step(s) compared" in note
    assert "--steps" in note
