"""Create cases/cNN/src from base/src + the edit listed in tools/cases.py."""
import json, os, shutil, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402

WHERE = {}
for c in CASES:
    dst = os.path.join(ROOT, "cases", c["id"], "src")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(os.path.join(ROOT, "base", "src"), dst,
                    ignore=shutil.ignore_patterns("__pycache__", "outputs"))
    files = set()
    for rel, old, new in c["edits"]:
        p = os.path.join(dst, rel)
        s = open(p).read()
        assert s.count(old) == 1, (c["id"], rel, s.count(old))
        open(p, "w").write(s.replace(old, new))
        files.add(rel)
    lines = []
    for rel in sorted(files):
        for i, line in enumerate(open(os.path.join(dst, rel)).read().splitlines(), 1):
            if c["mark"] in line:
                lines.append((rel, i))
    assert lines, c["id"]
    rel, ln = lines[0]
    c["_where"] = ("src/" + rel, [ln])
    print(c["id"], c["_where"], len(lines))
    WHERE[c["id"]] = {"path": "src/" + rel, "lines": [ln]}
json.dump(WHERE, open(os.path.join(HERE, "where.json"), "w"), indent=1)
