"""Autofix: ``gm-audit check --fix`` / ``--diff`` / ``--unsafe-fixes``.

A rule offers a fix by overriding :meth:`auditor.rule.Rule.fix`: given one of its findings and a
:class:`Fixer`, it returns a :class:`Fix` (a description and a list of :class:`Edit`) or None.
Edits name libcst nodes of a :class:`Source` (one parsed file, possibly not the finding's own:
GM603 seeds in the helper that seeds the others) and are built with the source's helpers:
``replace``, ``insert_before``, ``insert_after``, ``remove`` and ``add_import``. Whether a fix
is applied by ``--fix`` alone or only with ``--unsafe-fixes`` is the rule's ``fix_safety``.

The driver (:func:`fix_findings`) collects every fixable finding's edits, applies all edits of a
file in one libcst pass keyed by node identity (formatting and comments kept, new code in the
file's own newline style), adds imports with libcst's ``AddImportsVisitor``, and then re-checks
the whole project on a shadow copy holding the fixed files: a fix is kept only when its finding
is gone and no finding of any rule appeared in a file it touched; the others are rolled back and
reported. Only then are files written: atomically (temporary file + rename), in their own
encoding and file mode, and only if they did not change on disk meanwhile. A file that does not
parse is never touched.
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import shutil
import stat
import tempfile
import tokenize
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from auditor.config import Config
from auditor.findings import Finding
from auditor.static.context import FileContext
from auditor.static.facts import Span

if TYPE_CHECKING:
    import argparse

    from auditor.findings import Severity
    from auditor.rule import Rule
    from auditor.static.engine import CheckResult
    from auditor.static.project import Project

SAFE, UNSAFE = "safe", "unsafe"
MAX_ROUNDS = 3  # re-check rounds: each one rolls back the fixes the previous one refuted

Replacement = Union[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode]]


@dataclass(frozen=True, eq=False)
class Edit:
    """One change to one file. ``op``: replace | before | after | remove | import."""

    path: str
    op: str
    node: Optional[cst.CSTNode] = None
    replacement: Optional[Replacement] = None  # replace: a node, or a function of the updated node
    code: str = ""  # before / after: statement source
    module: str = ""  # import: ``import module`` (``from module import obj`` when obj is set)
    obj: Optional[str] = None
    asname: Optional[str] = None


@dataclass
class Fix:
    """What a rule's ``fix`` returns: a one-line description and the edits that make it."""

    description: str
    edits: list[Edit]


@dataclass
class Applied:
    finding: Finding
    fix: Fix


@dataclass
class Rejected:
    finding: Finding
    reason: str


@dataclass
class FixOutcome:
    fixed: list[Applied] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    unfixable: list[Rejected] = field(default_factory=list)  # the rule's fix does not cover them
    unsafe_available: int = 0  # findings with a fix that only --unsafe-fixes applies
    changed: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)  # path -> (old, new)
    result: Optional["CheckResult"] = None  # the re-check of the fixed code (None: nothing fixed)

    def diff(self) -> str:
        """Unified diff of every changed file (``--diff``)."""
        out: list[str] = []
        for path, (old, new) in sorted(self.changed.items()):
            a = _patch_lines(decode_with_encoding(old)[0])
            b = _patch_lines(decode_with_encoding(new)[0])
            for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}"):
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)


