"""The committed triage stays current: every error- or warning-level finding of gm-audit on the
unmodified corpus is known to it, with a verdict and a reason (issue 11). A change that adds
findings triages them in the same commit (``python -m benchmarks.ecosystem.report --update``,
then judge the ``untriaged`` entries)."""

import pytest

from benchmarks.ecosystem import triage
from benchmarks.ecosystem.corpus import CORPUS, findings, repo_path, repositories
from benchmarks.ecosystem.report import compare, precision_table, render

REPOS = repositories()
# the triage covers the repositories it was written for; repositories added since are measured by
# the independently judged samples (benchmarks/ecosystem/judged/), never triaged by the session
# that changes the rules
TRIAGED = [r for r in REPOS if triage.triage_file(r).exists()]


def test_corpus_is_there():
    # the corpus travels with shared/; without it the ecosystem tests would silently test nothing
    assert len(REPOS) >= 6, f"no corpus at {CORPUS} (set GM_AUDIT_CORPUS)"


def test_the_triaged_repositories_are_in_the_corpus():
    assert len(TRIAGED) >= 6, f"triage files without their corpus repositories at {CORPUS}"


@pytest.mark.parametrize("repo", TRIAGED)
def test_every_finding_is_triaged(repo):
    outcome = compare(repo, findings(repo_path(repo)))
    loud = [f for f in outcome.new if f.severity in ("error", "warning")]
    assert not loud, "findings unknown to the triage (run report --update, judge them):\n" + \
        "\n".join(f"{f.rule} {f.path}:{f.line} {f.line_text}" for f in loud)
    undecided = [j for j in outcome.judged if j.verdict == triage.UNTRIAGED]
    assert not undecided, f"{len(undecided)} findings of {repo} still untriaged"
    assert all(j.reason.strip() for j in outcome.judged)
    table = render([outcome])
    assert f"## {repo}: {len(outcome.reported)} findings" in table


def test_new_and_gone_are_reported(tmp_path, monkeypatch):
    # a finding the triage does not know is new; a triaged one that is no longer reported is gone
    (tmp_path / "train.py").write_text(
        "import torch\nstate = torch.load('ckpt.pt')\n", encoding="utf-8")
    monkeypatch.setattr(triage, "TRIAGE_DIR", tmp_path)
    reported = findings(tmp_path)
    assert [f.rule for f in reported] == ["GM602"]
    outcome = compare("tiny", reported)
    assert outcome.new == reported and outcome.gone == []
    stale = triage.Judgement("GM101", "model.py", 3, "return h.detach()", "error",
                             "true_positive", "checked")
    judged = {**{f.key: triage.untriaged_entry(f) for f in reported}, stale.key: stale}
    judged[reported[0].key].verdict = "true_positive"
    triage.save("tiny", judged)
    outcome = compare("tiny", reported)
    assert outcome.new == [] and [j.key for j in outcome.gone] == [stale.key]
    assert precision_table([outcome])["GM602"]["true_positive"] == 1
