"""Regenerate cases/cNN/src from base/src + the one-edit specification in cases.py.
Writes cases/cNN/spec.json (the spec with resolved truth lines).  run_cases.py adds the measurements
and writes truth.json."""
import difflib
import filecmp
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES, RUN  # noqa: E402

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


def tree_files(top):
    out = []
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        out += [os.path.relpath(os.path.join(d, f), top) for f in files if not f.endswith(".pyc")]
    return sorted(out)


def make(case):
    base_src = os.path.join(ROOT, "base", "src")
    case_dir = os.path.join(ROOT, "cases", case["id"])
    src = os.path.join(case_dir, "src")
    if os.path.exists(src):
        shutil.rmtree(src)
    shutil.copytree(base_src, src, ignore=IGNORE)
    path = os.path.join(src, case["file"])
    old = open(path).read()
    if old.count(case["find"]) != 1:
        raise ValueError(f"{case['id']}: find string occurs {old.count(case['find'])} times")
    new = old.replace(case["find"], case["replace"])
    with open(path, "w") as fh:
        fh.write(new)
    edit_line = first_changed_line(old, new)
    entries = []
    for e in case["entries"]:
        lines = sorted({edit_line if m == "@edit" else locate(new, m) for m in e["marks"]})
        entries.append({"rule": e["rule"], "path": "src/" + case["file"], "lines": lines,
                        "is_bug": case["kind"] == "bug"})
    # exactly one file differs from base
    diff = [f for f in tree_files(base_src) if not filecmp.cmp(os.path.join(base_src, f), os.path.join(src, f), shallow=False)]
    assert diff == [case["file"]], (case["id"], diff)
    assert tree_files(base_src) == tree_files(src)
    udiff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                         "base/src/" + case["file"], "case/src/" + case["file"], n=1))
    spec = {k: case[k] for k in ("id", "slug", "kind", "description", "divergence")}
    spec.update(entries=entries, edit_line=edit_line, diff=udiff, run=RUN)
    with open(os.path.join(case_dir, "spec.json"), "w") as fh:
        json.dump(spec, fh, indent=2)
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
