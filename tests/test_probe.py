"""The probe end to end: small real programs written to tmp_path, run by `gm-audit probe`."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from auditor.probe.evidence import Evidence
from auditor.probe.launch import prepare, run_command

PY = sys.executable
TORCHRUN = str(Path(PY).with_name("torchrun"))

MODEL = """
import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 16)
        self.drop = nn.Dropout(0.1)
        self.dec = nn.Linear(16, 6)

    def forward(self, x):
        h = self.enc(x){cut}
        return self.dec(self.drop(h))
"""

LOOP = """
torch.manual_seed(0)
model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
{before}
for step in range(200):
    x = torch.randn(32, 6, device=DEVICE)
    loss = F.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("finished")
"""


def program(cut: str = "", before: str = "", device: str = "cpu") -> str:
    return (MODEL.format(cut=cut) + f"DEVICE = {device!r}\n" + LOOP.format(before=before))


def write(tmp: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(textwrap.dedent(text), encoding="utf-8")


def probe(cli, tmp: Path, *cmd: str, options=("--steps", "auto"), timeout: float = 240):
    proc = cli("probe", "--format", "json", "--no-cache", *options, "--", *cmd, cwd=tmp,
               timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    return proc, data


def by_rule(data: dict, rule: str) -> list[dict]:
    return [f for f in data["findings"] if f["rule"] == rule]


def test_detach_blocked_gradients_are_confirmed(cli, tmp_path):
    write(tmp_path, {"train.py": program(cut=".detach()")})
    proc, data = probe(cli, tmp_path, PY, "train.py")
    assert proc.returncode == 1
    run = data["run"]
    assert run["stopped"] == "budget" and run["steps"] >= 1 and run["exit"] == 0
    gm101 = by_rule(data, "GM101")
    assert gm101 and all(f["status"] in ("confirmed", "runtime") for f in gm101)
    assert any("enc.weight" in e for f in gm101 for e in f["evidence"])
    flow = {r["module"]: r for r in data["gradient_flow"]}
    assert flow["enc"]["none"] == 2 and flow["dec"]["with_grad"] == 2


def test_evidence_api_reachability_and_modes(tmp_path):
    write(tmp_path, {"train.py": program(cut=".detach()", before="model.eval()")})
    env = prepare(tmp_path / "run", tmp_path, "2", [("train.py", 12, 12)], "cpu")
    outcome = run_command([PY, "train.py"], env, tmp_path, 120, tmp_path / "log.txt")
    assert outcome.exit_code == 0, outcome.tail
    ev = Evidence.load(tmp_path / "run" / "evidence")
    assert ev.total_steps == 2 and ev.runs[0].status == "budget"
    reach = ev.param_reachability(1)
    assert set(reach.unreached) == {"enc.weight", "enc.bias"}
    assert set(reach.reached) == {"dec.weight", "dec.bias"}
    assert ev.steps[0].grads["enc.weight"].state == "none"
    assert ev.steps[0].grads["dec.weight"].state == "finite"
    step, modes = ev.modes_at_backward[0]
    assert modes == {"": False, "drop": False}
    assert ev.ran("train.py", 12) and ev.calls_at("train.py", 12, "detach")[0].arg("requires_grad")
    assert [c.kind for c in ev.calls("eval")] == ["eval"]
    assert ev.seeded_rngs == {"torch"} and ev.losses[0].fn == "mse_loss"
    assert ev.optimizers[0].missing_model_params == [] and ev.optimizers[0].foreign_params == 0
    assert ev.steps[0].param_change["dec.weight"] > 0 and ev.steps[0].param_change["enc.weight"] == 0


def test_eval_mode_backward_is_reported(cli, tmp_path):
    write(tmp_path, {"train.py": program(before="model.eval()")})
    proc, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    gm201 = by_rule(data, "GM201")
    assert gm201 and gm201[0]["status"] in ("confirmed", "runtime")
    assert data["run"]["steps"] == 2 and proc.returncode == 1


def test_budget_stops_cleanly_and_text_report(cli, tmp_path):
    write(tmp_path, {"train.py": program()})
    proc = cli("probe", "--no-cache", "--steps", "3", "--", PY, "train.py", cwd=tmp_path,
               timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stopped after 3 step(s)" in proc.stdout
    assert "gradient flow at step 3" in proc.stdout
    assert "finished" not in proc.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


def test_crash_is_reported_with_output_tail(cli, tmp_path):
    write(tmp_path, {"train.py": program(before="raise RuntimeError('boom in user code')")})
    proc, data = probe(cli, tmp_path, PY, "train.py")
    assert proc.returncode == 2
    assert data["run"]["stopped"] == "crash" and data["run"]["exit"] == 1
    assert "RuntimeError: boom in user code" in data["run"]["error"]
    assert any("boom in user code" in line for line in data["output_tail"])


def test_hang_is_killed_with_its_children(cli, tmp_path):
    write(tmp_path, {"train.py": """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("child.pid", "w").write(str(child.pid))
        import torch
        time.sleep(600)
    """})
    proc, data = probe(cli, tmp_path, PY, "train.py", options=("--timeout", "8"))
    assert proc.returncode == 2
    assert data["run"]["stopped"] == "timeout"
    assert not _alive(int((tmp_path / "child.pid").read_text()))


def test_early_sys_exit(cli, tmp_path):
    write(tmp_path, {"train.py": "import sys\nimport torch\nprint('leaving early')\nsys.exit(3)\n"})
    proc, data = probe(cli, tmp_path, PY, "train.py")
    assert proc.returncode == 2
    assert data["run"]["stopped"] == "exit" and data["run"]["exit"] == 3
    assert "exited early with code 3" in proc.stderr


def test_syntax_error_in_user_script(cli, tmp_path):
    write(tmp_path, {"train.py": "import torch\ndef broken(:\n    pass\n"})
    proc = cli("probe", "--no-cache", "--", PY, "train.py", cwd=tmp_path, timeout=120)
    assert proc.returncode in (1, 2)
    assert "Traceback (most recent call last)" not in proc.stderr
    assert "SyntaxError" in proc.stdout and "crashed" in proc.stdout


def test_python_dash_m_and_shell_wrapper(cli, tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": program(cut=".detach()")})
    proc, data = probe(cli, tmp_path, PY, "-m", "pkg.train", options=("--steps", "2"))
    assert data["run"]["steps"] == 2 and by_rule(data, "GM101")
    proc, data = probe(cli, tmp_path, "bash", "-c", f"cd pkg && {PY} train.py",
                       options=("--steps", "2"))
    assert data["run"]["steps"] == 2 and data["run"]["stopped"] == "budget"
    # paths are relative to where the probe ran, whatever the program's own cwd
    assert any(f["path"] == "pkg/train.py" for f in by_rule(data, "GM101"))


def test_torch_load_confirmed_and_unexercised(cli, tmp_path):
    write(tmp_path, {"train.py": program(before="""
