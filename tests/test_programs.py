"""Programs: each file is its own module, imports resolve the way Python resolves them for the
program that runs the importing file, and evidence is never joined across programs."""

import os
from pathlib import Path

import pytest

from auditor.config import Config
from auditor.registry import all_rules
from auditor.static.engine import run_check
from auditor.static.project import Project
from auditor.testing import check_code, write_sources

GM101 = [all_rules()["GM101"]]

ENCODER = (
    "import torch\nfrom torch import nn\n\n"
    "class Encoder(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
    "    def forward(self, x):\n        h = self.fc(x)\n        return h{detach}\n"
)
BUGGY, CLEAN = ENCODER.format(detach=".detach()"), ENCODER.format(detach="")
TRAIN_LOOP = (
    "    model = Encoder()\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "    x = torch.randn(8, 4)\n"
    "    for step in range(10):\n"
    "        loss = ((model(x) - x) ** 2).mean()\n"
    "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
)
SCRIPT = (
    "import torch\n{imports}\n\n"
    "def main():\n" + TRAIN_LOOP + "\n"
    "if __name__ == '__main__':\n    main()\n"
)


def script(imports: str) -> str:
    return SCRIPT.format(imports=imports)


def findings(files: dict[str, str], rules=GM101) -> list[tuple[str, str, int, str]]:
    result = check_code(files, rules)
    assert result.errors == []
    return [(f.rule, f.path, f.line, f.message) for f in result.findings]


@pytest.mark.parametrize("buggy, clean", [("exp1", "exp2"), ("exp2", "exp1")])
def test_sibling_experiment_folders_are_different_modules(buggy, clean):
    # the common research layout: one folder per experiment, same module names, no __init__.py
    files = {
        f"{buggy}/layers.py": BUGGY, f"{buggy}/train.py": script("from layers import Encoder"),
        f"{clean}/layers.py": CLEAN, f"{clean}/train.py": script("from layers import Encoder"),
    }
    found = findings(files)
    assert [(rule, path, line) for rule, path, line, _ in found] == [("GM101", f"{buggy}/layers.py", 11)]
    message = found[0][3]
    assert f"{buggy}/train.py" in message and clean not in message


def test_a_script_imports_its_own_folder_before_other_modules_of_that_name():
    helper = "def prepare(h):\n    return h{detach}\n"
    train = script("from model import Encoder\nfrom utils import prepare").replace(
        "loss = ((model(x) - x)", "loss = ((prepare(model(x)) - x)")
    tree = {
        "scripts/model.py": CLEAN, "scripts/train.py": train,
        "lib/__init__.py": "", "lib/utils.py": helper.format(detach=""),
    }
    # the script's sibling detaches: found there, not in the package's or the root's utils
    found = findings({**tree, "scripts/utils.py": helper.format(detach=".detach()"),
                      "utils.py": helper.format(detach="")})
    assert [(path, line) for _, path, line, _ in found] == [("scripts/utils.py", 2)]
    # the root's utils detaches, the script's own does not: Python never runs the root's one
    assert findings({**tree, "scripts/utils.py": helper.format(detach=""),
                     "utils.py": helper.format(detach=".detach()")}) == []


def test_src_layout_package_imported_by_a_script():
    files = {
        "src/mypkg/__init__.py": "",
        "src/mypkg/model.py": BUGGY,
        "scripts/train.py": script("from mypkg.model import Encoder"),
        "mypkg_old/model.py": CLEAN,  # a look-alike folder that is not the package
    }
    assert [(path, line) for _, path, line, _ in findings(files)] == [("src/mypkg/model.py", 11)]


def test_package_installed_from_a_setup_py_folder():
    # a monorepo installs `mylib` from python/ (itself a package of the repository)
    files = {
        "python/__init__.py": "",
        "python/setup.py": "from setuptools import setup\nsetup(name='mylib', packages=['mylib'])\n",
        "python/mylib/__init__.py": "",
        "python/mylib/model.py": BUGGY,
        "examples/a/train.py": script("from mylib.model import Encoder"),
    }
    assert [(path, line) for _, path, line, _ in findings(files)] == [("python/mylib/model.py", 11)]


