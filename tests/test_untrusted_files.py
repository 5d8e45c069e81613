"""A checked repository is untrusted (CI checks strangers' pull requests): links out of the tree,
committed caches, crafted configuration, odd baselines, long names and unwritable reports give a
one-line notice or error, never a traceback, a read or write outside the tree, or a hang."""

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.registry import all_rules
from auditor.static.cache import CACHE_DIR, Cache

LOAD = "import torch\nx = torch.load('a')\n"  # GM602, which --fix fixes
FIXED = "import torch\nx = torch.load('a', weights_only=True)\n"
SEEDED = """import random
import torch

torch.manual_seed(0)
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(4, 2)).sum() + random.random()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
SECRET = "import torch\nx = torch.load('never-shown')\n"  # code outside the checked tree
DEEP = "x = " + "[" * 3000 + "]" * 3000 + "\n"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def gm_audit(capsys, monkeypatch, tmp_path):
    """``gm-audit ARGS`` in this process, from folder ``cwd`` (cheap: no interpreter start-up)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))

    def run(*args: str, cwd: Path, cache: bool = False) -> Ran:
        monkeypatch.chdir(cwd)
        with pytest.raises(SystemExit) as exit_info:
            main(["check", "-j", "1", *([] if cache else ["--no-cache"]), *args])
        out, err = capsys.readouterr()
        return Ran(exit_info.value.code, out, err)
    return run