def _patch_lines(text: str) -> list[str]:
    """Lines as diff and patch count them: ended by "\n" only (a form feed, U+2028 or U+0085 is
    part of its line, as for Python; str.splitlines would cut there and shift every hunk)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    """(text, encoding) of a Python file: its PEP 263 cookie or BOM, UTF-8 by default. Newlines
    are kept as they are (no universal-newline translation), so CRLF files stay CRLF."""
    from auditor.static.engine import decode

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return decode(data), encoding


class Source:
    """One file as a fix sees it: its libcst tree with positions and parents, name resolution,
    and the helpers that build edits for it."""

    def __init__(self, path: str, data: bytes, project: "Project") -> None:
        self.path = path
        self.data = data
        self.text, self.encoding = decode_with_encoding(data)
        module = cst.parse_module(self.text)
        if self.text.endswith("\r") and not module.has_trailing_newline:
            # libcst only takes "\n" for a file's last newline: a CR-only file would lose its own
            module = module.with_changes(has_trailing_newline=True)
        self.wrapper = MetadataWrapper(module)
        self.module = self.wrapper.module  # positions and parents refer to this tree's nodes
        self._positions = self.wrapper.resolve(PositionProvider)
        self._parents = self.wrapper.resolve(ParentNodeProvider)
        facts = project.files.get(path)
        self._ctx = FileContext(path, self.text, self.module, facts.module if facts else "",
                                exact=True)
        if facts is not None:
            self._ctx.facts.imports.update(facts.imports)

    # -- finding nodes -----------------------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> Span:
        rng = self._positions[node]
        return Span(rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)

    def node_at(self, where: Union[Finding, Span], *types: type) -> Optional[cst.CSTNode]:
        """The node of one of ``types`` (any node if none given) at a finding's or event's span:
        the one with exactly that span, else the smallest one enclosing it."""
        span = where if isinstance(where, Span) else Span(where.line, where.column, where.end_line,
                                                          where.end_column)
        key = (span.line, span.column, span.end_line, span.end_column)
        best: Optional[tuple[tuple[int, int], cst.CSTNode]] = None
        for node in self._positions:
            if types and not isinstance(node, types):
                continue
            s = self.span(node)
            if (s.line, s.column, s.end_line, s.end_column) == key:
                return node
            if (s.line, s.column) <= (span.line, span.column) and \
                    (s.end_line, s.end_column) >= (span.end_line, span.end_column):
                size = (s.end_line - s.line, s.end_column - s.column)
                if best is None or size < best[0]:
                    best = (size, node)
        return best[1] if best else None

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def enclosing(self, node: cst.CSTNode, types: tuple[type, ...],
                  stop: tuple[type, ...] = ()) -> Optional[cst.CSTNode]:
        """The nearest ancestor of one of ``types``, not looking past one of ``stop``."""
        cur = self.parent(node)
        while cur is not None:
            if isinstance(cur, types):
                return cur
            if stop and isinstance(cur, stop):
                return None
            cur = self.parent(cur)
        return None

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        """The statement (a line, or a compound statement) holding ``node``."""
        if isinstance(node, cst.BaseStatement):
            return node
        found = self.enclosing(node, (cst.BaseStatement,))
        return found if isinstance(found, cst.BaseStatement) else None

    def qualify(self, node: cst.CSTNode) -> str:
        """Qualified name of an expression, imports resolved (``cudnn.x`` -> ``torch.backends.cudnn.x``)."""
        return self._ctx.qualify(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def alias_of(self, module: str) -> Optional[str]:
        """The name this file imports ``module`` under (``np`` for numpy), if it does."""
        return next((a for a, q in sorted(self._ctx.facts.imports.items()) if q == module), None)

    # -- building edits ----------------------------------------------------------------------------
    def replace(self, node: cst.CSTNode, replacement: Replacement) -> Edit:
        return Edit(self.path, "replace", node, replacement=replacement)

    def insert_before(self, statement: cst.BaseStatement, code: str) -> Edit:
        return Edit(self.path, "before", statement, code=code)

    def insert_after(self, statement: cst.BaseStatement, code: str) -> Edit:
        return Edit(self.path, "after", statement, code=code)

    def remove(self, statement: cst.BaseStatement) -> Edit:
        return Edit(self.path, "remove", statement)

    def add_import(self, module: str, obj: Optional[str] = None, asname: Optional[str] = None) -> Edit:
        return Edit(self.path, "import", module=module, obj=obj, asname=asname)

    def import_name(self, module: str, asname: Optional[str] = None) -> tuple[str, list[Edit]]:
        """How to spell ``module`` in this file: its existing alias, or a new import of it."""
        alias = self.alias_of(module)
        if alias is not None:
            return alias, []
        return asname or module, [self.add_import(module, asname=asname)]


def keyword_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with keyword argument ``name=value``: the existing one's value replaced, else the
    argument appended in the call's own layout (one per line stays one per line)."""
    existing = keyword_arg(call, name)
    if existing is not None:
        return call.with_deep_changes(existing, value=value)
    new = cst.Arg(value=value, keyword=cst.Name(name),
                  equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.Comma):
        # a trailing comma: the new argument takes it over; the old last one gets the layout of
        # the first argument (a newline and its indentation in a one-per-line call)
        layout = call.whitespace_before_args if isinstance(
            call.whitespace_before_args, cst.ParenthesizedWhitespace) else cst.SimpleWhitespace(" ")
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=layout))
    return call.with_changes(args=[*args, new])


