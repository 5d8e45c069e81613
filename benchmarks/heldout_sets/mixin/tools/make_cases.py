"""Build every case from base/src + the one-edit specification in cases.py.

Writes, per case, cases/cNN/src/<file>.patch (difflib.unified_diff of the one changed file, headers
`--- base/src/<file>` / `+++ cNN/src/<file>`) and cases/cNN/spec.json (truth lines resolved in the case's
file).  The full case tree (base/src with the edit applied) is materialised under a scratch folder
(default /tmp/newset/scratch/cases/cNN, or $MIXSET_SCRATCH/cases/cNN) for running; it is not kept in the set.

usage: python3 tools/make_cases.py [c01 c02 ...]
"""
import difflib
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRATCH = os.environ.get("MIXSET_SCRATCH", "/tmp/newset/scratch")
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def first_changed_line(old, new):
    sm = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "equal":
            return j1 + 1
    raise ValueError("no change")


def locate(text, mark):
    n = text.count(mark)
    if n != 1:
        raise ValueError(f"mark {mark!r} occurs {n} times")
    return text[: text.index(mark)].count("\n") + 1


def apply_edit(case):
    old = open(os.path.join(ROOT, "base", "src", case["file"])).read()
    if old.count(case["find"]) != 1:
        raise ValueError(f"{case['id']}: find string occurs {old.count(case['find'])} times")
    return old, old.replace(case["find"], case["replace"])


def udiff(case, old, new):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        "base/src/" + case["file"], f"{case['id']}/src/" + case["file"]))


def materialise(case, new):
    """Full case tree under the scratch folder (for running)."""
    dst = os.path.join(SCRATCH, "cases", case["id"])
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(os.path.join(ROOT, "base", "src"), os.path.join(dst, "src"), ignore=IGNORE)
    os.makedirs(os.path.dirname(os.path.join(dst, "src", case["file"])), exist_ok=True)
    with open(os.path.join(dst, "src", case["file"]), "w") as fh:
        fh.write(new)
    return dst


def make(case):
    old, new = apply_edit(case)
    case_dir = os.path.join(ROOT, "cases", case["id"])
    if os.path.exists(os.path.join(case_dir, "src")):
        shutil.rmtree(os.path.join(case_dir, "src"))
    patch_path = os.path.join(case_dir, "src", case["file"] + ".patch")
    os.makedirs(os.path.dirname(patch_path), exist_ok=True)
    diff = udiff(case, old, new)
    with open(patch_path, "w") as fh:
        fh.write(diff)
    edit_line = first_changed_line(old, new)
    entries = []
    for e in case["entries"]:
        lines = sorted({edit_line if m == "@edit" else locate(new, m) for m in e["marks"]})
        entries.append({"rule": e["rule"], "path": "src/" + case["file"], "lines": lines,
                        "is_bug": case["kind"] == "bug"})
    spec = {k: case[k] for k in ("id", "slug", "kind", "description")}
    spec["divergence"] = case.get("divergence") if case["kind"] == "bug" else None
    spec.update(entries=entries, edit_line=edit_line, diff=diff, run=case["run"])
    with open(os.path.join(case_dir, "spec.json"), "w") as fh:
        json.dump(spec, fh, indent=2)
    materialise(case, new)
    return spec


def main():
    only = set(sys.argv[1:])
    for case in CASES:
        if only and case["id"] not in only:
            continue
        spec = make(case)
        print(spec["id"], spec["kind"], case["file"], [(e["rule"], e["lines"]) for e in spec["entries"]])


if __name__ == "__main__":
    main()
