"""The Language Server Protocol side of ``gm-audit server`` (pygls): documents in, diagnostics
and code actions out.

Diagnostics are published when a document is opened or saved, and while it is edited once the
typing has paused (:data:`DEBOUNCE_SECONDS`); a check covers the document's whole project, and
every open document of that project gets its own findings republished (an edit in one file can
change another's). Code actions: the rule's safe fix, verified as ``--fix`` verifies it (quick
fix), a ``# noqa: GMxxx`` on the finding's line, and ``source.fixAll.gm-audit`` for every safe
fix of the document. Checks run one at a time in a worker thread, so the protocol stays
responsive while one runs.
"""

from __future__ import annotations

import asyncio
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from auditor import __version__
from auditor.config import ConfigError
from auditor.findings import Finding, Severity
from auditor.fix import SAFE
from auditor.registry import all_rules
from auditor.server.documents import (Buffer, ProjectCheck, check_project, fixed_texts,
                                      line_edits, lines_with_ends, project_of, with_noqa)

DEBOUNCE_SECONDS = 0.4
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.gm-audit"
SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error,
            Severity.WARNING: lsp.DiagnosticSeverity.Warning,
            Severity.INFO: lsp.DiagnosticSeverity.Information}
Result = TypeVar("Result")


class AuditServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gm-audit", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        # one worker: a check changes the current folder to its project's root
        self.checker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gm-audit-check")
        self.pending: dict[str, asyncio.Task] = {}  # uri -> its debounced check
        # project -> (the open buffers it read, its check): code actions reuse it
        self.latest: dict[tuple, tuple[frozenset[tuple[Path, int]], ProjectCheck]] = {}
        self.said: set[str] = set()  # config errors shown

    async def in_worker(self, fn: Callable[..., Result], *args: Any) -> Result:
        return await asyncio.get_running_loop().run_in_executor(self.checker, fn, *args)

    def buffer(self, uri: str) -> Optional[Buffer]:
        """The open document at ``uri``, if it is a file (an unsaved ``untitled:`` has no
        project)."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None:
            return None
        doc = self.workspace.get_text_document(uri)
        return Buffer(_absolute(Path(path)), doc.source, doc.version or 0)

    def buffers(self) -> list[Buffer]:
        return [b for b in map(self.buffer, list(self.workspace.text_documents)) if b is not None]

    def folders(self) -> list[Path]:
        return [_absolute(Path(p)) for f in self.workspace.folders.values()
                if (p := to_fs_path(f.uri)) is not None]

    async def check(self, uri: str, fresh: bool = False) -> Optional[ProjectCheck]:
        """The check of the project of ``uri`` with the buffers as they are now: unless
        ``fresh``, the latest one when no buffer changed since. None when there is nothing to
        check or the config is broken (said in the editor)."""
        buffer = self.buffer(uri)
        if buffer is None:
            return None
        try:
            project = project_of(buffer.path, self.folders())
        except ConfigError as exc:
            if str(exc) not in self.said:  # once, not at every keystroke
                self.said.add(str(exc))
                self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error,
                                                               f"gm-audit: {exc}"))
            return None
        buffers = self.buffers()
        state = frozenset((b.path, b.version) for b in buffers)
        cached = self.latest.get(project.key)
        if cached is not None and cached[0] == state and not fresh:
            return cached[1]
        try:
            check = await self.in_worker(check_project, project, buffers)
        except Exception:  # a bug of the pass: logged, the editor session goes on
            self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Error, traceback.format_exc()))
            return None
        self.latest[project.key] = (state, check)
        return check

    async def publish(self, uri: str) -> None:
        """Publish the findings of ``uri``, and of every other open document of its project."""
        check = await self.check(uri, fresh=True)  # files may have changed on disk too
        if check is None:
            return
        for buffer in self.buffers():
            try:
                same = project_of(buffer.path, self.folders()).key == (check.config.root, check.paths)
            except ConfigError:
                same = False
            if same:
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                    from_fs_path(str(buffer.path)) or "", self.diagnostics(check, buffer),
                    buffer.version))

    def diagnostics(self, check: ProjectCheck, buffer: Buffer) -> list[lsp.Diagnostic]:
        lines = [line.rstrip("\r\n") for line in lines_with_ends(buffer.text)]
        out = [self.diagnostic(f, lines) for f in check.findings(buffer.path)]
        out += [lsp.Diagnostic(self.span(lines, e.line or 1, e.column or 1, e.line or 1, e.column or 1),
                               e.message, severity=lsp.DiagnosticSeverity.Error, source="gm-audit")
                for e in check.errors(buffer.path)]
        return out

    def diagnostic(self, finding: Finding, lines: list[str]) -> lsp.Diagnostic:
        f = finding
        return lsp.Diagnostic(
            self.span(lines, f.line, f.column, f.end_line, f.end_column),
            f.message + (f"\nFix: {f.fix}" if f.fix else ""), severity=SEVERITY[f.severity],
            code=f.rule, source="gm-audit")

    def span(self, lines: list[str], line: int, column: int, end_line: int,
             end_column: int) -> lsp.Range:
        """A finding's span (1-based lines, 1-based code point columns, end exclusive) in the
        client's position encoding (UTF-16 unless it chose another)."""
        def position(line: int, column: int) -> lsp.Position:
            index = min(max(line, 1), len(lines)) - 1 if lines else 0
            text = lines[index] if lines else ""
            units = self.workspace.position_codec.client_num_units(text[:max(column, 1) - 1])
            return lsp.Position(index, units)

        return lsp.Range(position(line, column), position(end_line, end_column))

    def workspace_edit(self, texts: dict[Path, tuple[str, str]]) -> lsp.WorkspaceEdit:
        changes: dict[str, list[lsp.TextEdit]] = {}
        for path, (old, new) in texts.items():
            lines = lines_with_ends(old)
            changes[from_fs_path(str(path)) or ""] = [
                lsp.TextEdit(lsp.Range(lsp.Position(first, 0), self.line_start(lines, end)), text)
                for first, end, text in line_edits(old, new)]
        return lsp.WorkspaceEdit(changes=changes)

    def line_start(self, lines: list[str], index: int) -> lsp.Position:
        """Where line ``index`` starts; past a last line without a line end, that line's end."""
        if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
            return lsp.Position(index, 0)
        return lsp.Position(len(lines) - 1, self.workspace.position_codec.client_num_units(lines[-1]))

    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        check, buffer = await self.check(uri), self.buffer(uri)
        if check is None or buffer is None:
            return []
        only = params.context.only

        def wanted(kind: str) -> bool:
            return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)

        lines = [line.rstrip("\r\n") for line in lines_with_ends(buffer.text)]
        findings = check.findings(buffer.path)
        fixable = [f for f in findings if getattr(all_rules().get(f.rule), "fix_safety", "") == SAFE]
        actions: list[lsp.CodeAction] = []
        if wanted(lsp.CodeActionKind.QuickFix.value):
            first, last = params.range.start.line + 1, params.range.end.line + 1
            for f in [f for f in findings if f.line <= last and f.end_line >= first]:
                diagnostic = [self.diagnostic(f, lines)]
                if f in fixable:
                    texts, done = await self.in_worker(fixed_texts, check, [f])
                    if texts:
                        actions.append(lsp.CodeAction(
                            f"Fix {f.rule}: {done[0]}", kind=lsp.CodeActionKind.QuickFix,
                            diagnostics=diagnostic, is_preferred=True,
                            edit=self.workspace_edit(texts)))
                noqa = with_noqa(buffer.text, f)
                if noqa is not None:
                    actions.append(lsp.CodeAction(
                        f"Disable {f.rule} for this line", kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=diagnostic,
                        edit=self.workspace_edit({buffer.path: (buffer.text, noqa)})))
        if fixable and wanted(FIX_ALL):
            texts, _ = await self.in_worker(fixed_texts, check, fixable)
            if texts:
                actions.append(lsp.CodeAction("Fix all safe gm-audit findings", kind=FIX_ALL,
                                              edit=self.workspace_edit(texts)))
        return actions

    def schedule(self, uri: str, delay: float) -> None:
        """Check ``uri`` after ``delay`` seconds, replacing the check already waiting for it."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            await self.publish(uri)

        self.pending[uri] = asyncio.ensure_future(later())


def _absolute(path: Path) -> Path:
    """``path`` with its folder resolved (the config root is, the file itself may be a link)."""
    return path.parent.resolve() / path.name


SERVER = AuditServer()


@SERVER.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: AuditServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@SERVER.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: AuditServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)


@SERVER.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: AuditServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@SERVER.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AuditServer, params: lsp.DidCloseTextDocumentParams) -> None:
    waiting = ls.pending.pop(params.text_document.uri, None)
    if waiting is not None:
        waiting.cancel()
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(params.text_document.uri, []))


@SERVER.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL]))
async def code_action(ls: AuditServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    return await ls.code_actions(params)
