"""Static-pass speed, side by side in one run (issue 2's targets).

Corpus: the Python sources of the installed ``dgl`` package (``--corpus torch`` for a larger run,
or any folder). Prints files and lines, then median wall times of:
  floor      libcst parse only, one process
  metadata   parse + PositionProvider (what gm-audit resolves for an analysed file), one process
  cold -j1   gm-audit check, no cache, one worker
  cold -jN   gm-audit check, no cache, all cores
  warm       gm-audit check with a warm cache
  small      gm-audit check on one small file, wall time from process start
and the ratios the targets are stated in. ``--baseline REF`` also times gm-audit as of a git
revision, alternating run by run with the current code, so that before and after share the
machine's load. gm-audit's bytecode is compiled first, as an installed copy's is.

``--scaling``: cost against the size of the tree. The tree (default: the largest repository of
the project's shared corpus, by Python files) is cut into nested subsets, sorted prefixes of its
Python files (1/8, 1/4, 1/2, all) copied with their folders, so that imports inside a subset
still resolve. For each size, side by side: the floor's CPU time (this process) and
``gm-audit check --no-cache --jobs 1``'s CPU time (user + sys) and peak RSS, from the child's own
rusage. Ratios within one run are what counts: the load average is printed with them.
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

from auditor.processes import gm_audit_command


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


def gm_audit(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([*gm_audit_command(), *args], cwd=cwd, env=env, capture_output=True)
    return time.perf_counter() - start


def byte_compile(env: dict[str, str]) -> None:
    """Write the bytecode of the ``auditor`` that ``env`` imports, as ``pip install`` does: with
    ``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__``, every run would recompile gm-audit's
    own sources (a tenth of a second or more), which no installed copy does."""
    # ``auditor.rules`` lies outside ``auditor/`` in a checkout (the editable install maps it)
    code = ("import auditor, auditor.rules, compileall, sys; sys.exit(not all("
            "compileall.compile_dir(p, quiet=1) for p in {*auditor.__path__, *auditor.rules.__path__}))")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tempfile.gettempdir())


def checkout(repo: Path, ref: str, into: Path) -> dict[str, str]:
    """``auditor`` as of git revision ``ref`` of ``repo``, laid out as installed (``rules/`` is
    ``auditor.rules``); the environment that imports it."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "auditor", "rules"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "rules").rename(into / "auditor" / "rules")
    return {**os.environ, "PYTHONPATH": str(into)}


def largest_corpus_tree() -> Path:
    """The repository with the most Python files in the shared corpus (``shared/corpus`` next to
    this checkout or one of the folders above it)."""
    here = Path(__file__).resolve()
    for folder in here.parents:
        corpus = folder / "shared" / "corpus"
        if corpus.is_dir():
            trees = [d for d in sorted(corpus.iterdir()) if d.is_dir()]
            if trees:
                return max(trees, key=lambda d: sum(1 for _ in d.rglob("*.py")))
    sys.exit("no shared/corpus found above this checkout: pass --corpus DIR")