@pytest.mark.parametrize("inside", [True, False])
def test_relative_import_in_a_package(inside):
    # `from .layers import Encoder` is the package's layers.py, whatever a root layers.py holds
    files = {
        "pkg/__init__.py": "",
        "pkg/layers.py": BUGGY if inside else CLEAN,
        "pkg/train.py": script("from .layers import Encoder"),
        "layers.py": CLEAN if inside else BUGGY,
    }
    found = [(path, line) for _, path, line, _ in findings(files)]
    assert found == ([("pkg/layers.py", 11)] if inside else [])


def test_try_import_fallback_of_an_optional_package():
    files = {
        "layers.py": BUGGY,
        "train.py": script("try:\n    from fast_layers_ext import Encoder\n"
                           "except ImportError:\n    from layers import Encoder"),
    }
    assert [(path, line) for _, path, line, _ in findings(files)] == [("layers.py", 11)]


@pytest.mark.parametrize("exported", [True, False])
def test_star_import_follows_all(exported):
    # the package binds the names of both `import *`s, the last one winning; `__all__` says
    # which names the buggy module's star import gives
    files = {
        "nets/__init__.py": "from .clean import *\nfrom .impl import *\n",
        "nets/clean.py": CLEAN,
        "nets/impl.py": BUGGY + f"\n__all__ = {['Encoder'] if exported else ['helper']}\n",
        "train.py": script("from nets import Encoder"),
    }
    found = [(path, line) for _, path, line, _ in findings(files)]
    assert found == ([("nets/impl.py", 11)] if exported else [])


def test_star_imports_of_missing_modules_cost_nothing(monkeypatch):
    # a package star-importing modules the tree lacks (files left out, a subset of a repository)
    # binds nothing the project defines through them; each was a guess at every name asked,
    # multiplied at each level of the re-export chase (a 42-file subset of a repository: 15x the
    # parse floor)
    chased: list[str] = []
    chase = Project._reexported

    def counted(self, qualname, depth):
        chased.append(qualname)
        return chase(self, qualname, depth)

    monkeypatch.setattr(Project, "_reexported", counted)

    def run(missing: int):
        chased.clear()
        stars = "".join(f"from .gone{i} import *\n" for i in range(missing))
        files = {
            "nets/__init__.py": "from .impl import *\n" + stars,
            "nets/impl.py": BUGGY,
            "train.py": script("from nets import Encoder"),
        }
        return findings(files), len(chased)

    found, chases = run(0)
    assert [(path, line) for _, path, line, _ in found] == [("nets/impl.py", 11)]
    assert run(8) == (found, chases)


def project_of(tmp_path: Path, files: dict[str, str]):
    write_sources(files, tmp_path)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run_check(["."], Config(root=tmp_path), list(all_rules().values()), jobs=1,
                           use_cache=False, need_project=True)
        return result, {(p.entry, p.kind): sorted(p.files) for p in result.project.programs()}
    finally:
        os.chdir(old)


CLI = (
    "import numpy as np\nimport torch\nfrom mypkg.seeding import seed_all\nfrom mypkg.model import Encoder\n\n"
    "def main():\n    seed_all(0)\n    noise = np.random.normal(size=3)\n" + TRAIN_LOOP
)
SEEDING = "import random\nimport torch\n\ndef seed_all(s):\n    random.seed(s)\n    torch.manual_seed(s)\n"


def test_console_script_is_an_entry_point(tmp_path):
    files = {
        "pyproject.toml": '[project]\nname = "mypkg"\n\n[project.scripts]\nmypkg-train = "mypkg.cli:main"\n',
        "src/mypkg/__init__.py": "",
        "src/mypkg/cli.py": CLI,
        "src/mypkg/seeding.py": SEEDING,
        "src/mypkg/model.py": CLEAN,
    }
    result, programs = project_of(tmp_path, files)
    assert programs == {("src/mypkg/cli.py", "console-script"): [
        "src/mypkg/__init__.py", "src/mypkg/cli.py", "src/mypkg/model.py", "src/mypkg/seeding.py"]}
    # `main` runs: seed_all's seeding counts, and the numpy draw is the one RNG left unseeded,
    # reported at that seeding, which leaves it out
    gm603 = [f for f in result.findings if f.rule == "GM603"]
    assert [(f.path, f.line) for f in gm603] == [("src/mypkg/seeding.py", 5)]
    assert "the seeding in `src/mypkg/seeding.py:seed_all` covers random, torch, torch.cuda but not " \
        "the numpy RNG" in gm603[0].message and "(src/mypkg/cli.py:8)" in gm603[0].message
    # without the declaration no entry point runs the package: it is library code, judged on
    # the seeding its own imports hold (the same answer here), never on a guess about callers
    result, programs = project_of(tmp_path / "undeclared", {k: v for k, v in files.items()
                                                             if k != "pyproject.toml"})
    assert programs == {}
    gm603 = [(f.path, f.line, f.severity.value) for f in result.findings if f.rule == "GM603"]
    assert gm603 == [("src/mypkg/cli.py", 8, "warning")]