torch.save(model.state_dict(), "w.pt")
model.load_state_dict(torch.load("w.pt"))
if len(__import__("sys").argv) > 5:
    model.load_state_dict(torch.load("other.pt"))
""")})
    proc, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    gm602 = {f["line"]: f["status"] for f in by_rule(data, "GM602")}
    assert sorted(gm602.values()) == ["confirmed", "unexercised"]


def test_device_auto_uses_cuda_when_present(cli, tmp_path):
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    write(tmp_path, {"train.py": program(cut=".detach()", device=device)})
    proc, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2", "--device", "auto"))
    assert device in data["run"]["device"]
    assert by_rule(data, "GM101")


DDP = """
import os, torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
if "RANK" in os.environ:
    dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(50):
    x = torch.randn(8, 4)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_torchrun_two_processes_and_single_process_ddp(cli, tmp_path):
    write(tmp_path, {"train.py": DDP})
    proc, data = probe(cli, tmp_path, TORCHRUN, "--nproc_per_node=2", "--master_port=29517",
                       "train.py", options=("--steps", "2", "--device", "cpu"))
    assert data["run"]["world_size"] == 2, data["run"]
    assert data["run"]["stopped"] == "budget" and data["run"]["exit"] == 0
    assert not [f for f in by_rule(data, "GM302") if f["status"] in ("confirmed", "runtime")]
    proc, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "2"))
    gm302 = by_rule(data, "GM302")
    assert gm302 and gm302[0]["status"] in ("confirmed", "runtime")
    assert data["run"]["stopped"] == "crash" and proc.returncode == 1


