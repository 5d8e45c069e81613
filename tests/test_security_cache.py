"""The cache folder is untrusted: committed, forged, corrupt or symlinked cache files run no code,
change no report and make gm-audit write nowhere outside it."""

import json
import os
import pickle
from pathlib import Path

import pytest

from auditor.registry import all_rules
from auditor.static.cache import CACHE_DIR, Cache
from auditor.static.engine import analyze_source
from auditor.static.plain import NotPlain, decode, encode

SOURCE = "import torch\n\nstate = torch.load('ckpt.pt')\n"


class Payload:
    """Unpickling this touches a marker file: what an attacker's committed cache would do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "train.py").write_text(SOURCE)
    return root


@pytest.fixture
def check(cli, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "home-cache")}

    def run(root: Path, *extra: str, more_env: dict | None = None) -> dict:
        proc = cli("--format", "json", *extra, ".", cwd=root, input_env={**env, **(more_env or {})})
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        return json.loads(proc.stdout)
    return run


def rules_found(report: dict) -> list[tuple[str, int]]:
    return [(f["rule"], f["line"]) for f in report["findings"]]


def test_committed_pickle_and_hostile_json_run_no_code(project, check, tmp_path):
    marker = tmp_path / "pwned"
    cache = project / CACHE_DIR
    cache.mkdir()
    codes = tuple(all_rules())
    names = Cache(project, codes, enabled=False)
    for stem in (names.path.stem, names.run_path.stem):
        # the names of the old pickle cache and of the new one, a pickle in each
        (cache / f"{stem}.pickle").write_bytes(pickle.dumps(Payload(str(marker))))
        (cache / f"{stem}.json").write_bytes(pickle.dumps(Payload(str(marker))))
    report = check(project)
    assert not marker.exists()
    assert rules_found(report) == [("GM602", 3)]
    # a well-formed file naming a foreign type to build: not built, not believed
    hostile = {"$dc": "subprocess:Popen", "f": {"args": ["touch", str(marker)]}}
    for path in cache.glob("*.json"):
        header = path.read_bytes().partition(b"\n")[0]
        path.write_bytes(header + b"\n" + json.dumps(hostile).encode())
    assert rules_found(check(project)) == [("GM602", 3)]
    assert not marker.exists()


def test_forged_or_corrupt_cache_is_a_cold_run(project, check):
    assert rules_found(check(project)) == [("GM602", 3)]
    cache = project / CACHE_DIR
    run_file = next(cache.glob("run-*.json"))
    header, _, payload = run_file.read_bytes().partition(b"\n")
    # a forger who knows the format but not this user's key claims the tree is clean
    forged = payload.replace(b'"GM602"', b'"GM999"')
    assert forged != payload
    run_file.write_bytes(header + b"\n" + forged)
    assert rules_found(check(project)) == [("GM602", 3)]
    for damage in (lambda b: b[: len(b) // 2], lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:]):
        for path in cache.glob("*.json"):
            path.write_bytes(damage(path.read_bytes()))
        report = check(project)
        assert rules_found(report) == [("GM602", 3)]
        assert report["errors"] == []


def test_cache_symlinks_are_never_followed(project, check, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / CACHE_DIR).symlink_to(outside)
    check(project)
    assert list(outside.iterdir()) == []  # nothing written through a symlinked folder

    (project / CACHE_DIR).unlink()
    cache = project / CACHE_DIR
    cache.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    (cache / ".gitignore").symlink_to(victim)
    names = Cache(project, tuple(all_rules()), enabled=False)
    names.path.symlink_to(victim)
    names.run_path.symlink_to(victim)
    assert rules_found(check(project)) == [("GM602", 3)]
    assert victim.read_text() == "keep me\n"
    assert not names.path.is_symlink() and names.path.is_file()  # the link itself was replaced


def test_cache_dir_option_and_environment(project, check, tmp_path):
    by_option = tmp_path / "by-option"
    check(project, "--cache-dir", str(by_option))
    assert list(by_option.glob("check-*.json")) and not (project / CACHE_DIR).exists()
    by_env = tmp_path / "by-env"
    check(project, more_env={"GM_AUDIT_CACHE_DIR": str(by_env)})
    assert list(by_env.glob("run-*.json")) and not (project / CACHE_DIR).exists()


def test_plain_encoding_round_trips_results_and_refuses_foreign_types(tmp_path):
    source = (Path(__file__).parent.parent / "fixtures" / "pipeline" / "train.py").read_bytes()
    result = analyze_source("train.py", tmp_path / "train.py", source, tuple(all_rules()))
    assert result.facts is not None
    assert decode(json.loads(json.dumps(encode(result)))) == result
    for hostile in ({"$dc": "os:system", "f": {}}, {"$enum": "builtins:object", "v": 1},
                    {"$dc": "auditor.static.facts:Span", "f": {"line": 1}}, {"$what": 1}):
        with pytest.raises(NotPlain):
            decode(hostile)
    with pytest.raises(NotPlain):
        encode(object())
