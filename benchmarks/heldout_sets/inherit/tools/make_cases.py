"""Create cases/cNN/src as full copies of base/src with one edit each."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from cases import CASES  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(case):
    dst = os.path.join(ROOT, "cases", case["case"])
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(os.path.join(ROOT, "base", "src"), os.path.join(dst, "src"),
                    ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
    fpath = os.path.join(dst, case["path"])
    text = open(fpath).read()
    assert text.count(case["old"]) == 1, (case["case"], text.count(case["old"]))
    pos = text.index(case["old"])
    new_text = text.replace(case["old"], case["new"])
    open(fpath, "w").write(new_text)
    if case["anchor"]:
        pos += case["new"].index(case["anchor"])
    line = new_text[:pos].count("\n") + 1
    return {"case": case["case"], "path": case["path"], "lines": [line],
            "line_text": new_text.splitlines()[line - 1].strip()}


if __name__ == "__main__":
    locs = [make(c) for c in CASES]
    json.dump(locs, open(os.path.join(ROOT, "tools", "locations.json"), "w"), indent=1)
    for loc in locs:
        print(loc["case"], loc["path"], loc["lines"], "|", loc["line_text"])
