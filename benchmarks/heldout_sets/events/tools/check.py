"""Checks: one file differs from base per case; each truth line is on / next to the edited lines;
every case ran to completion; benign cases have no metric difference from base."""
import difflib, filecmp, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES
from make_cases import tree_files
ok = True
summary = json.load(open(os.path.join(HERE, "results", "summary.json")))
for c in CASES:
    base_src, src = os.path.join(ROOT, "base", "src"), os.path.join(ROOT, "cases", c["id"], "src")
    diff = [f for f in tree_files(base_src) if not filecmp.cmp(os.path.join(base_src, f), os.path.join(src, f), shallow=False)]
    old = open(os.path.join(base_src, c["file"])).read().splitlines()
    new = open(os.path.join(src, c["file"])).read().splitlines()
    touched = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            touched |= set(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            touched |= {j1, j1 + 1}
    truth = json.load(open(os.path.join(ROOT, "cases", c["id"], "truth.json")))
    s = summary[c["id"]]
    problems = []
    if diff != [c["file"]]:
        problems.append(f"files differing: {diff}")
    first = truth["entries"][0]
    if not set(first["lines"]) & touched:
        problems.append(f"truth lines {first['lines']} not on edited lines {sorted(touched)}")
    if any(e["path"] != "src/" + c["file"] for e in truth["entries"]):
        problems.append("path mismatch")
    if s["crashed"]:
        problems.append("crashed")
    if c["kind"] == "benign" and s["metric_diffs_vs_base"]:
        problems.append(f"benign with metric diffs {s['metric_diffs_vs_base']}")
    if c["kind"] == "bug" and not (s["metric_diffs_vs_base"] or s["obs_diffs_vs_base"]):
        problems.append("bug without measured effect")
    if "NOT YET REVIEWED" in json.dumps(truth):
        problems.append("effect not filled")
    print(c["id"], c["kind"], "edited", sorted(touched), "truth", [(e["rule"], e["lines"]) for e in truth["entries"]], "OK" if not problems else problems)
    ok &= not problems
print("ALL OK" if ok else "PROBLEMS")