class _Apply(cst.CSTTransformer):
    """Every replace / insert / remove edit of one file, in one pass, keyed by node identity."""

    def __init__(self, module: cst.Module, edits: Iterable[Edit]) -> None:
        super().__init__()
        self.replacements: dict[cst.CSTNode, list[Replacement]] = {}
        self.before: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        self.after: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        self.removed: set[cst.CSTNode] = set()
        seen: set[tuple[int, str, str]] = set()
        for e in edits:
            assert e.node is not None
            if e.op == "replace" and e.replacement is not None:
                self.replacements.setdefault(e.node, []).append(e.replacement)
            elif e.op in ("before", "after"):
                key = (id(e.node), e.op, e.code.strip())
                if key in seen:  # two findings asking for the same statement: insert it once
                    continue
                seen.add(key)
                target = self.before if e.op == "before" else self.after
                statement = cst.parse_statement(e.code.strip() + "\n", config=module.config_for_parsing)
                target.setdefault(e.node, []).append(statement)
            elif e.op == "remove":
                self.removed.add(e.node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        result = updated_node
        for rep in self.replacements.get(original_node, ()):
            result = rep(result) if callable(rep) else rep
        before, after = self.before.get(original_node, []), self.after.get(original_node, [])
        if original_node in self.removed:
            if before or after:
                return cst.FlattenSentinel([*before, *after])
            return cst.RemovalSentinel.REMOVE
        if before or after:
            return cst.FlattenSentinel([*before, result, *after])
        return result


def apply_edits(source: Source, edits: Sequence[Edit]) -> str:
    """The text of ``source`` with ``edits`` applied (imports last)."""
    structural = [e for e in edits if e.op != "import"]
    module = source.module.visit(_Apply(source.module, structural)) if structural else source.module
    imports = [e for e in edits if e.op == "import"]
    if imports:
        from libcst.codemod import CodemodContext  # imported here: only a fix pays for it
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        for e in imports:
            AddImportsVisitor.add_needed_import(context, e.module, e.obj, e.asname)
        module = AddImportsVisitor(context).transform_module(module)
    return module.code


class Fixer:
    """What a rule's ``fix`` receives: the project of the check and the files' sources
    (``contents``: what to read instead of the files at these paths, an editor's buffers)."""

    def __init__(self, project: "Project", contents: Optional[Mapping[str, bytes]] = None) -> None:
        self.project = project
        self.contents = contents or {}
        self._sources: dict[str, Optional[Source]] = {}

    def source(self, path: str) -> Optional[Source]:
        """The parsed file at ``path`` (as reported, relative to the current folder); None when
        it cannot be read or parsed: such a file is never touched."""
        if path not in self._sources:
            try:
                data = self.contents[path] if path in self.contents else Path(path).read_bytes()
                self._sources[path] = Source(path, data, self.project)
            except (OSError, ValueError, SyntaxError, cst.ParserSyntaxError, RecursionError):
                self._sources[path] = None
        return self._sources[path]


def _plan(findings: Iterable[Finding], rules: dict[str, type["Rule"]], fixer: Fixer,
          unsafe: bool) -> tuple[list[Applied], list[Rejected], int, list[Rejected]]:
    """The fixes of ``findings``: (planned, failed, how many need --unsafe-fixes, findings of a
    rule with fixes whose fix does not cover this case, with what to do by hand)."""
    planned: list[Applied] = []
    rejected: list[Rejected] = []
    unfixable: list[Rejected] = []
    hidden = 0
    for finding in findings:
        rule = rules.get(finding.rule)
        if rule is None or rule.fix_safety not in (SAFE, UNSAFE):
            continue
        if fixer.source(finding.path) is None:
            continue
        try:
            fix = rule.fix(finding, fixer)
        except Exception as exc:  # a rule's bug must not sink the run: report it, fix nothing
            if os.environ.get("GM_AUDIT_DEBUG"):
                raise
            rejected.append(Rejected(finding, f"internal error in the fix: {type(exc).__name__}: {exc}"))
            continue
        if fix is None or not fix.edits:
            by_hand = f"; by hand: {finding.fix}" if finding.fix else ""
            unfixable.append(Rejected(finding, "no automatic fix for this case (see `gm-audit "
                                               f"explain {finding.rule}`){by_hand}"))
            continue
        if rule.fix_safety == UNSAFE and not unsafe:
            hidden += 1
            continue
        planned.append(Applied(finding, fix))
    return planned, rejected, hidden, unfixable


def available_fixes(result: "CheckResult", rules: Sequence[type["Rule"]],
                    texts: Optional[dict[str, bytes]] = None) -> dict[tuple, str]:
    """``--show-fixes``: the fix safety (safe | unsafe) of each finding whose rule's fix applies
    to it, computed as ``--fix`` computes it (keyed by ``Finding.sort_key``)."""
    assert result.project is not None
    by_code = {r.code: r for r in rules}
    planned, _, _, _ = _plan(result.findings, by_code, Fixer(result.project, texts), unsafe=True)
    return {a.finding.sort_key(): by_code[a.finding.rule].fix_safety for a in planned}


def _render(fixer: Fixer, planned: Sequence[Applied]) -> tuple[dict[str, tuple[bytes, bytes]], list[Rejected]]:
    """New bytes of every file the planned fixes touch; a fix whose file would not parse after
    it (a rule's bug) is rejected on its own."""
    by_path: dict[str, list[Edit]] = {}
    for item in planned:
        for e in item.fix.edits:
            by_path.setdefault(e.path, []).append(e)
    changed: dict[str, tuple[bytes, bytes]] = {}
    broken: list[str] = []
    for path, edits in by_path.items():
        source = fixer.source(path)
        if source is None:
            broken.append(path)
            continue
        try:
            text = apply_edits(source, edits)
            ast.parse(text)
            new = text.encode(source.encoding)
        except (SyntaxError, ValueError, UnicodeEncodeError, cst.ParserSyntaxError):
            broken.append(path)
            continue
        if new != source.data:
            changed[path] = (source.data, new)
    rejected = [Rejected(a.finding, "the fixed file would not parse; left unchanged")
                for a in planned if any(e.path in broken for e in a.fix.edits)]
    return changed, rejected


@contextmanager
def _shadow(files: Iterable[Path], contents: Mapping[str, bytes]) -> Iterator[Path]:
    """A temporary mirror of the checked files (absolute paths kept under a temporary root, so
    relative paths and package structure are the same) holding ``contents`` (path -> bytes: the
    fixed files); the current folder is its mirror while the block runs."""
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="gm-audit-fix-") as tmp:
        root = Path(tmp)

        def mirror(p: Path) -> Path:
            p = p.absolute()
            return root.joinpath(*p.parts[1:])

        for p in files:
            target = mirror(p)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            parent = p.absolute().parent
            while (parent / "__init__.py").is_file() and not (mirror(parent) / "__init__.py").exists():
                mirror(parent).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(parent / "__init__.py", mirror(parent) / "__init__.py")
                parent = parent.parent
        for path, new in contents.items():
            target = mirror(Path(path))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(new)
        here = mirror(cwd)
        here.mkdir(parents=True, exist_ok=True)
        os.chdir(here)
        try:
            yield root
        finally:
            os.chdir(cwd)


