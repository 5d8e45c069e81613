"""libcst's parse, for trees that are only read."""

from __future__ import annotations

import libcst as cst
from libcst._nodes.base import CSTNode


def _trusted(self: CSTNode) -> None:
    """Each node's constructor re-checks its fields (``_validate``); a parser's output is valid
    by construction, and those checks are an eighth of the parse."""


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module`` without re-validating what the parser built (libcst's own comment on
    ``CSTNode.__post_init__`` names this cost). Trees built by hand (fixes) are still checked:
    the hook is libcst's own again as soon as the parse returns."""
    checked = CSTNode.__post_init__
    CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = checked  # type: ignore[method-assign]
