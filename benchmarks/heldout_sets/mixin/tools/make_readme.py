"""Writes README.md from cases.py, effects.py and results/summary.json."""
import json, os, sys
from collections import Counter
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402
from effects import EFFECTS  # noqa: E402
summ = json.load(open(os.path.join(HERE, "results", "summary.json")))
head = open(os.path.join(HERE, "readme_head.md")).read()
b0, b1 = summ["base"]["metrics"]["seed0"], summ["base"]["metrics"]["seed1"]
head = head.replace("@BASE0@", json.dumps(b0)).replace("@BASE1@", json.dumps(b1))


def counts(kind):
    c = Counter(e["rule"] for cs in CASES if cs["kind"] == kind for e in cs["entries"])
    return ", ".join(f"{r} x{n}" if n > 1 else r for r, n in sorted(c.items()))


nb = sum(c["kind"] == "bug" for c in CASES)
rows = []
for c in CASES:
    spec = json.load(open(os.path.join(ROOT, "cases", c["id"], "spec.json")))
    e = spec["entries"][0]
    rows.append(f"| {c['id']} | {c['kind']} | {e['rule']} | `{e['path']}:{','.join(map(str, e['lines']))}` | "
                f"{c['description']} | {EFFECTS.get(c['id'], '')} |")
text = head + f"\n## Cases\n\n{nb} bugs ({counts('bug')}) and {len(CASES) - nb} benign look-alikes ({counts('benign')}).\n\n" \
    "| case | kind | rule | path:line | description | measured effect (seed 0; seed 1 in truth.json) |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
open(os.path.join(ROOT, "README.md"), "w").write(text)
print("README written")