def plain_failure(proc) -> str:
    """The one line of a usage/config/input error (exit 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gm-audit: error: "), proc.stderr
    return lines[0]


def report(proc, code: int = 1) -> dict:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry below ``folder`` (links not followed): kind, bytes and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = os.lstat(p)
            body = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else b""
            out[str(p.relative_to(folder))] = (st.st_mode, st.st_mtime_ns, body)
    return out


@pytest.fixture
def outside(tmp_path):
    """A folder beside the checked tree holding code a link could lead to."""
    folder = tmp_path / "outside"
    (folder / "pkg").mkdir(parents=True)
    (folder / "s.py").write_text(SECRET)
    (folder / "pkg" / "t.py").write_text(SECRET)
    return folder


def test_links_out_of_the_tree_are_reported_never_read_nor_fixed(tmp_path, outside, cli):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "own.py").write_text(LOAD)
    (tree / "v").symlink_to("../outside")
    (tree / "x.py").symlink_to("../outside/s.py")
    (tree / "root").symlink_to("/")
    (tree / "code.txt").write_text(LOAD)
    (tree / "inside.py").symlink_to("code.txt")  # a link inside the tree is checked
    before = snapshot(outside)
    # a subprocess: the old code walked all of / through `root`
    proc = cli("--format", "json", "--no-cache", "--fix", ".", cwd=tree, timeout=60)
    found = report(proc)  # what remains after the fixes
    outside_notice = "skipped: symlink to outside the checked tree"
    assert {e["path"]: e["message"] for e in found["errors"]} == {
        "v": outside_notice, "x.py": outside_notice, "root": outside_notice}
    assert "never-shown" not in proc.stdout + proc.stderr and "v/s.py" not in proc.stdout
    assert snapshot(outside) == before  # nothing read from there is fixed there
    assert (tree / "own.py").read_text() == FIXED
    # checked, but not written through: its finding stays
    assert [f["path"] for f in found["findings"]] == ["inside.py"]
    assert (tree / "inside.py").is_symlink() and (tree / "code.txt").read_text() == LOAD
    assert "inside.py: a symlink; --fix never writes through a link; left as it is" in proc.stderr


def test_committed_cache_of_folders_fifos_links_and_huge_files(tmp_path, outside, gm_audit):
    tree = tmp_path / "tree"
    cache = tree / CACHE_DIR
    cache.mkdir(parents=True)
    (tree / "train.py").write_text(LOAD)
    names = Cache(tree, tuple(all_rules()), enabled=False)
    with open(names.path, "wb") as fh:  # sparse: past the size cap, refused without reading
        fh.truncate(600 * 1024 * 1024)
    os.mkfifo(names.run_path)
    for i in range(6):  # more than the cache keeps: pruning meets all of them
        (cache / f"check-{i}.json").mkdir()
        (cache / f"run-{i}.json").mkdir()
        (cache / f"check-{i}.json" / "inner").write_text("x")
    (cache / "check-link.json").symlink_to(outside / "s.py")
    (cache / "run-link.json").symlink_to(outside)
    for i in range(4):
        (cache / f"check-garbage{i}.json").write_bytes(os.urandom(300))
    os.mkfifo(cache / "run-fifo.json")
    for old in cache.iterdir():  # older than what the run writes: pruned, the link first
        if old not in (names.path, names.run_path):
            stamp = 0 if old.name == "check-link.json" else 1
            os.utime(old, (stamp, stamp), follow_symlinks=False)
    before = snapshot(outside)
    for _ in range(2):  # a cold run writes and prunes, the next one reads what it wrote
        found = report(gm_audit("--format", "json", ".", cwd=tree, cache=True))
        assert [(f["rule"], f["path"]) for f in found["findings"]] == [("GM602", "train.py")]
        assert found["errors"] == []
    assert snapshot(outside) == before
    assert all((cache / f"check-{i}.json" / "inner").read_text() == "x" for i in range(6))
    assert not (cache / "check-link.json").is_symlink()  # the link was pruned, not its target
    assert not [p.name for p in cache.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("content, expected", [
    (DEEP, "invalid TOML: nested too deeply"),
    ("tool = 5\n", "`tool` must be a table, not int"),
    ("[tool]\ngm-audit = 5\n", "`tool.gm-audit` must be a table, not int"),
    ("[tool.gm-audit]\nexclude = [" + '"x*",' * 5000 + "]\n",
     "`exclude` holds 5000 patterns; at most 1000 are accepted"),
    ("[tool.gm-audit.per-file-ignores]\n" + "".join(f'"f{i}.py" = ["GM1"]\n' for i in range(1001)),
     "`per-file-ignores` holds 1001 patterns; at most 1000 are accepted"),
], ids=["deep", "tool-int", "gm-audit-int", "5000-excludes", "1001-per-file-ignores"])
def test_crafted_configuration_is_one_clear_error(tmp_path, gm_audit, content, expected):
    (tmp_path / "train.py").write_text(LOAD)
    (tmp_path / "pyproject.toml").write_text(content)
    line = plain_failure(gm_audit(".", cwd=tmp_path))
    assert line == f"gm-audit: error: {tmp_path / 'pyproject.toml'}: {expected}"
    (tmp_path / "cfg.toml").write_text(content)  # the same through --config
    assert expected in plain_failure(gm_audit("--config", "cfg.toml", ".", cwd=tmp_path))


def test_many_exclude_patterns_cost_once_not_per_file(tmp_path, gm_audit):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.gm-audit]\nexclude = [" + "".join(f'"*a*b*c{i}*",' for i in range(1000)) + "]\n")
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text(LOAD)
    started = time.monotonic()
    found = report(gm_audit("--format", "json", ".", cwd=tmp_path))
    assert len(found["findings"]) == 30
    assert time.monotonic() - started < 10  # 1000 patterns x 30 files, each compiled per use: minutes


@pytest.mark.parametrize("metadata", ["project = 5\n", "[project]\nscripts = 5\n", DEEP],
                         ids=["project-int", "scripts-int", "deep"])
def test_malformed_packaging_metadata_in_a_subfolder_switches_no_rule_off(tmp_path, gm_audit, metadata):
    (tmp_path / "train.py").write_text(SEEDED)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (tmp_path / "sub" / "pyproject.toml").write_text(metadata)
    found = report(gm_audit("--format", "json", ".", cwd=tmp_path))
    assert [(f["rule"], f["line"]) for f in found["findings"]] == [("GM603", 4)]  # at the seeding
    assert found["errors"] == []


def test_baseline_that_is_endless_a_fifo_a_folder_or_too_deep(tmp_path, gm_audit):
    (tmp_path / "train.py").write_text(LOAD)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    expected = {"/dev/zero": "not a regular file", "fifo.json": "not a regular file",
                "folder.json": "Is a directory", "deep.json": "JSON nested too deeply"}
    for path, why in expected.items():
        line = plain_failure(gm_audit("--baseline", path, ".", cwd=tmp_path))
        assert line == f"gm-audit: error: cannot read baseline {path}: {why}"


def test_fix_of_a_file_whose_name_is_near_name_max(tmp_path, gm_audit):
    name = "n" * 237 + ".py"  # 240 bytes: a temporary name built from it passes 255
    (tmp_path / name).write_text(LOAD)
    (tmp_path / "short.py").write_text(LOAD)
    proc = gm_audit("--fix", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / name).read_text() == FIXED and (tmp_path / "short.py").read_text() == FIXED
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "short.py"])


def test_report_to_a_folder_or_a_full_disk_is_one_line(tmp_path, gm_audit):
    (tmp_path / "train.py").write_text(LOAD)
    (tmp_path / "out").mkdir()
    line = plain_failure(gm_audit("-o", "out", ".", cwd=tmp_path))
    assert line == "gm-audit: error: cannot write the report to out: Is a directory"
    if Path("/dev/full").exists():
        line = plain_failure(gm_audit("-o", "/dev/full", ".", cwd=tmp_path))
        assert line == "gm-audit: error: cannot write the report to /dev/full: No space left on device"
    line = plain_failure(gm_audit("--baseline", "out", "--write-baseline", ".", cwd=tmp_path))
    assert line == "gm-audit: error: cannot write baseline out: Is a directory"


# -- fuzz: crafted trees ---------------------------------------------------------------------------
SEED = 20
TREES = 5
# configs gm-audit runs with (the project's metadata malformed, not gm-audit's table) ...
TAKEN = ["", "project = 5\n", "[project]\nscripts = 5\n", '[project.scripts]\na = "sub.code:m"\n',
         '[tool.gm-audit]\nexclude = ["v", "*.txt"]\n', "[tool.gm-audit.probe]\nsteps = {}\n"]
# ... and configs that stop it with an error
REFUSED = [DEEP, "tool = 5\n", "[tool]\ngm-audit = 5\n", "[tool.gm-audit]\nexclude = 7\n",
           "[tool.gm-audit]\nselect = [[[1]]]\n", "[tool.gm-audit]\n" + "x" * 5000 + "\n",
           "\x00\xff", "[[tool]]\n", '[tool.gm-audit]\nper-file-ignores = {"*" = 5}\n']
LINKS = ["../outside", "../outside/s.py", "../outside/pkg/t.py", "/", "..", ".", "loop",
         "missing.py", "/dev/zero", "own.py", "sub", "../outside/../outside/pkg"]


def crafted_tree(rng: random.Random, tree: Path) -> None:
    """Code, links in and out of the tree, FIFOs, crafted configs, caches and long names."""
    (tree / "sub").mkdir(parents=True)
    (tree / "own.py").write_text(LOAD)
    (tree / "sub" / "code.py").write_text(SEEDED)
    (tree / "escape.py").symlink_to("../outside/s.py")
    (tree / ("L" * rng.randint(200, 250) + ".py")).write_text(LOAD)
    (tree / ("D" * rng.randint(200, 255))).mkdir()
    for i in range(rng.randint(6, 12)):
        folder = rng.choice([tree, tree / "sub"])
        link = folder / f"link{i}{rng.choice(['.py', ''])}"
        link.symlink_to(rng.choice(LINKS))
    for name in rng.sample(["fifo.py", "pyproject.toml", "setup.cfg", "__init__.py"], 2):
        os.mkfifo(rng.choice([tree, tree / "sub"]) / name)
    if not (tree / "pyproject.toml").exists():  # gm-audit's config: mostly one it runs with
        (tree / "pyproject.toml").write_text(rng.choice(TAKEN * 3 + REFUSED))
    if not (tree / "sub" / "pyproject.toml").exists():  # packaging metadata only
        (tree / "sub" / "pyproject.toml").write_text(rng.choice(TAKEN + REFUSED))
    if rng.random() < 0.5:
        (tree / "sub" / "setup.py").write_text("setup(entry_points={'console_scripts': ['a=sub.code:m']})\n")
    cache = tree / CACHE_DIR
    kind = rng.choice(["folders", "link", "fifo", "file"])
    if kind == "folders":
        cache.mkdir()
        for i in range(rng.randint(4, 9)):
            entry = cache / f"{rng.choice(['check', 'run'])}-{i}.json"
            rng.choice([entry.mkdir, lambda e=entry: e.symlink_to("../../outside/s.py"),
                        lambda e=entry: os.mkfifo(e), lambda e=entry: e.write_bytes(rng.randbytes(64))])()
    elif kind == "link":
        cache.symlink_to("../outside")
    elif kind == "fifo":
        os.mkfifo(cache)
    else:
        cache.write_text("not a folder")


def test_fuzzed_hostile_trees_never_crash_nor_leave_the_tree(tmp_path, outside, cli):
    rng = random.Random(SEED)
    env = {"XDG_CACHE_HOME": str(tmp_path / "home-cache")}
    before = snapshot(outside)
    for i in range(TREES):
        tree = tmp_path / f"tree{i}"
        crafted_tree(rng, tree)
        args = ["--fix", "--format", rng.choice(["json", "text"]), "-q", "-j", rng.choice("12")]
        if rng.random() < 0.2:
            args += ["--baseline", rng.choice(["/dev/zero", "fifo.py", "sub", "missing.json"])]
        proc = cli(*args, ".", cwd=tree, input_env=env, timeout=60)
        said = proc.stdout + proc.stderr
        assert proc.returncode in (0, 1, 2), said
        assert "Traceback" not in said and "internal error" not in said, said
        assert snapshot(outside) == before, f"tree{i}: something outside the tree changed"
        assert not running_in(tmp_path), f"tree{i}: a process outlived the check"
        if proc.returncode != 2:  # the link out is reported, --fix or not
            assert "symlink to outside the checked tree" in proc.stdout and "never-shown" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["outside", "home-cache", *(f"tree{i}" for i in range(TREES))])


def running_in(root: Path) -> list[int]:
    """Processes whose working folder lies under ``root`` (a worker left behind keeps the
    check's); Linux's /proc."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(root)):
                found.append(int(pid))
        except OSError:
            continue
    return found
