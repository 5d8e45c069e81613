"""The GitHub Actions workflow (docs/ci.md) and the README's pre-commit configuration are real: the YAML parses,
every gm-audit command in them is accepted by gm-audit's own parser, the SARIF files uploaded are
the ones written, and pre-commit's own validators accept the config and this repo's manifest."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from auditor.cli import build_parser, normalise_argv

REPO = Path(__file__).resolve().parent.parent


def section_yaml(heading: str, doc: str = "README.md") -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    body = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", body, re.S)


def gm_audit_commands(script: str) -> list[list[str]]:
    return [shlex.split(line.strip())[1:] for line in script.splitlines()
            if line.strip().startswith("gm-audit ")]


def test_workflow_checks_every_push_probes_on_demand_and_uploads_sarif():
    (block,) = section_yaml("CI: GitHub Actions", "docs/ci.md")
    flow = yaml.safe_load(block)
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    assert flow["permissions"]["security-events"] == "write"
    jobs = flow["jobs"]
    assert "workflow_dispatch" in jobs["probe"]["if"] and "!=" in jobs["check"]["if"]
    parser = build_parser()
    for name, command in (("check", "check"), ("probe", "probe")):
        steps = jobs[name]["steps"]
        written = set()
        for step in steps:
            for argv in gm_audit_commands(step.get("run", "")):
                args = parser.parse_args(normalise_argv(argv))  # exits on an unknown option
                assert args.command == command
                if args.output:
                    written.add(args.output)
        uploads = [s["with"] for s in steps if s.get("uses", "").startswith(
            "github/codeql-action/upload-sarif@")]
        assert uploads and all(u["sarif_file"] in written for u in uploads)
        assert all(u["category"] for u in uploads)
    categories = [s["with"]["category"] for j in jobs.values() for s in j["steps"]
                  if "upload-sarif" in s.get("uses", "")]
    assert len(set(categories)) == len(categories)


def pre_commit() -> str:
    found = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    if not Path(found).exists():
        pytest.skip("pre-commit not installed")
    return found


def test_pre_commit_snippet_uses_this_repos_hook(tmp_path):
    (block,) = section_yaml("pre-commit")
    config = yaml.safe_load(block)
    (hook,) = config["repos"][0]["hooks"]
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] in {h["id"] for h in manifest}
    entry = next(h["entry"] for h in manifest if h["id"] == hook["id"])
    args = build_parser().parse_args(normalise_argv([*shlex.split(entry)[1:], *hook.get("args", []),
                                                     "train.py"]))
    assert args.command == "check"
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(block)
    for command in (["validate-config", str(path)],
                    ["validate-manifest", str(REPO / ".pre-commit-hooks.yaml")]):
        run = subprocess.run([pre_commit(), *command], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
