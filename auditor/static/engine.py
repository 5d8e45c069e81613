"""Runs the static pass: read -> prefilter -> parse once -> one batched traversal per file
(in parallel, cached) -> project graph -> cross-file rule stage -> suppressions."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator, Mapping, Optional, Sequence

import libcst as cst

from auditor.config import Config, per_file_ignored
from auditor.discovery import discover
from auditor.findings import FileError, Finding, Severity
from auditor.registry import PARSE_ERROR, UNUSED_IGNORE, all_rules
from auditor.rule import Rule
from auditor.static.cache import Cache, content_digest
from auditor.static.collector import FactCollector
from auditor.static.config_files import tree_text
from auditor.static.config_values import files_read
from auditor.static.context import FileContext
from auditor.static.deep import with_deep_stack
from auditor.static.facts import FileFacts
from auditor.static.imports import Layout, module_identity, outline
from auditor.static.isolate import Lost, map_bounded, run_isolated
from auditor.static.named_objects import link_named_objects
from auditor.static.nesting import MAX_DEPTH, RISKY_DEPTH, nesting_depth
from auditor.static.parse import parse_module
from auditor.static.positions import Shape, ast_shape
from auditor.static.project import Project
from auditor.static.project_stage import run_project_stage
from auditor.static.reading import MAX_FILE_BYTES, line_count, read_source
from auditor.static.severity import on_entry_paths
from auditor.static.walk import walk
from auditor.suppression import (FILE_LEVEL, Ignores, Malformed, Written, parse_config_ignores,
                                 parse_ignores, suppressing_line)

LAZY_PREFIX = "<lazy>"  # cache entries of files analysed on demand


@dataclass
class FileResult:
    path: str
    module: str
    facts: Optional[FileFacts] = None  # None: skipped by the prefilter, or unreadable
    outline: Optional[FileFacts] = None  # a skipped file's imports only (programs need them)
    # a skipped file's facts, made with the rest for the cross-file stage (the engine moves
    # them to the cache's lazy entries: never stored with the result)
    summary: Optional[FileFacts] = None
    findings: list[Finding] = field(default_factory=list)
    error: Optional[FileError] = None
    ignores: Ignores = field(default_factory=dict)
    bad_ignores: Malformed = field(default_factory=list)
    ignore_comments: Written = field(default_factory=dict)


@dataclass
class CheckResult:
    findings: list[Finding]
    errors: list[FileError]
    files: int
    seconds: float
    analysed: int = 0
    cached: int = 0
    project: Optional[Project] = None
    skipped: list[FileError] = field(default_factory=list)  # files found but not read (in errors)


def relpath(path: Path) -> str:
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def decode(data: bytes) -> str:
    """Text of a Python file, honouring a PEP 263 coding cookie; ValueError with a clear reason."""
    if b"\0" in data:
        raise ValueError("binary file (contains NUL bytes)")
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "encoding declaration" not in str(exc):  # a cookie naming an unknown codec
            raise ValueError(f"unknown source encoding: {exc}") from None
        encoding = "utf-8"  # no cookie and bytes that are not UTF-8: say so below
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise ValueError(f"not valid {encoding}{where}; save the file as UTF-8") from None


def syntax_error_finding(
    path: str, line: int, column: int, message: str,
    fix: str = "fix the syntax error; gm-audit checked nothing else in this file",
    failed: str = "parsed",
) -> Finding:
    """GM000: the file could not be parsed (or analysed at all); reported, never raised."""
    message = message.strip().splitlines()[0] if message.strip() else "syntax error"
    return Finding(
        rule=PARSE_ERROR, name="syntax-error", severity=Severity.ERROR, path=path,
        line=line, column=column, end_line=line, end_column=column + 1,
        message=f"file could not be {failed}: {message}", fix=fix,
    )


def too_deep_finding(path: str, line: int, detail: str) -> Finding:
    return syntax_error_finding(
        path, max(line, 1), 1, f"too deeply nested to analyse ({detail})",
        fix="split the expression (generated code? exclude it); gm-audit checked nothing else in this file",
    )


def analyze_source(
    path: str, abspath: Path, data: bytes, codes: Sequence[str], force: bool = False,
    expendable: bool = False, summarise: bool = False,
) -> FileResult:
    """Everything the static pass learns from one file, in one traversal. Never raises.
    ``expendable``: this process may die of a native crash (a pool worker, an isolated child);
    otherwise a file deep enough to risk one is parsed in a child process. ``summarise``: when
    the prefilter skips the file, also make the facts an on-demand load would (``summary``)."""
    try:
        return with_deep_stack(_analyze_source, path, abspath, data, codes, force, expendable,
                               summarise)
    except RecursionError:  # a walk of a deep tree past this process's stack: this file only
        result = FileResult(path=path, module=module_identity(path))
        result.findings.append(too_deep_finding(path, 1, "the analyser ran out of stack"))
        return result


def _analyze_source(path: str, abspath: Path, data: bytes, codes: Sequence[str], force: bool,
                    expendable: bool, summarise: bool) -> FileResult:
    module = module_identity(path)
    result = FileResult(path=path, module=module)
    if len(data) > MAX_FILE_BYTES:
        result.error = FileError(
            path, f"skipped: larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB gm-audit reads "
            "(generated code?)"
        )
        return result
    try:
        text = decode(data)
    except ValueError as exc:
        result.error = FileError(path, str(exc))
        return result
    result.ignores, result.bad_ignores, result.ignore_comments = parse_ignores(text)
    rules = [all_rules()[c] for c in codes]
    wanted = [r for r in rules if r.matches_text(text)]
    syntax: Optional[ast.Module] = None
    syntax_error: Optional[SyntaxError] = None
    # CPython's parser gave up (RecursionError, or MemoryError past its own stack): libcst's
    # would crash, and the tokenizer's estimate cannot tell (ten thousand `elif` are flat to it)
    cpython_refused = False
    try:
        syntax = ast.parse(text, filename=path)
    except SyntaxError as exc:
        syntax_error = exc
    except (RecursionError, MemoryError):
        cpython_refused = True
    except ValueError:
        pass
    if not wanted and not force:
        # nothing to check here, but a syntax error is still reported: CPython's own parser
        # answers that at a fraction of libcst's cost
        if syntax_error is not None:
            result.findings.append(syntax_error_finding(
                path, syntax_error.lineno or 1, syntax_error.offset or 1, syntax_error.msg))
        if syntax is not None:
            result.outline = outline(syntax, FileFacts(path=path, module=module))
            shape = ast_shape(text, syntax) if summarise else None
            if shape is not None and shape.depth <= RISKY_DEPTH:
                # a risky file stays lazy (a crash here would report a file no rule reads)
                result.summary = _analyse_tree(FileResult(path=path, module=module), text, [],
                                               shape.deepest_line, shape).facts
        return result
    if cpython_refused:
        result.findings.append(too_deep_finding(path, 1, "CPython's own parser gave up on it"))
        return result
    shape = ast_shape(text, syntax) if syntax is not None else None
    # where CPython could not parse the file, libcst may: the tokenizer's estimate then decides
    depth, deepest = (shape.depth, shape.deepest_line) if shape is not None else nesting_depth(text)
    if depth > MAX_DEPTH:
        result.findings.append(too_deep_finding(path, deepest, f"about {depth} levels at line {deepest}"))
        return result
    if depth > RISKY_DEPTH and not expendable:
        answer = run_isolated(_analyze_job, (path, str(abspath), data, tuple(codes), force, False))
        return _lost(path, deepest, answer) if isinstance(answer, Lost) else answer
    return _analyse_tree(result, text, wanted, deepest, shape)


def _analyse_tree(result: FileResult, text: str, wanted: list[type[Rule]], deepest: int,
                  shape: Optional[Shape] = None) -> FileResult:
    """Parse with libcst and run the collector and the ``wanted`` rules in one traversal
    (``shape``: the file's ast shape, when the caller made it)."""
    path, module = result.path, result.module
    try:
        tree = parse_module(text)
    except cst.ParserSyntaxError as exc:
        result.findings.append(
            syntax_error_finding(path, exc.raw_line, exc.raw_column + 1, str(exc.message))
        )
        return result
    except RecursionError:
        result.findings.append(too_deep_finding(path, deepest, "the parser ran out of stack"))
        return result
    except Exception as exc:  # libcst's own limits
        result.error = FileError(path, f"could not be parsed: {type(exc).__name__}: {exc}")
        return result
    try:
        ctx = FileContext(path, text, tree, module, shape=shape)
        visitors: list[Rule] = [r(ctx) for r in wanted]
        walk(tree, [FactCollector(ctx), *visitors])
        if not ctx.positions_consistent():
            # ast and libcst disagreed on this file's shape: redo it with libcst's positions
            ctx = FileContext(path, text, tree, module, exact=True)
            visitors = [r(ctx) for r in wanted]
            walk(tree, [FactCollector(ctx), *visitors])
    except Exception as exc:  # a rule's bug must not sink the whole run
        if _ran_out_of_stack(exc):
            result.findings.append(too_deep_finding(path, deepest, "the analyser ran out of stack"))
            return result
        if os.environ.get("GM_AUDIT_DEBUG"):
            traceback.print_exc()
        result.error = FileError(path, f"internal error while analysing: {type(exc).__name__}: {exc}")
        return result
    result.facts = ctx.facts
    result.findings = [f for v in visitors for f in v.findings]
    return result


def _ran_out_of_stack(exc: BaseException) -> bool:
    """``exc`` is a RecursionError, or was raised while handling one (libcst's position
    provider turns one into a KeyError whose message is the repr of a node as deep)."""
    seen: Optional[BaseException] = exc
    while seen is not None:
        if isinstance(seen, RecursionError):
            return True
        seen = seen.__context__
    return False


# path, absolute path, content, codes, force, summarise
Job = tuple[str, str, bytes, tuple[str, ...], bool, bool]


def _analyze_job(job: Job) -> FileResult:
    """In a process that may die: a pool worker or an isolated child."""
    path, abspath, data, codes, force, summarise = job
    return analyze_source(path, Path(abspath), data, codes, force=force, expendable=True,
                          summarise=summarise)


def _lost(path: str, line: int, lost: Lost) -> FileResult:
    """The answer for a file whose analysis killed its process or ran past the time limit:
    never retried in this process."""
    result = FileResult(path=path, module=module_identity(path))
    if lost.reason == "timeout":
        result.findings.append(syntax_error_finding(
            path, 1, 1, f"analysis took too long (stopped after {lost.seconds:.0f} s)",
            fix="generated code? exclude it; gm-audit checked nothing else in this file",
            failed="analysed"))
    else:
        result.findings.append(too_deep_finding(path, line, "the parser crashed on it"))
    return result


def _few_collections(fn: Callable[..., CheckResult]) -> Callable[..., CheckResult]:
    """Run ``fn`` with CPython's cyclic collector rarely triggered. The pass allocates millions of
    small objects: parse trees that reference counting frees, and facts that live to the end.
    At the default threshold (a collection every 700 net allocations) the collector scanned the
    growing heap thousands of times, about a sixth of the pass; workers inherit the setting."""

    @functools.wraps(fn)
    def run(*args: object, **kwargs: object) -> CheckResult:
        before = gc.get_threshold()
        gc.set_threshold(max(before[0], 50_000), *before[1:])
        try:
            return fn(*args, **kwargs)
        finally:
            gc.set_threshold(*before)
            gc.unfreeze()  # what _collector_paused froze: collectable again in a long-lived process

    return run


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic collection while the cross-file stage builds the project and runs its rules:
    what it allocates lives to the end of the check (facts, the project's tables, the rules'
    memos), and every collection scanned all of it again (about 0.25 s on each side on dgl).
    Afterwards it is frozen: later collections in this process do not scan it either."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@_few_collections
def run_check(
    paths: Iterable[str],
    config: Config,
    rules: Sequence[type[Rule]],
    jobs: int = 0,
    use_cache: bool = True,
    report_unused_ignores: bool = False,
    progress: Optional[Callable[[int, int], None]] = None,
    need_project: bool = False,
    sources: Optional[Mapping[str, bytes]] = None,
) -> CheckResult:
    """The static pass. ``need_project``: the caller uses ``CheckResult.project`` (fixes), so a
    run whose every input is unchanged is not answered from the whole-run cache. ``sources``:
    contents read instead of the files at these paths, keyed by path as reports spell it (an
    editor's unsaved buffers, stdin); such a file is checked whether or not it exists on disk,
    and the caches, keyed by content, serve these too."""
    start = time.perf_counter()
    codes = tuple(r.code for r in rules)
    sources = sources or {}
    found = discover([p for p in paths if relpath(Path(p)) not in sources], config.root,
                     config.exclude)
    walked = {relpath(f) for f in found.files}
    found.files += [Path(p) for p in sources if p not in walked]
    errors = [FileError(p, m) for p, m in found.notes]
    cache = Cache(config.root, codes, enabled=use_cache)
    results: dict[str, FileResult] = {}
    todo: list[Job] = []
    digests: dict[str, str] = {}
    contents: list[tuple[str, Path, bytes]] = []
    for p in found.files:
        rel = relpath(p)
        try:
            data = sources[rel] if rel in sources else read_source(p)
        except OSError as exc:
            errors.append(FileError(rel, f"cannot read file: {exc.strerror or exc}"))
            continue
        lines = line_count(data)
        # before any parse (ast's tree alone would be gigabytes); a file past MAX_FILE_BYTES,
        # read in part, is said to be so below
        if lines > config.max_lines and len(data) <= MAX_FILE_BYTES:
            errors.append(FileError(rel, f"skipped: too large for analysis ({lines} lines > "
                                         f"{config.max_lines}; `max-lines` in [tool.gm-audit])"))
            continue
        digests[rel] = content_digest(data)
        contents.append((rel, p, data))
    total = len(found.files)
    # The cross-file stage depends on every file: when no file, setting or engine source changed
    # since the last run, its answer is reused whole; otherwise it is recomputed from the facts.
    run_digest = content_digest("|".join([
        repr(sorted(digests.items())), repr(report_unused_ignores),
        repr((config.per_file_ignores, sorted(config.exclude), config.preview, config.max_lines)),
    ]).encode())
    known_errors = len(errors)  # discovery and read errors: found again on every run
    previous = None if need_project else cache.get_run(run_digest)
    if previous is not None and _configs_unchanged(previous[2]):
        findings, analysis_errors, _ = previous
        return CheckResult(findings=findings, errors=sorted([*errors, *analysis_errors], key=lambda e: e.path),
                           files=total, seconds=time.perf_counter() - start, analysed=0,
                           cached=total, skipped=errors)
    for rel, p, data in contents:
        hit = cache.get(rel, digests[rel])
        if hit is not None:
            results[rel] = hit
        else:
            todo.append((rel, str(p.resolve()), data, codes, False, False))
    cached = len(results)
    jobs = jobs or os.cpu_count() or 1
    done = cached
    if progress:
        progress(done, total)
    # A file the prefilter skips gets no rule's visit, but its facts (a summary) are made with
    # the rest and join the project from the start: the cross-file stage reaches nearly all of
    # them, and each one it loaded on demand made every answer its memos held stale. A file
    # too deep to summarise safely stays lazy: analysed, isolated, only if a call leads there.
    prepared: dict[str, FileFacts] = {}
    todo = [(*job[:5], not cache.get(LAZY_PREFIX + job[0], digests[job[0]])) for job in todo]
    if jobs > 1 and len(todo) > 4 * jobs:
        answers = map_bounded(_analyze_job, todo, jobs)
    else:
        answers = ((job, analyze_source(job[0], Path(job[1]), job[2], codes, summarise=job[5]))
                   for job in todo)
    for job, answer in answers:
        res = _lost(job[0], 1, answer) if isinstance(answer, Lost) else answer
        if res.summary is not None:
            prepared[res.path] = res.summary
            cache.put(LAZY_PREFIX + res.path, digests[res.path], res.summary)
            res.summary = None
        results[res.path] = res
        cache.put(res.path, digests[res.path], res)
        done += 1
        if progress:
            progress(done, total)
    # the project sees files in discovery order, however the pool or the cache answered: some
    # project-stage answers depend on it, and the same tree must give the same report
    results = {rel: results[rel] for rel, _, _ in contents}
    abspaths = {job[0]: job[1] for job in todo}

    def summary(rel: str) -> Optional[FileFacts]:
        """A prefiltered file's facts made in this run's per-file stage, or in an earlier run's."""
        if rel in prepared:
            return prepared.pop(rel)
        digest = digests.get(rel)
        return cache.get(LAZY_PREFIX + rel, digest) if digest else None

    def load_skipped(rel: str) -> Optional[FileFacts]:
        # a prefiltered file that a call leads into: analyse it now (facts only), cached apart
        hit = summary(rel)
        if hit is not None:
            return hit
        digest = digests.get(rel)
        try:
            data = sources[rel] if rel in sources else read_source(Path(rel))
        except OSError:
            return None
        res = analyze_source(rel, Path(abspaths.get(rel, rel)).resolve(), data, (), force=True)
        if digest == content_digest(data):
            cache.put(LAZY_PREFIX + rel, digest, res.facts)
        return res.facts

    analysed: list[FileFacts] = []
    skipped: dict[str, str] = {}
    for r in results.values():
        facts = r.facts if r.facts is not None or r.error is not None else summary(r.path)
        if facts is not None:
            analysed.append(facts)
        elif r.error is None:
            skipped[r.module] = r.path
    outlines = [r.outline for r in results.values() if r.facts is None and r.outline is not None]
    findings: list[Finding] = []
    for res in results.values():
        findings.extend(res.findings)
        if res.error:
            errors.append(res.error)
    with _collector_paused():
        project, (project_findings, project_errors, truncated) = run_project_stage(
            lambda: link_named_objects(Project(analysed, skipped=skipped, loader=load_skipped,
                                               layout=Layout(digests), outlines=outlines)),
            rules, jobs)
    findings = on_entry_paths([*findings, *project_findings], project, codes)
    errors += project_errors
    errors += [FileError(path, "analysis truncated: " + "; ".join(whats))
               for path, whats in truncated.items()]
    findings = apply_suppressions(findings, results, config, report_unused_ignores)
    findings = sorted(dedupe(f for f in findings if config.preview or not f.preview),
                      key=Finding.sort_key)
    cache.save()
    read = {path: content_digest(text.encode()) for path, text in files_read(project).items()}
    cache.put_run(run_digest, (findings, errors[known_errors:], read))
    return CheckResult(
        findings=findings,
        errors=sorted(errors, key=lambda e: e.path),
        files=total,
        seconds=time.perf_counter() - start,
        analysed=len(todo),
        cached=cached,
        project=project,
        skipped=errors[:known_errors],
    )


def _configs_unchanged(read: dict[str, str]) -> bool:
    """The configuration files a kept run's answers read still hold what they held."""
    for path, digest in read.items():
        text = tree_text(PurePosixPath(path), Path.cwd())
        if text is None or content_digest(text.encode()) != digest:
            return False
    return True


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen: dict[tuple, Finding] = {}
    for f in findings:
        seen.setdefault((f.rule, f.path, f.line, f.column), f)
    return list(seen.values())


def apply_suppressions(
    findings: list[Finding], results: dict[str, FileResult], config: Config, report_unused: bool
) -> list[Finding]:
    kept: list[Finding] = []
    used: set[tuple[str, int, str]] = set()
    pfi_cache: dict[str, set[str]] = {}
    configured: dict[str, Ignores] = {}
    for f in findings:
        if f.path not in pfi_cache:
            pfi_cache[f.path] = per_file_ignored(config, f.path)
        if f.rule in pfi_cache[f.path]:
            continue
        res = results.get(f.path)
        if res is None and f.path not in configured:  # a configuration file's line
            text = tree_text(PurePosixPath(f.path), Path.cwd()) if not Path(f.path).is_absolute() else None
            configured[f.path] = parse_config_ignores(text) if text is not None else {}
        ignores = res.ignores if res is not None else configured[f.path]
        key = suppressing_line(ignores, f.line, f.rule)
        if key is not None:
            used.add((f.path, key, f.rule if ignores[key] is not None else "*"))
            continue
        kept.append(f)
    for res in results.values():
        for line, written in res.bad_ignores:
            kept.append(Finding(
                rule=UNUSED_IGNORE, name="unused-suppression", severity=Severity.WARNING,
                path=res.path, line=line, column=1, end_line=line, end_column=1,
                message=f"malformed suppression `{written}` suppresses nothing",
                fix="write `# gm-audit: ignore[GM101, GM201]` (codes separated by commas) or `# gm-audit: ignore`",
            ))
    if report_unused:
        for res in results.values():
            for line, codes in res.ignores.items():
                wanted = ["*"] if codes is None else sorted(codes)
                unused = [c for c in wanted if (res.path, line, c) not in used]
                if unused:
                    where = "in this file" if line == FILE_LEVEL else "on this line"
                    which = "" if unused == wanted else f" for {', '.join(unused)}"
                    kept.append(Finding(
                        rule=UNUSED_IGNORE, name="unused-suppression", severity=Severity.WARNING,
                        path=res.path, line=max(line, 1), column=1, end_line=max(line, 1),
                        end_column=1,
                        message=f"`{res.ignore_comments[line]}` suppresses nothing {where}{which}",
                        fix="remove the suppression comment (or the unused codes)",
                    ))
    return kept

