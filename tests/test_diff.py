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
    assert "GM201 at train.py:10" in note and "1 of them never ran in the 2 step(s) compared" in note
    assert "--steps" in note


def diff_json(cli, tmp_path, ref: str, cand: str, *options: str) -> tuple[int, dict]:
    """``gm-audit diff`` of two programs written into ``tmp_path`` (the static pass covers the
    candidate only)."""
    (tmp_path / "ref.py").write_text(ref)
    (tmp_path / "cand.py").write_text(cand)
    proc = cli("diff", "-q", "--format", "json", "--no-cache", "--paths", "cand.py", *options,
               "--", f"{PY} ref.py", f"{PY} cand.py", cwd=tmp_path, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


COLLATED = (
    "import torch\n"
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "torch.manual_seed(0)\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = torch.nn.Linear(3, 4)\n"
    "        self.out = torch.nn.Linear(4, 1)\n"
    "    def forward(self, batch):\n"
    "        return self.out(torch.relu(self.fc(batch['x'])))\n"
    "def collate(rows):\n"
    "    x = torch.stack([r[0] for r in rows])\n"
    "    return {'x': x}\n"
    "loader = DataLoader(TensorDataset(torch.randn(32, 3)), batch_size=8, collate_fn=collate)\n"
    "net = Net()\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "for batch in loader:\n"
    "    loss = net(batch).pow(2).mean()\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
)


def test_input_changed_by_a_collate_fn_is_stage_input(cli, tmp_path):
    # the model takes the collated dict: its tensors are the input, not the first layer's output
    code, data = diff_json(cli, tmp_path, COLLATED,
                           COLLATED.replace("{'x': x}", "{'x': x + 0.5 * torch.randn_like(x)}"))
    first = data["first_divergence"]
    assert code == 1 and first["stage"] == "input", first
    assert first["name"] == "features arg0.x" and first["rule"] in ("GM502", "GM503")
    code, data = diff_json(cli, tmp_path, COLLATED, COLLATED)
    assert code == 0 and data["first_divergence"] is None


BATCHNORM = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    "net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1))\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "x = torch.randn(8, 3)\n"
    "for i in range(3):\n"
    "    loss = net(x).pow(2).mean()\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
)


def test_batchnorm_moved_by_an_extra_forward_between_steps_is_stage_update(cli, tmp_path):
    # a monitoring forward after the step, in training mode: the running statistics move, the
    # parameters, outputs and gradients of the step do not
    monitor = BATCHNORM + "    with torch.no_grad():\n        print(float(net(x + 1).mean()))\n"
    code, data = diff_json(cli, tmp_path, BATCHNORM, monitor)
    first = data["first_divergence"]
    assert code == 1 and first["stage"] == "update", first
    assert first["name"].split(".")[-1] in ("running_mean", "running_var", "num_batches_tracked")
    assert (first["rule"], first["path"], first["line"]) == ("GM202", "cand.py", 10)
    assert [s["status"] for s in data["stages"]][:6] == ["same"] * 6
    # the same forward in evaluation mode leaves the statistics alone
    quiet = monitor.replace("    with torch.no_grad():\n", "    net.eval()\n    with torch.no_grad():\n")
    code, data = diff_json(cli, tmp_path, BATCHNORM, quiet.replace(
        "x + 1).mean()))\n", "x + 1).mean()))\n    net.train()\n"))
    assert code == 0, data["first_divergence"]


NO_GRAD = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.enc = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))\n"
    "        self.dec = torch.nn.Linear(4, 1)\n"
    "net = Net()\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "x = torch.randn(8, 3)\n"
    "for i in range(3):\n"
    "    h = net.enc(x)\n"
    "    loss = net.dec(h).pow(2).mean()\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
)


def test_forward_under_no_grad_is_stage_grad(cli, tmp_path):
    # the encoder's forward under no_grad moves its BatchNorm statistics before the step's first
    # grad-enabled forward: the initial state is the one before it, and the divergence is the
    # encoder's missing gradients, at the forward the no_grad block swallows
    cand = NO_GRAD.replace("    h = net.enc(x)\n", "    with torch.no_grad():\n        h = net.enc(x)\n")
    code, data = diff_json(cli, tmp_path, NO_GRAD, cand)
    first = data["first_divergence"]
    assert code == 1 and first["stage"] == "grad", first
    assert first["name"].startswith("enc.") and "no gradient in the candidate" in first["detail"]
    assert (first["rule"], first["path"], first["line"]) == ("GM102", "cand.py", 13)
    assert data["stages"][0]["status"] == "same"
    # the finding at the static one's span (`net.enc(x)`, not column 1), with its fix
    [finding] = data["findings"]
    assert (finding["line"], finding["column"]) == (13, 13) and finding["fix"], finding


VALIDATED = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    "net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "x = torch.randn(16, 3)\n"
    "def validate(model):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        score = float(model(x).mean())\n"
    "    model.train()\n"
    "    return score\n"
    "for i in range(12):\n"
    "    loss = net(x).pow(2).mean()\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
    "    if (i + 1) % 7 == 0:\n"
    "        validate(net)\n"
)
LEAVES_EVAL = VALIDATED.replace("    model.train()\n", "")


