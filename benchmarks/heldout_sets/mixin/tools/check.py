"""Consistency checks: every patch applies strictly to base (patch -p1 in a copy) and reproduces the case file;
truth lines exist; base deterministic; benign cases within noise; bugs with a measured difference."""
import json, os, shutil, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402
ok = True
summ = json.load(open(os.path.join(HERE, "results", "summary.json")))
if summ["base"]["rerun_metric_diffs"]:
    print("base not deterministic"); ok = False
for c in CASES:
    d = tempfile.mkdtemp()
    shutil.copytree(os.path.join(ROOT, "base", "src"), os.path.join(d, "src"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    patch = os.path.join(ROOT, "cases", c["id"], "src", c["file"] + ".patch")
    p = subprocess.run(["patch", "-p1", "--dry-run", "-s", "-i", patch], cwd=d, capture_output=True, text=True)
    p = subprocess.run(["patch", "-p1", "-s", "-i", patch], cwd=d, capture_output=True, text=True)
    if p.returncode:
        print(c["id"], "patch failed", p.stdout, p.stderr); ok = False
    new = open(os.path.join(d, "src", c["file"])).read()
    base = open(os.path.join(ROOT, "base", "src", c["file"])).read()
    if new != base.replace(c["find"], c["replace"]):
        print(c["id"], "patched file differs"); ok = False
    spec = json.load(open(os.path.join(ROOT, "cases", c["id"], "spec.json")))
    n = len(new.splitlines())
    for e in spec["entries"]:
        if not all(1 <= l <= n for l in e["lines"]):
            print(c["id"], "bad line", e); ok = False
    shutil.rmtree(d)
    s = summ.get(c["id"])
    if s is None:
        print(c["id"], "not run"); ok = False; continue
    if s["crashed"]:
        print(c["id"], "crashed"); ok = False
    if c["kind"] == "bug" and not (s["metric_diffs_seed0"] or s["obs_diffs_seed0"]):
        print(c["id"], "bug without measured difference"); ok = False
print("OK" if ok else "FAILED")
