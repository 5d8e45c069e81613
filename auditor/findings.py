"""The finding model shared by the static pass, the probe and every report (DESIGN section 6)."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return ("info", "warning", "error").index(self.value)


class Status(str, enum.Enum):
    STATIC = "static"  # check only
    CONFIRMED = "confirmed"  # the run showed the effect
    REFUTED = "refuted"  # the code ran and the effect is absent
    UNEXERCISED = "unexercised"  # the line never ran
    OUTSIDE = "outside"  # in a module this run never imported: outside what the probe can see
    UNTAKEN = "untaken"  # never ran, and this run would not reach it: an untaken branch or caller
    RUNTIME = "runtime"  # found by the probe alone


@dataclass
class Finding:
    rule: str
    name: str
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fix: str = ""
    status: Status = Status.STATIC
    evidence: list[str] = field(default_factory=list)
    # a kind of finding behind `--preview` (auditor/rule.py: Rule.preview_kind)
    preview: bool = False
    # other places the finding depends on, "path:line" (the evaluation that a hoisted
    # `train()` fails to undo): the probe runs until they have run too
    related: list[str] = field(default_factory=list)

    @property
    def in_configuration(self) -> bool:
        """At a configuration file's line (YAML, JSON), which a run reads, not runs."""
        return not self.path.endswith((".py", ".pyi"))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        data["status"] = self.status.value
        if not self.preview:
            del data["preview"]  # the JSON contract of stable findings is unchanged
        if not self.related:
            del data["related"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        data = dict(data)
        data["severity"] = Severity(data["severity"])
        data["status"] = Status(data.get("status", "static"))
        return cls(**data)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.rule)

    def fingerprint(self, source_line: str = "") -> str:
        """Stable across unrelated edits: rule, file and the offending line's text, not its number."""
        text = f"{self.rule}\0{self.path}\0{source_line.strip()}\0{self.name}"
        # surrogateescape: a file name that is not UTF-8 keeps its bytes
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


@dataclass
class FileError:
    """A file that could not be read or parsed; reported, never raised."""

    path: str
    message: str
    line: int = 0
    column: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message}