def test_steps_auto_runs_until_a_late_eval_shows_and_names_its_chain(cli, tmp_path):
    # the validation after step 7 (past the probe's first, detailed steps) leaves eval mode
    code, data = diff_json(cli, tmp_path, VALIDATED, LEAVES_EVAL, "--steps", "auto")
    first = data["first_divergence"]
    assert code == 1 and first["stage"] == "mode" and "(step 8)" in first["detail"], first
    assert (first["rule"], first["path"], first["line"]) == ("GM201", "cand.py", 7)
    [finding] = data["findings"]
    assert "cand.py:7, called from cand.py:15" in finding["evidence"][0], finding
    assert data["runs"]["candidate"]["steps"] == data["runs"]["reference"]["steps"] == 8


def test_agreement_says_which_step_to_ask_for(cli, tmp_path):
    # the eval runs after step 7: seven steps agree, and the note asks for the eighth
    code, data = diff_json(cli, tmp_path, VALIDATED, LEAVES_EVAL, "--steps", "7")
    assert code == 0, data["first_divergence"]
    [note] = [n for n in data["notes"] if n.startswith("no divergence, but")]
    assert "GM201 at cand.py:7 first ran after step 7: ask for --steps 8" in note, note
    # a bound too low for the line to run at all
    code, data = diff_json(cli, tmp_path, VALIDATED, LEAVES_EVAL, "--steps", "auto",
                           "--max-steps", "3")
    [note] = [n for n in data["notes"] if n.startswith("no divergence, but")]
    assert "did not run within --max-steps 3" in note, note


def test_progress_on_a_terminal_only(tmp_path):
    import os
    import pty
    import select
    import subprocess

    slow = "import time\nprint('loading the graphs', flush=True)\ntime.sleep(2)\n" + BATCHNORM
    (tmp_path / "slow.py").write_text(slow)
    args = [sys.executable, "-m", "auditor", "diff", "--no-cache", "--paths", "slow.py", "--",
            f"{PY} slow.py", f"{PY} slow.py"]
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:  # read as it comes: a full pty would block the spinner
        ready, _, _ = select.select([master], [], [], 1.0)
        chunk = b""
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the slave side is closed: all read
                break
        out += chunk
        if not chunk and proc.poll() is not None:
            break
    os.close(master)
    proc.wait(timeout=300)
    text = out.decode(errors="replace")
    assert proc.returncode == 0
    assert "diff: running" in text and "loading the graphs" in text, text
    plain = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "diff: running" not in plain.stderr


DGL_DRAWN = (
    "import dgl, torch\n"
    # one OpenMP thread: with several, DGL's seeded draws still vary under load (measured)
    "dgl.utils.set_num_threads(1)\n"
    "torch.manual_seed(0)\n"
    "g = dgl.rand_graph(30, 90)\n"  # DGL's own generator, which this program never seeds
    "deg = g.in_degrees().float().unsqueeze(1)\n"
    "x = torch.cat([deg, torch.ones_like(deg)], 1)\n"
    "net = torch.nn.Linear(2, 1)\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.01)\n"
    "for _ in range(3):\n"
    "    loss = net(x).pow(2).mean()\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
)


def test_dgl_left_unseeded_is_named_and_seeded_by_the_diff_before_its_first_draw(cli, tmp_path):
    # neither program seeds DGL: their own runs differ from one to the next, which the diff says
    # (at the RNG, not at the data: its own seed, taken before the first draw, made the graphs
    # of its two runs alike)
    code, data = diff_json(cli, tmp_path, DGL_DRAWN, DGL_DRAWN)
    first = data["first_divergence"]
    assert code == 1 and first["name"] == "rng dgl" and first["rule"] == "GM603", first
    assert "nor by the reference" in first["detail"], first
    items = next(s for s in data["stages"] if s["stage"] == "input")["items"]
    assert [i["name"] for i in items if i["status"] == "differs"] == ["rng dgl"], items
    seeded = DGL_DRAWN.replace("torch.manual_seed(0)\n", "torch.manual_seed(0)\ndgl.seed(0)\n")
    code, data = diff_json(cli, tmp_path, seeded, seeded)
    assert code == 0 and data["first_divergence"] is None, data["first_divergence"]


class _Seeds:
    """What the snapshot reads of the recorder: the program's own seeding calls."""

    def __init__(self, rngs: list[str]) -> None:
        self.lists = {"seeds": [{"rng": r} for r in rngs]}


class _Dgl:
    def __init__(self) -> None:
        self.seeded: list[int] = []

    def seed(self, value: int) -> None:
        self.seeded.append(value)


def test_the_diff_seeds_dgl_only_where_the_program_does_not(tmp_path):
    from auditor.diff.snapshot import Snapshot

    for program_seeds, expected in ((["dgl"], []), (["torch"], [7])):
        dgl = _Dgl()
        snap = Snapshot(_Seeds(program_seeds), str(tmp_path), seed=7)
        snap.seed_and_hook("dgl", dgl)
        assert dgl.seeded == []  # not at import: the program may still seed it
        snap.seed_dgl()  # its first draw, or the first training step
        snap.seed_dgl()
        assert dgl.seeded == expected


def test_an_rng_the_candidate_never_seeds_is_a_divergence_whoever_else_seeds_it():
    from auditor.diff.compare import compare_rng

    drawn = {"seeded": False, "draws": 3}
    assert "while the reference seeds it" in compare_rng({"seeded": True, "draws": 3}, drawn)
    assert "nor by the reference" in compare_rng({"seeded": False, "draws": 0}, drawn)
    assert compare_rng({"seeded": False, "draws": 3}, {"seeded": True, "draws": 3}) is None
    assert compare_rng({"seeded": True, "draws": 3}, {"seeded": False, "draws": 0}) is None