def _recheck(paths: Sequence[str], config: Config, rules: Sequence[type["Rule"]], jobs: int,
             changed: dict[str, tuple[bytes, bytes]], fixer: Fixer) -> "CheckResult":
    from auditor.discovery import discover
    from auditor.static.engine import relpath, run_check

    # text read instead of a file (an editor's buffer, stdin) stands in for it, unless fixed
    files = discover([p for p in paths if relpath(Path(p)) not in fixer.contents], config.root,
                     config.exclude).files
    contents = {**fixer.contents, **{path: new for path, (_, new) in changed.items()}}
    with _shadow(files, contents) as root:
        shadow_root = root.joinpath(*config.root.absolute().parts[1:])
        shadow_paths = [str(root.joinpath(*Path(p).absolute().parts[1:])) if Path(p).is_absolute()
                        else p for p in paths]
        result = run_check(shadow_paths, replace(config, root=shadow_root), rules, jobs=jobs,
                           use_cache=False)
    return result


def _refuted(before: Sequence[Finding], after: Sequence[Finding],
             applied: Sequence[Applied]) -> list[tuple[Applied, str]]:
    """The fixes the re-check contradicts: their finding is still there (per rule and file, the
    count did not drop by the number fixed), or a file they touched has a new finding."""
    was = Counter((f.rule, f.path) for f in before)
    now = Counter((f.rule, f.path) for f in after)
    fixed = Counter((a.finding.rule, a.finding.path) for a in applied)
    grew = {key for key in now if now[key] > was[key] - fixed[key]}
    out: list[tuple[Applied, str]] = []
    for a in applied:
        key = (a.finding.rule, a.finding.path)
        if key in grew and now[key] > was[key]:
            out.append((a, f"the fix left a new {key[0]} finding in {key[1]}; rolled back"))
        elif key in grew:
            out.append((a, "the finding is still reported after the fix; rolled back"))
        else:
            touched = {e.path for e in a.fix.edits}
            new = sorted(f"{r} in {p}" for r, p in grew if p in touched and now[(r, p)] > was[(r, p)])
            if new:
                out.append((a, f"the fix made new findings appear ({', '.join(new)}); rolled back"))
    return out


