"""Finds the rules: every module of the ``auditor.rules`` package holding a Rule subclass."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from typing import Iterable

from auditor.code_docs import ENGINE_CODES
from auditor.findings import Severity
from auditor.rule import Rule
from auditor.suggest import did_you_mean

CODE_RE = re.compile(r"^GM\d{3}$")
PARSE_ERROR = "GM000"
UNUSED_IGNORE = "GM001"

# Checks the probe makes on the run itself, with no static pattern to match (so no rule file):
# code -> (name, severity, summary). Selected and ignored like rules.
RUNTIME_CHECKS: dict[str, tuple[str, Severity, str]] = {
    "GM701": ("non-finite-values", Severity.ERROR,
              "non-finite loss or gradients (names the first module whose output went non-finite)"),
    "GM702": ("prediction-collapse", Severity.WARNING,
              "the prediction collapsed to a near-constant (spread across nodes far below the target's)"),
    "GM703": ("direction-not-unit-length", Severity.INFO,
              "predicted normals/tangents far from unit length: a scale-free loss lets them drift"),
    "GM704": ("prediction-scale", Severity.WARNING,
              "prediction scale far from the target's under a scale-sensitive loss"),
}


class UnknownRule(ValueError):
    pass


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    from auditor import rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule:
                if value.__module__ == module.__name__:
                    found[value.code] = value
    return dict(sorted(found.items()))


def expand(selectors: Iterable[str]) -> set[str]:
    """Ruff-style selectors: ``ALL``, a code (``GM101``) or a prefix (``GM1``, ``GM10``). The
    engine's own codes (GM000, GM001) are codes like the others."""
    codes = set(all_rules()) | set(RUNTIME_CHECKS) | set(ENGINE_CODES)
    out: set[str] = set()
    for sel in selectors:
        sel = sel.strip().upper()
        if not sel:
            continue
        if sel == "ALL":
            out |= codes
            continue
        matched = {c for c in codes if c.startswith(sel)}
        if not matched:
            hint = did_you_mean(sel, sorted(codes)) or " (see `gm-audit rules`)"
            raise UnknownRule(f"unknown rule code or prefix: {sel!r}{hint}")
        out |= matched
    return out


def select(select: Iterable[str] | None, ignore: Iterable[str]) -> list[type[Rule]]:
    chosen = expand(select) if select else set(all_rules())
    chosen -= expand(ignore)
    return [all_rules()[c] for c in sorted(chosen) if c in all_rules()]


def select_runtime_checks(select: Iterable[str] | None, ignore: Iterable[str]) -> set[str]:
    """The probe-only checks (GM7xx) a selection keeps."""
    chosen = expand(select) if select else set(RUNTIME_CHECKS)
    return (chosen - expand(ignore)) & set(RUNTIME_CHECKS)


def unused_ignores(select: Iterable[str] | None, ignore: Iterable[str],
                   asked: bool) -> tuple[bool, bool]:
    """What a selection makes of GM001: (report the suppressions that suppress nothing, report
    GM001 at all). Selecting it by code or prefix asks for the unused ones as
    ``--report-unused-ignores`` does; ignoring it drops even the malformed ones, which are
    otherwise always reported. GM000 is never hidden (see ``gm-audit explain GM000``)."""
    ignored = UNUSED_IGNORE in expand(ignore)
    return (asked or UNUSED_IGNORE in expand(select or ())) and not ignored, not ignored
