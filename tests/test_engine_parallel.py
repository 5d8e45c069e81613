"""The facts of files the prefilter skips are made in the per-file stage (by the workers, or
by the one process): the cross-file stage starts with every file it can summarise and analyses
nothing on demand, with one core or with two, and reports the same."""

from __future__ import annotations

import os
import signal
import threading

from auditor.config import Config
from auditor.registry import all_rules
from auditor.static import engine
from auditor.static.facts import Span
from auditor.static.nesting import RISKY_DEPTH

from tests.test_security_parse import _children

TREE = {
    "data.py":
        "import dgl\nfrom torch.utils.data import DataLoader\n"
        "class Parts:\n"
        "    def __init__(self, edges):\n"
        "        self.graphs = [self.build(e) for e in edges]\n"
        "    def build(self, e):\n"
        "        return dgl.add_self_loop(dgl.graph(e))\n"
        "    def __getitem__(self, i):\n"
        "        return self.graphs[i]\n"
        "def make_loader(ds):\n"
        "    return DataLoader(ds, batch_size=8)\n",
    "model.py":
        "import dgl\nfrom torch import nn\n"
        "class Net(nn.Module):\n"
        "    def forward(self, g, x):\n"
        "        g = dgl.add_self_loop(g)\n"
        "        return self.conv(g, x)\n",
    # no word GM501 looks for: skipped by its prefilter, yet the graph flows through it
    "train.py":
        "from data import Parts, make_loader\nfrom model import Net\n"
        "loader = make_loader(Parts(edges))\nmodel = Net()\n"
        "for g in loader:\n"
        "    out = model(g, g.ndata['x'])\n",
    **{f"util{i}.py": f"def helper{i}(x):\n    return x + {i}\n" for i in range(12)},
    # too deep to summarise in a worker's stride: left to be analysed, isolated, on demand
    "deep.py": "def helper(x):\n    return " + "- " * (RISKY_DEPTH + 10) + "x\n",
}


def _check(tmp_path, monkeypatch, jobs: int) -> tuple[list, list[str]]:
    on_demand: list[str] = []  # facts-only analyses run in this (the main) process
    real = engine.analyze_source

    def recording(path, abspath, data, codes, force=False, **kw):
        if force and os.getpid() == main_pid:
            on_demand.append(path)
        return real(path, abspath, data, codes, force=force, **kw)

    main_pid = os.getpid()
    monkeypatch.setattr(engine, "analyze_source", recording)
    result = engine.run_check(["."], Config(root=tmp_path), [all_rules()["GM501"]], jobs=jobs,
                              use_cache=False)
    return [(f.path, f.line) for f in result.findings], on_demand


def test_skipped_files_facts_are_made_with_the_rest_by_workers_or_by_one_process(tmp_path, monkeypatch):
    for name, code in TREE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    single, loaded_single = _check(tmp_path, monkeypatch, jobs=1)
    pooled, loaded_pooled = _check(tmp_path, monkeypatch, jobs=2)
    # train.py, skipped by GM501's prefilter, is where the graph flows from data.py into model.py
    assert single == [("model.py", 5)]
    assert pooled == single
    # nothing analysed on demand in the main process but the file too deep to summarise
    assert set(loaded_single) == set(loaded_pooled) == {"deep.py"}


def _pid_rule(monkeypatch, code: str, load: str = "") -> None:
    """``code``'s cross-file query reports the process it ran in (and first loads ``load``, a
    function of a file the prefilter skipped, as a call leading there would)."""
    rule = all_rules()[code]

    def check_project(project):
        if load:
            assert project.function(load) is not None
        return [rule.make_finding("train.py", Span(1, 1, 1, 2), f"{os.getpid()} {sorted(project.files)}")]

    monkeypatch.setattr(rule, "check_project", check_project)


def _stage(tmp_path, codes: list[str], jobs: int):
    result = engine.run_check(["."], Config(root=tmp_path), [all_rules()[c] for c in codes],
                              jobs=jobs, use_cache=False)
    return {f.rule: f.message.split(" ", 1) for f in result.findings}, result


def test_the_heavy_rules_run_beside_the_others_each_on_its_own_project(tmp_path, monkeypatch):
    """GM101 (``runs_beside``) runs in a forked child; a file its queries load on demand (one too
    deep to summarise ahead) stays there, so the other side sees the project the per-file stage
    made, with one core or with two."""
    for name, code in TREE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    assert all_rules()["GM101"].runs_beside and not all_rules()["GM104"].runs_beside
    _pid_rule(monkeypatch, "GM101", load="deep.helper")
    _pid_rule(monkeypatch, "GM104")
    answers = {}
    for jobs in (1, 2):
        found, result = _stage(tmp_path, ["GM101", "GM104"], jobs)
        (child, child_files), (parent, parent_files) = found["GM101"], found["GM104"]
        assert parent == str(os.getpid()) and child != parent
        assert "deep.py" in child_files and "deep.py" not in parent_files
        assert "deep.py" not in result.project.files  # the project handed to fixes: the parent's
        assert "util3.py" in child_files and "util3.py" in parent_files  # skipped, summarised
        answers[jobs] = (child_files, parent_files)
    assert answers[1] == answers[2]
    found, _ = _stage(tmp_path, ["GM101"], 2)  # nothing to run beside: one process
    assert found["GM101"][0] == str(os.getpid())


def test_a_beside_process_that_dies_costs_its_rules_alone(tmp_path, monkeypatch):
    for name, code in TREE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(all_rules()["GM101"], "check_project",
                        lambda project: signal.pthread_kill(threading.get_ident(), signal.SIGSEGV))
    _pid_rule(monkeypatch, "GM104")
    before = _children()
    found, result = _stage(tmp_path, ["GM101", "GM104", "GM201"], 2)
    assert found["GM104"][0] == str(os.getpid())
    assert sorted(e.message for e in result.errors) == [
        "internal error in GM101: its process crashed", "internal error in GM201: its process crashed"]
    assert _children() - before == set()


def test_the_project_stage_runs_without_cyclic_collections_and_leaves_the_collector_as_it_was(
        tmp_path, monkeypatch):
    """The cross-file stage pauses CPython's cyclic collector (what it allocates lives to the end
    of the check); afterwards the collector is on again, at its own thresholds, with nothing
    left frozen, so a long-lived process (the language server) still reclaims the check's
    garbage."""
    import gc

    for name, code in TREE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    seen = []
    rule = all_rules()["GM104"]
    monkeypatch.setattr(rule, "check_project", lambda project: seen.append(gc.isenabled()) or [])
    before = gc.get_threshold()
    engine.run_check(["."], Config(root=tmp_path), [rule], jobs=1, use_cache=False)
    assert seen == [False]
    assert gc.isenabled() and gc.get_threshold() == before and gc.get_freeze_count() == 0
