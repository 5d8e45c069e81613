"""`gm-audit check --fix / --diff / --unsafe-fixes`: each rule's fix on its INVALID examples (the
expected source, a no-op second run, the finding gone), and the driver's guarantees (atomic
writes keeping encoding, CRLF and mode; --diff writes nothing; unparsable files untouched;
rollback when the re-check contradicts a fix)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from auditor.config import Config
from auditor.fix import FixOutcome, fix_findings, write_fixed
from auditor.registry import all_rules
from auditor.rule import Invalid, Source
from auditor.static.engine import run_check
from auditor.testing import DEFAULT_FILE, write_sources

RULES = list(all_rules().values())


def fix_in(root: Path, unsafe: bool = True, select: tuple[str, ...] = ()) -> FixOutcome:
    """Check ``root``, fix, write; as the CLI does, in-process."""
    rules = [r for r in RULES if not select or r.code in select]
    old = os.getcwd()
    os.chdir(root)
    try:
        config = Config(root=root)
        result = run_check(["."], config, rules, jobs=1, use_cache=False)
        outcome = fix_findings(result, ["."], config, rules, unsafe=unsafe, jobs=1)
        assert write_fixed(outcome.changed) == {}
        return outcome
    finally:
        os.chdir(old)


def texts(code: Source, root: Path) -> dict[str, str]:
    files = {DEFAULT_FILE: code} if isinstance(code, str) else code
    return {rel: (root / rel).read_text(encoding="utf-8") for rel in files}


def findings(root: Path, rule: str) -> list:
    old = os.getcwd()
    os.chdir(root)
    try:
        result = run_check(["."], Config(root=root), RULES, jobs=1, use_cache=False)
    finally:
        os.chdir(old)
    return [f for f in result.findings if f.rule == rule]


def _invalid(code: str, index: int) -> Invalid:
    return all_rules()[code].INVALID[index]


# (rule, INVALID index, expected source: a string for example.py, or {path: text} of changed files)
EXPECTED = [
    ("GM602", 0, "import torch\nstate = torch.load('w.pt', weights_only=True)\n"),
    ("GM602", 1, "import torch as T\nckpt = T.load(path, map_location='cpu', weights_only=True)\n"),
    ("GM602", 2, "from torch import load\nstate = load('w.pt', weights_only=True)\n"),
    ("GM602", 3, {"util.py": "import torch\n\ndef restore(p):\n    return torch.load(p, weights_only=True)\n"}),
    ("GM604", 0, "import torch\ntorch.backends.cudnn.deterministic = True\n"),
    ("GM604", 1, "import torch.backends.cudnn as cudnn\ncudnn.benchmark = False\n"),
    ("GM604", 2, "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n"),
    ("GM604", 4, "import torch\ntorch.manual_seed(0)\ntorch.backends.cudnn.benchmark = False\n"),
    ("GM604", 6, {"train.py": "import torch\nfrom utils import set_seed\n\n"
                  "def main():\n    set_seed(0)\n    torch.backends.cudnn.deterministic = True\n\n"
                  "main()\n"}),
    ("GM603", 1, "import random\nimport numpy as np\nimport torch\nrandom.seed(0)\nnp.random.seed(0)\n"
                 "torch.manual_seed(0)\nmask = torch.randperm(100)[:40]\n"),
    # dgl not imported yet: the import is added with the seed call
    ("GM603", 2, "import numpy as np\nimport torch\nimport dgl\ntorch.manual_seed(0)\nnp.random.seed(0)\n"
                 "dgl.seed(0)\nsg = dgl.sampling.sample_neighbors(g, nodes, 10)\n"),
    ("GM603", 3, "import random\nimport torch\ntorch.manual_seed(0)\nrandom.seed(0)\n\ndef augment(x):\n"
                 "    if random.random() < 0.5:\n        x = -x\n    return x\n"),
    # the seeding helper in another file: the seed call goes there, numpy imported there
    ("GM603", 6, {"utils.py": "import random\nimport torch\nimport numpy as np\n\n"
                  "def seed_everything(s):\n    random.seed(s)\n    torch.manual_seed(s)\n"
                  "    np.random.seed(s)\n"}),
    ("GM201", 2, "import torch\nfor step, g in enumerate(loader):\n    model.train()\n    loss = model(g)\n"
                 "    loss.backward()\n    opt.step()\n    if step % 100 == 0:\n        model.eval()\n"
                 "        with torch.no_grad():\n            val = model(val_g)\n"),
    ("GM201", 3, {"train.py": "from helpers import evaluate\ndef main(model, opt, loader, val):\n"
                  "    for step, g in enumerate(loader):\n        model.train()\n"
                  "        loss = model(g)\n        loss.backward()\n        opt.step()\n"
                  "        if step % 50 == 0:\n            evaluate(model, val)\n"}),
    ("GM401", 0, "import torch.nn.functional as F\ndef step(model, g, x, mask):\n    recon = model(g, x)\n"
                 "    loss = F.mse_loss(recon[mask], x[mask], reduction='mean')\n    loss.backward()\n"),
    ("GM401", 1, "def step(model, g, x, mask):\n    recon = model(g, x)\n"
                 "    loss = ((recon[mask] - x[mask]) ** 2).mean() / 2\n    loss.backward()\n"),
    ("GM101", 0, None),  # checked below: only the detach goes
    ("GM101", 2, {"losses.py": "import torch.nn.functional as F\ndef masked_mse(pred, target, mask):\n"
                  "    pred = pred[mask]\n    return F.mse_loss(pred, target[mask])\n"}),
    ("GM101", 3, "import torch.nn.functional as F\ndef step(model, g, x, scaler):\n    out = model(g, x)\n"
                 "    loss = F.mse_loss(out, x)\n    scaler.scale(loss).backward()\n"),
]


@pytest.mark.parametrize("code,index,expected", EXPECTED, ids=[f"{c}-{i}" for c, i, _ in EXPECTED])
def test_fix_invalid_example(tmp_path: Path, code: str, index: int, expected) -> None:
    case = _invalid(code, index)
    write_sources(case.code, tmp_path)
    outcome = fix_in(tmp_path)
    assert [a.finding.rule for a in outcome.fixed].count(code) >= 1, outcome.rejected
    got = texts(case.code, tmp_path)
    if expected is None:
        assert ".detach()" not in got[DEFAULT_FILE] and "self.decoder(h)" in got[DEFAULT_FILE]
    elif isinstance(expected, str):
        assert got[DEFAULT_FILE] == expected
    else:
        for rel, text in expected.items():
            assert got[rel] == text
    assert findings(tmp_path, code) == []  # the finding is gone
    again = fix_in(tmp_path)  # idempotent
    assert again.changed == {} and again.fixed == []
    assert texts(case.code, tmp_path) == got


OPT_IN_LENIENT = (
    "import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--resume', default=None)\n"
    "args = p.parse_args()\nif args.resume:\n"
    "    model.load_state_dict(torch.load(args.resume, weights_only=True), strict=False)\n"
    "for g in loader:\n    loss = model(g)\n    loss.backward()\n"
)


def test_fix_gm601_strict(tmp_path: Path) -> None:
    # an opt-in resume loaded leniently: strict=True is all the finding asks for
    (tmp_path / "train.py").write_text(OPT_IN_LENIENT, encoding="utf-8")
    assert [f.rule for f in findings(tmp_path, "GM601")] == ["GM601"]
    outcome = fix_in(tmp_path)
    assert [a.finding.rule for a in outcome.fixed] == ["GM601"]
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == OPT_IN_LENIENT.replace(
        "strict=False", "strict=True")
    assert findings(tmp_path, "GM601") == [] and fix_in(tmp_path).changed == {}


def test_invalid_examples_with_expected_fix(tmp_path: Path) -> None:
    """Any rule may state ``Invalid(..., fixed=...)``: its fixes must produce exactly that."""
    for rule in RULES:
        for i, case in enumerate(rule.INVALID):
            if case.fixed is None:
                continue
            root = tmp_path / f"{rule.code}-{i}"
            root.mkdir()
            write_sources(case.code, root)
            fix_in(root)
            expected = {DEFAULT_FILE: case.fixed} if isinstance(case.fixed, str) else case.fixed
            for rel, text in expected.items():
                assert (root / rel).read_text(encoding="utf-8") == text, f"{rule.code} INVALID[{i}]"


def test_unsafe_fixes_need_opt_in(tmp_path: Path) -> None:
    case = _invalid("GM401", 0)
    write_sources(case.code, tmp_path)
    before = (tmp_path / DEFAULT_FILE).read_bytes()
    outcome = fix_in(tmp_path, unsafe=False)
    assert outcome.fixed == [] and outcome.unsafe_available == 1
    assert (tmp_path / DEFAULT_FILE).read_bytes() == before


def test_rule_without_a_fix_is_reported_not_touched(tmp_path: Path) -> None:
    # GM601's "default checkpoint" finding has no automatic fix
    case = _invalid("GM601", 1)
    write_sources(case.code, tmp_path)
    before = (tmp_path / DEFAULT_FILE).read_bytes()
    outcome = fix_in(tmp_path)
    assert outcome.fixed == [] and (tmp_path / DEFAULT_FILE).read_bytes() == before


def test_fix_rolled_back_when_the_finding_stays(tmp_path: Path) -> None:
    # strict=True is applied, but the same load is still a default warm start: GM601 stays,
    # so the fix is rolled back and reported
    (tmp_path / "train.py").write_text(
        "import argparse\nimport torch\np = argparse.ArgumentParser()\n"
        "p.add_argument('--init-from', default='runs/pretrained.pt')\nargs = p.parse_args()\n"
        "if args.init_from:\n"
        "    model.load_state_dict(torch.load(args.init_from, weights_only=True), strict=False)\n"
        "for g in loader:\n    loss = model(g)\n    loss.backward()\n", encoding="utf-8")
    before = (tmp_path / "train.py").read_bytes()
    outcome = fix_in(tmp_path)
    assert outcome.fixed == [] and outcome.changed == {}
    assert [r.finding.rule for r in outcome.rejected] == ["GM601"]
    assert "rolled back" in outcome.rejected[0].reason
    assert (tmp_path / "train.py").read_bytes() == before


SEEDED_BENCHMARK = "import torch\r\ntorch.manual_seed(0)  # seed\r\ntorch.backends.cudnn.benchmark = True\r\n"


def test_crlf_encoding_and_mode_preserved(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    # a latin-1 file with a coding cookie and CRLF line endings, executable
    text = ("# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9\r\n"
            "state = torch.load('w.pt')\r\nimport numpy as np\r\nimport random\r\n"
            "random.seed(0)\r\nnp.random.seed(0)\r\nperm = torch.randperm(4)\r\n")
    target.write_bytes(text.encode("latin-1"))
    os.chmod(target, 0o751)
    outcome = fix_in(tmp_path, unsafe=False)
    assert sorted(a.finding.rule for a in outcome.fixed) == ["GM602", "GM603"]
    data = target.read_bytes()
    assert data.decode("latin-1") == (
        "# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9\r\n"
        "state = torch.load('w.pt', weights_only=True)\r\nimport numpy as np\r\nimport random\r\n"
        "random.seed(0)\r\nnp.random.seed(0)\r\ntorch.manual_seed(0)\r\nperm = torch.randperm(4)\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files


def test_added_import_is_crlf_too(tmp_path: Path) -> None:
    target = tmp_path / "t.py"
    target.write_bytes(b"import numpy as np\r\nimport torch\r\ntorch.manual_seed(0)\r\nnp.random.seed(0)\r\n"
                       b"sg = dgl.sampling.sample_neighbors(g, n, 2)\r\n")
    fix_in(tmp_path)
    data = target.read_bytes()
    assert b"import dgl\r\n" in data and b"dgl.seed(0)\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_unparsable_file_untouched_others_fixed(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"import torch\nstate = torch.load('w.pt'\n")
    good = tmp_path / "good.py"
    good.write_text("import torch\nstate = torch.load('w.pt')\n", encoding="utf-8")
    outcome = fix_in(tmp_path)
    assert broken.read_bytes() == b"import torch\nstate = torch.load('w.pt'\n"
    assert "weights_only=True" in good.read_text(encoding="utf-8")
    assert list(outcome.changed) == ["good.py"]


# -- the command line --------------------------------------------------------------------------------
def test_cli_fix_reports_and_exit_code(cli, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch\nstate = torch.load('w.pt')\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("import torch.nn.functional as F\n" + _invalid("GM401", 0).code.split("\n", 1)[1],
                                   encoding="utf-8")
    proc = cli("check", ".", "--fix", "--no-cache", "--color", "never", cwd=tmp_path)
    assert "Fixed 1 finding(s)" in proc.stdout, proc.stdout + proc.stderr
    assert "fixable with --unsafe-fixes" in proc.stdout
    assert proc.returncode == 1  # GM401 remains
    assert "weights_only=True" in (tmp_path / "a.py").read_text(encoding="utf-8")
    proc = cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", "--format", "json", cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert data["fixes"]["fixed"] == 1 and data["fixes"]["applied"][0]["rule"] == "GM401"
    assert data["findings"] == [] and proc.returncode == 0
    proc = cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", "--format", "json", cwd=tmp_path)
    assert json.loads(proc.stdout)["fixes"]["fixed"] == 0


def test_cli_diff_writes_nothing(cli, tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("import torch\nstate = torch.load('w.pt')\n", encoding="utf-8")
    before = target.stat().st_mtime_ns, target.read_bytes()
    proc = cli("check", ".", "--diff", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ("--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n import torch\n"
                           "-state = torch.load('w.pt')\n+state = torch.load('w.pt', weights_only=True)\n")
    assert (target.stat().st_mtime_ns, target.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_cli_never_modifies_without_fix(cli, tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("import torch\nstate = torch.load('w.pt')\n", encoding="utf-8")
    before = target.stat().st_mtime_ns, target.read_bytes()
    assert cli("check", ".", "--no-cache", cwd=tmp_path).returncode == 1
    assert (target.stat().st_mtime_ns, target.read_bytes()) == before


def test_cli_unsafe_fixes_alone_is_a_usage_error(cli, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    proc = cli("check", ".", "--unsafe-fixes", cwd=tmp_path)
    assert proc.returncode == 2 and "--unsafe-fixes needs --fix or --diff" in proc.stderr