def test_seeding_is_judged_per_program(tmp_path):
    # exp1 seeds numpy, exp2 does not: exp2's draw is reported at exp2's own seeding helper
    seeding = "import numpy as np\nimport torch\n\ndef seed_all(s):\n    torch.manual_seed(s){more}\n"
    train = ("import numpy as np\nimport torch\nfrom seeding import seed_all\nfrom layers import Encoder\n\n"
             "def main():\n    seed_all(0)\n    noise = np.random.normal(size=3)\n" + TRAIN_LOOP
             + "\nif __name__ == '__main__':\n    main()\n")
    files = {
        "exp1/seeding.py": seeding.format(more="\n    np.random.seed(s)"), "exp1/layers.py": CLEAN,
        "exp1/train.py": train,
        "exp2/seeding.py": seeding.format(more=""), "exp2/layers.py": CLEAN, "exp2/train.py": train,
    }
    result, programs = project_of(tmp_path, files)
    assert sorted(programs) == [("exp1/train.py", "script"), ("exp2/train.py", "script")]
    assert programs[("exp1/train.py", "script")] == ["exp1/layers.py", "exp1/seeding.py", "exp1/train.py"]
    gm603 = [f for f in result.findings if f.rule == "GM603"]
    assert [(f.path, f.line) for f in gm603] == [("exp2/seeding.py", 5)]
    assert "exp2/train.py:8" in gm603[0].message and "exp1" not in gm603[0].message


def test_code_no_call_reaches_is_judged_by_the_programs_importing_it(tmp_path):
    # a dataset's __getitem__ and a process target run although no call of the tree reaches
    # them: each experiment's draw is judged by what that experiment's own code seeds
    utils = ("import random\nimport torch\n\ndef set_seed(s):\n    torch.manual_seed(s){more}\n\n"
             "class Data:\n    def __getitem__(self, i):\n        order = list(range(5))\n"
             "        random.shuffle(order)\n        return order\n")
    train = ("import torch\nimport torch.multiprocessing as mp\nfrom utils import set_seed, Data\n"
             "from layers import Encoder\n\n"
             "def main(rank, args):\n    set_seed(0)\n    data = Data()\n" + TRAIN_LOOP
             + "\nif __name__ == '__main__':\n    mp.spawn(main, args=(None,))\n")
    files = {
        "exp1/utils.py": utils.format(more="\n    random.seed(s)"), "exp1/layers.py": CLEAN,
        "exp1/train.py": train,
        "exp2/utils.py": utils.format(more=""), "exp2/layers.py": CLEAN, "exp2/train.py": train,
    }
    result, _ = project_of(tmp_path, files)
    gm603 = [f for f in result.findings if f.rule == "GM603"]
    assert [(f.path, f.line) for f in gm603] == [("exp2/utils.py", 5)]
    assert "`exp2/utils.py:set_seed`" in gm603[0].message and "exp2/utils.py:10" in gm603[0].message \
        and "exp1" not in gm603[0].message


def test_checking_a_package_from_inside_it(tmp_path):
    # `cd mypkg && gm-audit .`: the package's absolute imports of itself still resolve
    files = {
        "mypkg/__init__.py": "from . import model\n",
        "mypkg/model.py": BUGGY,
        "mypkg/train.py": script("from mypkg.model import Encoder"),
    }
    write_sources(files, tmp_path)
    old = os.getcwd()
    os.chdir(tmp_path / "mypkg")
    try:
        result = run_check(["."], Config(root=tmp_path / "mypkg"), GM101, jobs=1, use_cache=False)
    finally:
        os.chdir(old)
    assert [(f.path, f.line) for f in result.findings] == [("model.py", 11)]


