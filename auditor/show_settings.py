"""``check --show-settings``: the configuration a check would run with, resolved from the config
file and the command line (Ruff's ``--show-settings``), one ``key = value`` line each with the
value in JSON (``null``: not set), so a user sees which file was read and what the flags made of
it. Nothing is checked."""

from __future__ import annotations

import json
from typing import Optional, Sequence

from auditor.config import Config
from auditor.findings import Severity
from auditor.rule import Rule
from auditor.static.cache import cache_folder


def _value(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def settings_text(config: Config, select: Optional[Sequence[str]], ignore: Sequence[str],
                  rules: Sequence[type[Rule]], preview: bool, fail_on: Severity,
                  cache: bool) -> str:
    """``select`` and ``ignore``: as the config and the command line merge them
    (:func:`auditor.config.selection`); ``rules``: what they resolve to."""
    lines = [
        f"config-file = {_value(str(config.path) if config.path else None)}",
        f"project-root = {_value(str(config.root))}",
        f"select = {_value(None if select is None else list(select))}  # null: every rule",
        f"ignore = {_value(list(ignore))}",
        f"preview = {_value(preview)}",
        f"selected-rules = {_value([r.code for r in rules])}",
        f"exclude = {_value(config.exclude)}",
        f"per-file-ignores = {_value(config.per_file_ignores)}",
        f"fail-on = {_value(fail_on.value)}",
        f"cache-dir = {_value(str(cache_folder(config.root)) if cache else None)}",
        f"probe = {_value(config.probe)}",
    ]
    return "\n".join(lines) + "\n"
