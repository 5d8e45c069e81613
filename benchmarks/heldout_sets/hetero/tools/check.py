"""Consistency checks.

1. every case folder holds exactly one patch, for the file named in cases.py, and nothing else under src/;
2. applying the patch to base/src/<file> (strict: every context and removed line must match at its
   position) reproduces the case file built from cases.py (and the materialised scratch copy);
3. each truth line is on, or right next to, the edited lines of the case file, and points into it;
4. every case ran to completion; base (single-process and DDP) is identical across its two runs; benign cases show no metric
   difference from base; every bug shows a metric or observation difference; effects are filled in.
"""
import difflib, json, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
SCRATCH = os.environ.get("HETSET_SCRATCH", "/tmp/heteroset")
sys.path.insert(0, HERE)
from cases import CASES
from make_cases import apply_edit

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(base_text, patch_text, base_name, case_name):
    old = base_text.splitlines(True)
    lines = patch_text.splitlines(True)
    assert lines[0] == f"--- {base_name}\n", lines[0]
    assert lines[1] == f"+++ {case_name}\n", lines[1]
    out, pos, i = [], 0, 2
    while i < len(lines):
        m = HUNK.match(lines[i])
        assert m, f"bad hunk header {lines[i]!r}"
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out += old[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            if tag in " -":
                assert old[pos] == body, f"context mismatch at base line {pos + 1}: {old[pos]!r} vs {body!r}"
                pos += 1
                if tag == " ":
                    out.append(body)
            elif tag == "+":
                out.append(body)
            elif lines[i].startswith("\\"):
                pass
            else:
                raise AssertionError(f"bad patch line {lines[i]!r}")
            i += 1
    out += old[pos:]
    return "".join(out)


ok = True
summary_path = os.path.join(HERE, "results", "summary.json")
summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
for bname in ("base", "base_ddp"):
    if summary and summary[bname]["run_to_run_metric_diffs"]:
        print("BASE NOT DETERMINISTIC", bname, summary[bname]["run_to_run_metric_diffs"]); ok = False
for c in CASES:
    problems = []
    case_dir = os.path.join(ROOT, "cases", c["id"])
    files = sorted(os.path.relpath(os.path.join(d, f), os.path.join(case_dir, "src"))
                   for d, _, fs in os.walk(os.path.join(case_dir, "src")) for f in fs)
    if files != [c["file"] + ".patch"]:
        problems.append(f"src holds {files}")
    base_text, new = apply_edit(c)
    patch = open(os.path.join(case_dir, "src", c["file"] + ".patch")).read()
    try:
        patched = apply_patch(base_text, patch, "base/src/" + c["file"], f"{c['id']}/src/" + c["file"])
        if patched != new:
            problems.append("patch does not reproduce the case file")
    except AssertionError as e:
        problems.append(f"patch does not apply: {e}")
    scratch_file = os.path.join(SCRATCH, "cases", c["id"], "src", c["file"])
    if os.path.exists(scratch_file) and open(scratch_file).read() != new:
        problems.append("scratch copy differs from spec")
    old_l, new_l = base_text.splitlines(), new.splitlines()
    touched = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old_l, b=new_l, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            touched |= set(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            touched |= {j1, j1 + 1}
    truth_path = os.path.join(case_dir, "truth.json")
    truth = json.load(open(truth_path)) if os.path.exists(truth_path) else None
    spec = json.load(open(os.path.join(case_dir, "spec.json")))
    for src_name, doc in (("spec", spec), ("truth", truth)):
        if doc is None:
            problems.append(f"no {src_name}.json"); continue
        e0 = doc["entries"][0]
        if not set(e0["lines"]) & touched:
            problems.append(f"{src_name} lines {e0['lines']} not on edited lines {sorted(touched)}")
        if any(e["path"] != "src/" + c["file"] for e in doc["entries"]):
            problems.append(f"{src_name} path mismatch")
        if any(max(e["lines"]) > len(new_l) for e in doc["entries"]):
            problems.append(f"{src_name} line beyond end of file")
        if any(e["is_bug"] != (c["kind"] == "bug") for e in doc["entries"]):
            problems.append(f"{src_name} is_bug mismatch")
    s = summary.get(c["id"])
    if s is None:
        problems.append("not run")
    else:
        if s["crashed"]:
            problems.append("crashed")
        if c["kind"] == "benign" and s["metric_diffs_vs_base"]:
            problems.append(f"benign with metric diffs {s['metric_diffs_vs_base']}")
        if c["kind"] == "bug" and not (s["metric_diffs_vs_base"] or s["obs_diffs_vs_base"]):
            problems.append("bug without measured effect")
    if truth and truth.get("run") != c["run"]:
        problems.append("run mismatch")
    if truth and "NOT YET REVIEWED" in json.dumps(truth):
        problems.append("effect not filled")
    shown = [(e["rule"], e["lines"]) for e in (truth or spec)["entries"]]
    print(c["id"], c["kind"], c["file"], "edited", sorted(touched), "truth", shown, "OK" if not problems else problems)
    ok &= not problems
print("ALL OK" if ok else "PROBLEMS")
sys.exit(0 if ok else 1)
