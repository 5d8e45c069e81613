"""With workers, the facts of files the prefilter skips are made ahead in the workers: the
cross-file stage gets them without analysing anything in the main process, and reports what a
single process reports."""

from __future__ import annotations

import os

from auditor.config import Config
from auditor.registry import all_rules
from auditor.static import engine

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


def test_workers_make_skipped_files_facts_ahead(tmp_path, monkeypatch):
    for name, code in TREE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    single, loaded_single = _check(tmp_path, monkeypatch, jobs=1)
    pooled, loaded_pooled = _check(tmp_path, monkeypatch, jobs=2)
    assert single == [("model.py", 5)]
    assert "train.py" in loaded_single  # one process: analysed on demand
    assert pooled == single
    assert loaded_pooled == []  # workers: made ahead, nothing analysed in the main process