def run_measured(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + sys, its children included) and peak RSS in MB of one gm-audit run."""
    proc = subprocess.Popen([*gm_audit_command(), *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"gm-audit {' '.join(args)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def scaling(root: Path, versions: dict[str, dict[str, str]], work: Path, repeat: int,
            fractions: list[int]) -> None:
    """The scaling table (see the module's docstring): one row per subset, sizes nested."""
    files = sources(root)
    cores = os.cpu_count() or 1
    print(f"tree {root}: {len(files)} files; {cores} cores; {load()}")
    names = list(versions)
    head = f"{'files':>6}{'lines':>8}{'floor s':>9}"
    for v in names:
        tag = "" if len(names) == 1 else f" [{v}]"
        head += f"{'check s' + tag:>{10 + len(tag)}}{'ratio':>7}{'peak MB':>9}{'ms/file':>9}"
    print(head)
    for denominator in fractions:
        subset = files[:max(1, -(-len(files) // denominator))]
        tree = work / f"subset-{denominator}"
        for path, text in subset:
            target = tree / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        lines = sum(t.count("\n") for _, t in subset)
        floors, checks = [], {v: [] for v in names}
        run_args = ["check", "--format", "json", "--exit-zero", "--quiet", "--no-cache",
                    "--jobs", "1", tree.name]
        for _ in range(repeat):
            start = time.process_time()
            parse_all(subset, False)
            floors.append(time.process_time() - start)
            for v in names:  # the versions alternate run by run: they share the load
                checks[v].append(run_measured(run_args, work, versions[v]))
        floor = statistics.median(floors)
        row = f"{len(subset):>6}{lines:>8}{floor:>9.2f}"
        for v in names:
            tag = "" if len(names) == 1 else f" [{v}]"
            cpu = statistics.median(c for c, _ in checks[v])
            peak = max(m for _, m in checks[v])
            row += f"{cpu:>{10 + len(tag)}.2f}{cpu / floor:>7.2f}{peak:>9.0f}{1000 * cpu / len(subset):>9.1f}"
        print(row, flush=True)
        shutil.rmtree(tree)
    print(f"({load()})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", help="package name or folder (default: dgl; with --scaling, the "
                                     "largest repository of the shared corpus)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per measure (default: 3; "
                                                             "with --scaling, 1)")
    ap.add_argument("--baseline", metavar="REF",
                    help="also time gm-audit as of this git revision of the repository, each run "
                         "alternating with the current code's (before -> after, side by side)")
    ap.add_argument("--scaling", action="store_true",
                    help="time and memory against the number of files (nested subsets)")
    ap.add_argument("--fractions", default="8,4,2,1", metavar="N,N,...",
                    help="with --scaling: the subsets, as 1/N of the files (default: 8,4,2,1)")
    args = ap.parse_args()
    if args.scaling:
        try:
            fractions = sorted({int(n) for n in args.fractions.split(",")}, reverse=True)
        except ValueError:
            sys.exit(f"--fractions: expected whole numbers separated by commas, got {args.fractions!r}")
        if not fractions or min(fractions) < 1:
            sys.exit("--fractions: each N must be 1 or more")
        root = corpus_path(args.corpus) if args.corpus else largest_corpus_tree()
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            versions = {"current": dict(os.environ)}
            if args.baseline:
                base = work / "baseline"
                base.mkdir()
                versions = {args.baseline: checkout(Path(__file__).resolve().parents[1],
                                                    args.baseline, base), **versions}
            for env in versions.values():
                byte_compile(env)
            scaling(root, versions, work, args.repeat or 1, fractions)
        return
    args.repeat = args.repeat or 3
    root = corpus_path(args.corpus or "dgl")
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
        versions = {"current": {**os.environ, "GM_AUDIT_CACHE_DIR": str(work / "cache-current")}}
        if args.baseline:
            base = work / "baseline"
            base.mkdir()
            env = checkout(Path(__file__).resolve().parents[1], args.baseline, base)
            versions = {args.baseline: {**env, "GM_AUDIT_CACHE_DIR": str(work / "cache-baseline")},
                        **versions}
        for env in versions.values():
            byte_compile(env)
        base_args = ["check", "--format", "json", "--exit-zero", "--quiet"]
        floor = timed(lambda: parse_all(files, False), args.repeat)
        meta = timed(lambda: parse_all(files, True), max(1, args.repeat - 2))

        def side_by_side(run_args: list[str], cwd: Path, prepare=None) -> dict[str, float]:
            """Median per version, the versions alternating run by run."""
            runs: dict[str, list[float]] = {v: [] for v in versions}
            for v, env in versions.items():
                if prepare:
                    gm_audit(prepare, cwd, env)
            for _ in range(args.repeat):
                for v, env in versions.items():
                    runs[v].append(gm_audit(run_args, cwd, env))
            return {v: statistics.median(r) for v, r in runs.items()}

        cold1 = side_by_side([*base_args, "--no-cache", "--jobs", "1", "corpus"], work)
        coldn = side_by_side([*base_args, "--no-cache", "--jobs", str(cores), "corpus"], work)
        warm = side_by_side([*base_args, "corpus"], work, prepare=[*base_args, "corpus"])
        small_t = side_by_side([*base_args, "--no-cache", "train.py"], small)
        # what any libcst-based run pays before its first line: the interpreter and libcst's
        # import (hundreds of node dataclasses built at import)
        start_floor = timed(lambda: subprocess.run([sys.executable, "-c", "import libcst"],
                                                   check=True), args.repeat)

    print(f"{'libcst parse only, 1 process (floor)':<42}{floor:>10.2f}s")
    print(f"{'parse + positions, 1 process':<42}{meta:>10.2f}s{meta / floor:>9.2f}x floor")
    for v in versions:
        print(f"\n{v}:")
        rows = [
            ("gm-audit cold, --jobs 1", cold1[v]),
            (f"gm-audit cold, --jobs {cores}", coldn[v]),
            ("gm-audit warm cache", warm[v]),
        ]
        print(f"  {'measure':<40}{'seconds':>10}{'x floor':>10}")
        for name, secs in rows:
            print(f"  {name:<40}{secs:>10.2f}{secs / floor:>10.2f}")
        print(f"  warm / cold(all cores) = {warm[v] / coldn[v]:.1%}   (target <= 5%)")
        print(f"  cold(all cores) / floor = {coldn[v] / floor:.2f}x (target <= 2.0x, issue 12)")
        print(f"  one small file, process start to exit: {small_t[v]:.3f}s (target <= 0.5s; "
              f"`python -c 'import libcst'` alone: {start_floor:.3f}s)")


if __name__ == "__main__":
    main()
