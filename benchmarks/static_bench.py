"""Static-pass speed, side by side in one run (issue 2's targets).

Corpus: the Python sources of the installed ``dgl`` package (``--corpus torch`` for a larger run,
or any folder). Prints files and lines, then median wall times of:
  floor      libcst parse only, one process
  metadata   parse + PositionProvider (what gm-audit resolves for an analysed file), one process
  cold -j1   gm-audit check, no cache, one worker
  cold -jN   gm-audit check, no cache, all cores
  warm       gm-audit check with a warm cache
  small      gm-audit check on one small file, wall time from process start
and the ratios the targets are stated in.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


def corpus_path(name: str) -> Path:
    if Path(name).is_dir():
        return Path(name)
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"cannot find package {name!r}")
    return Path(list(spec.submodule_search_locations)[0])


def sources(root: Path) -> list[tuple[Path, str]]:
    out = []
    for p in sorted(root.rglob("*.py")):
        try:
            out.append((p, p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            pass
    return out


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def parse_all(files, with_positions: bool) -> None:
    for _, text in files:
        try:
            module = cst.parse_module(text)
        except Exception:
            continue
        if with_positions:
            MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def gm_audit(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", default="dgl", help="package name or folder (default: dgl)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = corpus_path(args.corpus)
    files = sources(root)
    lines = sum(t.count("\n") for _, t in files)
    cores = os.cpu_count() or 1
    print(f"corpus {root}: {len(files)} files, {lines} lines; {cores} cores")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tree = work / "corpus"
        shutil.copytree(root, tree, ignore=shutil.ignore_patterns("__pycache__"))
        small = work / "small"
        small.mkdir()
        (small / "train.py").write_text(
            "import torch\n\ndef main(model, opt, loader):\n    for g, x in loader:\n"
            "        loss = model(g, x)\n        opt.zero_grad()\n        loss.backward()\n"
            "        opt.step()\n"
        )
        base = ["check", "--format", "json", "--exit-zero", "--quiet"]
        floor = timed(lambda: parse_all(files, False), args.repeat)
        meta = timed(lambda: parse_all(files, True), max(1, args.repeat - 2))
        cold1 = timed(lambda: gm_audit([*base, "--no-cache", "--jobs", "1", "corpus"], work), args.repeat)
        coldn = timed(lambda: gm_audit([*base, "--no-cache", "--jobs", str(cores), "corpus"], work), args.repeat)
        gm_audit([*base, "corpus"], work)  # fill the cache
        warm = timed(lambda: gm_audit([*base, "corpus"], work), args.repeat)
        small_t = timed(lambda: gm_audit([*base, "--no-cache", "train.py"], small), args.repeat)

    rows = [
        ("libcst parse only, 1 process (floor)", floor, 1.0),
        ("parse + positions, 1 process", meta, meta / floor),
        ("gm-audit cold, --jobs 1", cold1, cold1 / floor),
        (f"gm-audit cold, --jobs {cores}", coldn, coldn / floor),
        ("gm-audit warm cache", warm, warm / floor),
    ]
    print(f"{'measure':<42}{'seconds':>10}{'x floor':>10}")
    for name, secs, ratio in rows:
        print(f"{name:<42}{secs:>10.2f}{ratio:>10.2f}")
    print(f"warm / cold(all cores) = {warm / coldn:.1%}   (target <= 5%)")
    print(f"cold(all cores) / floor = {coldn / floor:.2f}x (target <= 2.0x, issue 12)")
    print(f"one small file, process start to exit: {small_t:.3f}s (target <= 0.5s)")


if __name__ == "__main__":
    main()