def fix_findings(result: "CheckResult", paths: Sequence[str], config: Config,
                 rules: Sequence[type["Rule"]], unsafe: bool = False, jobs: int = 0,
                 contents: Optional[Mapping[str, bytes]] = None,
                 chosen: Optional[Sequence[Finding]] = None,
                 named: Optional[set[str]] = None) -> FixOutcome:
    """Plan, apply and verify the fixes of a check's findings, or of the ``chosen`` ones among
    them (nothing is written here). ``contents``: as for :class:`Fixer`, the sources the check
    read instead of the files. ``named``: fix only what a check of these files reports (the
    project is analysed)."""
    from auditor.scope import about_named

    assert result.project is not None
    fixer = Fixer(result.project, contents)
    by_code = {r.code: r for r in rules}
    wanted = result.findings if chosen is None else chosen
    if named is not None:
        wanted = about_named(wanted, named)
    planned, rejected, hidden, unfixable = _plan(wanted, by_code, fixer, unsafe)
    outcome = FixOutcome(rejected=rejected, unsafe_available=hidden, unfixable=unfixable)
    for _ in range(MAX_ROUNDS):
        changed, broken = _render(fixer, planned)
        if broken:
            outcome.rejected += broken
            planned = [a for a in planned if a.finding not in {b.finding for b in broken}]
            continue
        if not changed:
            return outcome
        after = _recheck(paths, config, rules, jobs, changed, fixer)
        refuted = _refuted(result.findings, after.findings, planned)
        if not refuted:
            outcome.fixed, outcome.changed, outcome.result = planned, changed, after
            return outcome
        outcome.rejected += [Rejected(a.finding, why) for a, why in refuted]
        dropped = {id(a) for a, _ in refuted}
        planned = [a for a in planned if id(a) not in dropped]
    outcome.rejected += [Rejected(a.finding, "the fixes could not be verified together; rolled back")
                         for a in planned]
    return outcome


def write_fixed(changed: dict[str, tuple[bytes, bytes]]) -> dict[str, str]:
    """Write every fixed file, or none: each new text goes to a temporary file beside its target
    (mode and owner copied) before any target is replaced. A file that changed on disk since it
    was read, is read-only or is a symlink is left alone. A hard-linked file is rewritten in place, so that
    its links keep sharing it. Returns the paths not written, with the reason."""
    left: dict[str, str] = {}
    ready: list[tuple[str, Path, os.stat_result, str]] = []
    try:
        for path, (old, new) in sorted(changed.items()):
            target = Path(path)
            if target.is_symlink():  # its target may lie outside the tree: never written through
                left[path] = "a symlink; --fix never writes through a link; left as it is"
                continue
            try:
                st = target.stat()
                if target.read_bytes() != old:
                    left[path] = "changed on disk while fixing; left as it is"
                    continue
            except OSError as exc:
                left[path] = f"cannot be read again: {exc.strerror or exc}; left as it is"
                continue
            if not st.st_mode & stat.S_IWUSR:  # root could write it: the mode says it must not be
                left[path] = "read-only file; left as it is"
                continue
            # a short name: the target's own may already be near NAME_MAX (255 bytes)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".gm-audit-", suffix=".tmp")
            ready.append((path, target, st, tmp))
            with os.fdopen(fd, "wb") as fh:
                fh.write(new)
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except PermissionError:
                    pass  # not ours to give away: the rewritten file is the user's
    except OSError as exc:  # a read-only folder, a full disk: nothing is written
        for path, _, _, tmp in ready:
            Path(tmp).unlink(missing_ok=True)
        reason = f"not written: {exc.strerror or exc}; no file was changed"
        return {**left, **{p: reason for p in changed if p not in left}}
    for path, target, st, tmp in ready:
        if st.st_nlink > 1:
            with open(target, "r+b") as fh:
                fh.write(changed[path][1])
                fh.truncate()
            Path(tmp).unlink(missing_ok=True)
        else:
            os.replace(tmp, target)
    return left


