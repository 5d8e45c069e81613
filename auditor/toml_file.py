"""Reading a TOML file of the checked tree (``pyproject.toml``, a ``--config`` file) as untrusted
input: without blocking on a FIFO, at most a bounded size, any parse failure as one error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from auditor.static.reading import read_source

MAX_TOML_BYTES = 4 * 1024 * 1024  # a real pyproject.toml is a few kilobytes


class TomlError(ValueError):
    """The file was read but is not a TOML document gm-audit takes (one line, no path)."""


def read_toml(path: Path) -> dict[str, Any]:
    """The document in ``path``. OSError when it cannot be read (missing, not a regular file);
    TomlError when it is too large, not UTF-8, not TOML or nested past the parser's depth."""
    data = read_source(path, MAX_TOML_BYTES)
    if len(data) > MAX_TOML_BYTES:
        raise TomlError(f"larger than {MAX_TOML_BYTES // (1024 * 1024)} MiB")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise TomlError("not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"invalid TOML: {exc}") from None
    except RecursionError:
        raise TomlError("invalid TOML: nested too deeply") from None


def subtable(document: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The table at ``dotted`` (``tool.gm-audit``): empty when absent; TomlError naming the key
    when something else stands there (``tool = 5``)."""
    current: Any = document
    for depth, key in enumerate(dotted.split(".")):
        current = current.get(key, {})
        if not isinstance(current, dict):
            name = ".".join(dotted.split(".")[: depth + 1])
            raise TomlError(f"`{name}` must be a table, not {type(current).__name__}")
    return current