def test_programs_follow_imports_of_files_the_prefilter_skipped(tmp_path):
    # run.py and pipeline.py mention nothing GM603 looks for: their imports still make the program
    files = {
        "run.py": "from pipeline import go\n\nif __name__ == '__main__':\n    go()\n",
        "pipeline.py": "from data import Data\n\ndef go():\n    return Data()\n",
        "data.py": "import random\n\nclass Data:\n    def __getitem__(self, i):\n"
                   "        return random.random()\n",
    }
    write_sources(files, tmp_path)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run_check(["."], Config(root=tmp_path), [all_rules()["GM603"]], jobs=1,
                           use_cache=False, need_project=True)
        # the others get no rule's visit, but their facts are made with the rest
        assert sorted(result.project.files) == ["data.py", "pipeline.py", "run.py"]
        programs = {(p.entry, p.kind): sorted(p.files) for p in result.project.programs()}
    finally:
        os.chdir(old)
    assert programs == {("run.py", "script"): ["data.py", "pipeline.py", "run.py"]}


def test_a_program_that_does_not_train_is_not_held_to_another_ones_training():
    # gen.py samples random hyper-parameters (its purpose); train.py trains and seeds nothing
    files = {
        "gen.py": "import random\n\nconfig = {'lr': random.choice([0.1, 0.01])}\nprint(config)\n",
        "train.py": "import torch\nfrom layers import Encoder\n\n"
                    + "\n".join(line[4:] for line in TRAIN_LOOP.splitlines()) + "\n",
        "layers.py": CLEAN,
    }
    found = findings(files, [all_rules()["GM603"]])
    assert {path for _, path, _, _ in found} == {"layers.py"}  # the weight init train.py runs



FIT = (
    "def fit(model, opt, x, steps):\n"
    "    for _ in range(steps):\n"
    "        loss = ((model(x) - x) ** 2).mean()\n"
    "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
)
FIT_SCRIPT = (
    "import torch\nfrom engine import fit\nfrom layers import Encoder\n\n"
    "def main():\n"
    "    model = Encoder()\n"
    "    opt = torch.optim.Adam(model.parameters())\n"
    "{rebuild}"
    "    fit(model, opt, torch.randn(8, 4), 10)\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def test_optimizer_is_judged_with_the_model_of_its_own_program():
    # two scripts share one training helper, each with its own model and optimizer: the model
    # one script makes is never held against the optimizer the other builds
    files = {"engine.py": FIT, "layers.py": CLEAN, "train_a.py": FIT_SCRIPT.format(rebuild=""),
             "train_b.py": FIT_SCRIPT.format(rebuild="")}
    assert findings(files, [all_rules()["GM105"]]) == []


def test_stale_optimizer_is_reported_in_its_program_with_its_sites():
    files = {"engine.py": FIT, "layers.py": CLEAN, "train_a.py": FIT_SCRIPT.format(rebuild=""),
             "train_b.py": FIT_SCRIPT.format(rebuild="    model = Encoder()\n")}
    found = findings(files, [all_rules()["GM105"]])
    assert [(rule, path, line) for rule, path, line, _ in found] == [("GM105", "train_b.py", 8)]
    assert "train_a" not in found[0][3]


SEEDS_AT_IMPORT = "import random\nimport torch\nrandom.seed(0)\ntorch.manual_seed(0)\n"
DRAWS = ("import random\nimport torch\n{imports}\n\n"
         "def main():\n    model = torch.nn.Linear(4, 4)\n    opt = torch.optim.Adam(model.parameters())\n"
         "    for step in range(10):\n        x = torch.randn(8, 4) * random.random()\n"
         "        loss = model(x).pow(2).mean()\n        opt.zero_grad()\n        loss.backward()\n"
         "        opt.step()\n\nif __name__ == '__main__':\n    main()\n")


@pytest.mark.parametrize("imports, seeded", [
    ("import pkg.seeding", True),  # binds only `pkg`, yet runs pkg/seeding.py
    ("import pkg.seeding as s", True), ("from pkg import seeding", True), ("import pkg", False)])
def test_import_of_a_dotted_module_runs_that_module(imports, seeded):
    files = {"pkg/__init__.py": "", "pkg/seeding.py": SEEDS_AT_IMPORT, "train.py": DRAWS.format(imports=imports)}
    found = findings(files, [all_rules()["GM603"]])
    assert (found == []) == seeded, found