def _finding_json(finding: Finding, description: str) -> dict:
    return {"rule": finding.rule, "path": finding.path, "line": finding.line,
            "column": finding.column, "fix": description}


def fix_command(args: "argparse.Namespace", result: "CheckResult", config: Config,
                rules: Sequence[type["Rule"]], fail_on: "Severity", paths: Sequence[str],
                named: Optional[set[str]] = None, texts: Optional[dict[str, bytes]] = None) -> int:
    """``check --fix`` / ``--diff`` / ``--unsafe-fixes``: fix, then report what remains.
    ``paths``: what the check analysed; ``named``: the files it reports on (None: all)."""
    import sys

    from auditor.emit import emit
    from auditor.reports import Report
    from auditor.scope import about_named

    outcome = fix_findings(result, paths, config, rules, unsafe=args.unsafe_fixes,
                           jobs=args.jobs, contents=texts, named=named)
    n = len(outcome.fixed)
    notes = [f"{r.finding.rule} {r.finding.path}:{r.finding.line}: not fixed: {r.reason}"
             for r in [*outcome.rejected, *outcome.unfixable]]
    hint = (f"{outcome.unsafe_available} more finding(s) fixable with --unsafe-fixes"
            if outcome.unsafe_available else "")
    if args.diff:
        sys.stdout.write(outcome.diff())
        if not args.quiet:
            for line in [f"gm-audit: would fix {n} finding(s) in {len(outcome.changed)} file(s)",
                         *notes, *([hint] if hint else [])]:
                print(line if line.startswith("gm-audit") else f"gm-audit: {line}", file=sys.stderr)
        return 0 if args.exit_zero or not outcome.changed else 1
    skipped = write_fixed(outcome.changed)
    if skipped:  # what is on disk is what the report describes
        notes += [f"{p}: {why}" for p, why in skipped.items()]
        outcome.fixed = [a for a in outcome.fixed if not any(e.path in skipped for e in a.fix.edits)]
        n = len(outcome.fixed)
    after = outcome.result if outcome.fixed and not skipped else None
    if after is None and outcome.fixed:
        from auditor.static.engine import run_check

        after = run_check(paths, config, rules, jobs=args.jobs, use_cache=not args.no_cache)
    final = after or result
    findings, errors = final.findings, final.errors
    if final is outcome.result:  # the shadow copy held only the files read: the others stay reported
        errors = sorted([*result.skipped, *final.errors], key=lambda e: e.path)
    if named is not None:
        findings, errors = about_named(findings, named), about_named(errors, named)
    # the re-check ran on a shadow copy: its findings' paths are the real ones, its files count too
    lines = [f"Fixed {n} finding(s)" + (f" in {len({e.path for a in outcome.fixed for e in a.fix.edits})} "
                                        "file(s)" if n else "")]
    lines += [f"  fixed {a.finding.rule} {a.finding.path}:{a.finding.line}: {a.fix.description}"
              for a in outcome.fixed]
    lines += notes + ([hint] if hint else [])
    extra = {"fixes": {
        "fixed": n,
        "applied": [_finding_json(a.finding, a.fix.description) for a in outcome.fixed],
        "rolled_back": [{**_finding_json(r.finding, ""), "reason": r.reason} for r in outcome.rejected],
        "unfixable": [{**_finding_json(r.finding, ""), "reason": r.reason} for r in outcome.unfixable],
        "unsafe_available": outcome.unsafe_available,
    }}
    if args.format == "text":
        extra["text_sections"] = lines
    elif not args.quiet:
        print("\n".join(f"gm-audit: {line.strip()}" for line in lines), file=sys.stderr)
    files = result.files if named is None else len(named)
    report = Report("check", findings, errors, files, result.seconds, extra=extra)
    return emit(report, args, fail_on)