def test_evidence_file_holds_every_step_with_its_optimizer_facts(tmp_path):
    """Steps are encoded once for the evidence file's rewrites; a step's optimizer facts come
    after its backward (and after the writes forced at the first steps), so none may be lost."""
    write(tmp_path, {"train.py": program()})
    env = prepare(tmp_path / "run", tmp_path, "25", [], "cpu")
    outcome = run_command([PY, "train.py"], env, tmp_path, 120, tmp_path / "log.txt")
    assert outcome.exit_code == 0, outcome.tail
    ev = Evidence.load(tmp_path / "run" / "evidence")
    assert [s.index for s in ev.steps] == list(range(1, 26))
    docs = [d for p in ev.processes for d in p.docs]
    assert [s["optimizer_steps"] for d in docs for s in d["steps"]] == [1] * 25


def test_two_evidence_files_under_torchrun(tmp_path):
    write(tmp_path, {"train.py": DDP})
    env = prepare(tmp_path / "run", tmp_path, "2", [], "cpu")
    outcome = run_command([TORCHRUN, "--nproc_per_node=2", "--master_port=29518", "train.py"],
                          env, tmp_path, 200, tmp_path / "log.txt")
    assert outcome.exit_code == 0, outcome.tail
    ev = Evidence.load(tmp_path / "run" / "evidence")
    trainers = [p for p in ev.processes if p.total_steps]
    assert len(trainers) == 2
    assert sorted(p.docs[0]["rank"] for p in trainers) == [0, 1]
    assert all(d.pg_initialized and d.world_size == 2 for d in ev.ddp)


@pytest.mark.parametrize("budget", ["1"])
def test_recorder_never_breaks_a_plain_python_program(tmp_path, budget):
    write(tmp_path, {"plain.py": "import json, random\nrandom.seed(1)\nprint(json.dumps({'x': random.random()}))\n"})
    env = prepare(tmp_path / "run", tmp_path, budget, [], "auto")
    outcome = run_command([PY, "plain.py"], env, tmp_path, 60, tmp_path / "log.txt")
    assert outcome.exit_code == 0 and outcome.tail[-1].startswith('{"x"')
    ev = Evidence.load(tmp_path / "run" / "evidence")
    assert ev.seeds[0].rng == "random" and ev.seeds[0].line == 2


def test_a_finding_at_a_configuration_line_is_judged_as_read_not_as_a_line_that_never_ran(cli, tmp_path):
    """A zero loss weight written in the YAML the script loads: the finding sits at the YAML's
    line, which no process "runs"; the probe must not call it unexercised or outside the run."""
    write(tmp_path, {
        "cfg.yaml": "lr: 0.01\nw_l1: 0.0\n",
        "train.py": """\
            import torch
            import torch.nn.functional as F
            import yaml

            cfg = yaml.safe_load(open("cfg.yaml"))
            torch.manual_seed(0)
            model = torch.nn.Linear(4, 4)
            opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
            x = torch.randn(16, 4)
            for step in range(4):
                out = model(x)
                loss = F.mse_loss(out, x) + cfg["w_l1"] * F.l1_loss(out, x)
                opt.zero_grad()
                loss.backward()
                opt.step()
            """,
    })
    _, data = probe(cli, tmp_path, PY, "train.py", options=("--steps", "4"))
    found = [f for f in by_rule(data, "GM402") if f["path"] == "cfg.yaml" and f["line"] == 2]
    assert found and found[0]["status"] not in ("unexercised", "outside", "untaken"), data["findings"]
    assert any("a configuration value the run reads" in e for e in found[0]["evidence"]), found
