"""`Training.contains`: whether a function, or anything it calls, runs a backward. Answers are
kept across questions; one cut short by a cycle must not stand in for a later full answer."""

from __future__ import annotations

import pytest

from auditor.config import Config
from auditor.static.engine import run_check
from auditor.static.training import Training
from auditor.testing import write_sources

CYCLE = {
    "steps.py": (
        "def outer(model, loss):\n"
        "    inner(model, loss)\n"  # asked first from outer, inner's walk is cut at outer
        "    loss.backward()\n"
        "\n"
        "def inner(model, loss):\n"
        "    if model.training:\n"
        "        outer(model, loss)\n"
        "\n"
        "def helper(x):\n"
        "    return x + 1\n"
        "\n"
        "def caller(x):\n"
        "    return helper(x)\n"
    ),
}


@pytest.mark.parametrize("order", [("outer", "inner"), ("inner", "outer")])
def test_an_answer_cut_by_a_cycle_is_not_kept(tmp_path, monkeypatch, order):
    write_sources(CYCLE, tmp_path)
    monkeypatch.chdir(tmp_path)
    project = run_check(["."], Config(root=tmp_path), [], jobs=1, use_cache=False,
                        need_project=True).project
    training = Training(project)
    answers = {name: training.contains(f"steps.{name}", "backward") for name in order}
    assert answers == {"outer": True, "inner": True}
    assert not training.contains("steps.caller", "backward")
    assert not training.contains("steps.helper", "backward")
