"""The rule API. A rule is one file in ``rules/`` holding one :class:`Rule` subclass.

A rule declares its code, name, severity and doc, and then any of:

* ``visit_<Node>`` methods: libcst visitor methods run in the engine's single traversal of a file
  (every enabled rule is batched into that one walk). Call :meth:`Rule.report` for a finding
  decided from the file alone, or :meth:`Rule.fact` to keep a serializable fact for later.
* :meth:`Rule.check_project`: the cross-file stage, run once over the :class:`Project`
  (every file's functions and events, the rules' own facts, and the call graph). It may
  yield one place more than once: the engine keeps a rule's first finding per position.
* :meth:`Rule.confirm`: the runtime confirmation, deciding a static finding from probe evidence.
* :meth:`Rule.fix`: the autofix of one finding (``gm-audit check --fix``): a
  :class:`auditor.fix.Fix` of libcst edits built with ``fixer.source(path)``'s helpers
  (``replace``, ``insert_before``/``insert_after``, ``remove``, ``add_import``), or None. Its
  ``fix_safety`` says whether ``--fix`` applies it (safe) or only ``--unsafe-fixes`` (unsafe).
  The driver applies, re-checks (the finding must be gone, nothing new) and writes atomically.
* ``VALID`` / ``INVALID``: code examples the generic rule test runs through the whole engine
  (an ``Invalid`` may give ``fixed``: the source its fixes must produce).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Optional, Union

import libcst as cst

from auditor.findings import Finding, Severity, Status
from auditor.static.facts import Span
from auditor.static.visitor import Visitor

if TYPE_CHECKING:
    from auditor.fix import Fix, Fixer
    from auditor.static.context import FileContext
    from auditor.static.project import Project

Source = Union[str, dict[str, str]]  # one file's code, or {relative path: code} for a project


@dataclass
class Valid:
    """Code on which the rule must stay silent."""

    code: Source


@dataclass
class Invalid:
    """Code on which the rule must report, at ``line`` (1-based) of ``path`` (multi-file cases)."""

    code: Source
    line: int
    path: str = ""
    column: Optional[int] = None
    message_contains: str = ""
    fixed: Optional[Source] = None  # what `--fix --unsafe-fixes` must turn ``code`` into


@dataclass
class Verdict:
    """A runtime decision on one finding: confirmed / refuted / unexercised, with evidence."""

    status: Status
    evidence: list[str] = field(default_factory=list)


class Rule(Visitor):
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    summary: ClassVar[str]  # one line, for `gm-audit rules`
    doc: ClassVar[str]  # markdown: What it does / Why is this bad? / Example / Use instead / ...
    fix_safety: ClassVar[str] = "none"  # none | safe | unsafe (Ruff's fix safety)
    # The kind of this rule's findings that is behind `--preview` (config `preview = true`), as
    # Ruff's preview: one readers who did not write the rule judged right less than 90% of the
    # time (benchmarks/ecosystem/judged), until a new round shows it earned its place. The rule
    # marks those findings (`make_finding(preview=True)`); empty: every finding is stable.
    preview_kind: ClassVar[str] = ""
    # The engine parses a file for this rule only if its text contains one of these strings
    # (cheap, before any parsing). Empty: every file.
    prefilter: ClassVar[tuple[str, ...]] = ()
    # Set on the rules whose cross-file queries dominate that stage (the loss-path data flow,
    # the self-loop taint): they run in a process of their own beside the other rules'
    # (auditor/static/project_stage.py). Rules that share an analysis keep the same value.
    runs_beside: ClassVar[bool] = False
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__()
        self.ctx = ctx
        self.findings: list[Finding] = []

    # -- per-file stage ----------------------------------------------------------------------------
    def report(self, node: cst.CSTNode, message: str, fix: str = "", preview: bool = False) -> None:
        self.findings.append(self.make_finding(self.ctx.path, self.ctx.span(node), message, fix,
                                               preview=preview))

    def fact(self, value: Any) -> None:
        """Keep a picklable fact for :meth:`check_project` (cached with the file)."""
        self.ctx.facts.rule_facts.setdefault(self.code, []).append(value)

    # -- cross-file stage --------------------------------------------------------------------------
    @classmethod
    def check_project(cls, project: "Project") -> Iterable[Finding]:
        return ()

    # -- probe stage -------------------------------------------------------------------------------
    @classmethod
    def confirm(cls, finding: Finding, evidence: Any) -> Optional[Verdict]:
        """Decide a finding of this rule from the probe's evidence; None: no opinion."""
        return None

    # -- autofix -----------------------------------------------------------------------------------
    @classmethod
    def fix(cls, finding: Finding, fixer: "Fixer") -> Optional["Fix"]:
        """The rewrite that removes ``finding`` (see auditor/fix.py); None: no automatic fix."""
        return None

    # -- helpers -----------------------------------------------------------------------------------
    @classmethod
    def make_finding(
        cls, path: str, span: Span, message: str, fix: str = "", evidence: Iterable[str] = (),
        preview: bool = False, related: Iterable[str] = (),
    ) -> Finding:
        """``preview``: a kind of this rule's findings that readers judged right less than 90% of
        the time: reported only with ``--preview``. ``related``: other places (``path:line``)
        the finding depends on."""
        return Finding(
            rule=cls.code,
            name=cls.name,
            severity=cls.severity,
            path=path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            message=message,
            fix=fix,
            evidence=list(evidence),
            preview=preview,
            related=list(related),
        )

    @classmethod
    def matches_text(cls, text: str) -> bool:
        return not cls.prefilter or any(p in text for p in cls.prefilter)
