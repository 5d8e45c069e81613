"""Configuration files a program reads by a literal path: YAML, JSON and TOML, parsed as data
only.

``cfg = yaml.safe_load(open("configs/train.yaml"))`` then ``cfg["loss"]["reduction"]``: the
value is written in the YAML file. :func:`config_file` reads such a file of the checked tree
(the literal path taken from the tree's root, where a run starts, else from the folder of the
script that opens it) and answers its data with the line of each key.

The tree is untrusted input: the path must be relative and stay inside the tree (no ``..``, no
link out of it), the file is read without following a final link, never more than
``MAX_CONFIG_BYTES``, and parsed as plain data (PyYAML's safe loader, ``json``, ``tomllib``): no tag builds an
object, nothing is executed. Aliases are walked to at most ``MAX_CONFIG_VALUES`` values (a YAML
alias bomb stays small).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Optional

from auditor.static.reading import read_source

MAX_CONFIG_BYTES = 256 * 1024
MAX_CONFIG_VALUES = 4096
MAX_FLOW_DEPTH = 64  # nesting no configuration needs
# a path named on the command line may be any configuration file of the tree: more than this many
# is a tree of data files, not a choice of runs
MAX_CANDIDATES = 16
MAX_TREE_ENTRIES = 20000  # entries listed while looking for them
CONFIG_WORDS = re.compile(r"conf|cfg|setting|param", re.IGNORECASE)
SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


@dataclass
class ConfigFile:
    """A parsed configuration file: ``path`` (relative, POSIX), its ``data`` and the line that
    writes each key, by key path (``("loss", "reduction")``)."""

    path: str
    data: Any
    lines: dict[tuple, int] = field(default_factory=dict)
    text: str = ""  # as read: what a kept answer depends on


def config_file(literal: str, opener: str, root: Path) -> Optional[ConfigFile]:
    """The configuration file a program whose file is ``opener`` opens as ``literal``, found
    from ``root`` (the tree's root) or from ``opener``'s folder; None when it is not a readable
    YAML, JSON or TOML file inside the tree, too large, or not valid."""
    rel = PurePosixPath(literal.replace("\\", "/"))
    kind = SUFFIXES.get(rel.suffix.lower())
    if kind is None or rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return None
    for candidate in (rel, PurePosixPath(opener).parent / rel):
        text = tree_text(candidate, root)
        if text is None:
            continue
        parsed = PARSERS[kind](text)
        if parsed is not None:
            return ConfigFile(candidate.as_posix(), *parsed, text=text)
    return None


def tree_configs(root: Path, checked: Iterable[str], kinds: set[str]) -> list[str]:
    """The configuration files of ``kinds`` (``"json"``, ``"yaml"``, ``"toml"``) under the
    top folders of the ``checked`` files (relative, POSIX) in the tree at ``root``, sorted: what
    a path named only on the command line may be. Hidden and build folders, virtual
    environments and links are left out; when more than :data:`MAX_CANDIDATES` are found, only
    those whose path says configuration, and none if still too many."""
    folders = {path.split("/", 1)[0] if "/" in path else "." for path in checked}
    found: list[str] = []
    budget = MAX_TREE_ENTRIES
    for folder in sorted(folders):
        start = root / folder
        if not start.is_dir() or start.is_symlink():
            continue
        for here, dirs, files in os.walk(start, followlinks=False):
            budget -= len(dirs) + len(files)
            if budget < 0:
                return []
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                             and not (Path(here) / d / "pyvenv.cfg").exists())
            rel = Path(here).relative_to(root)
            found += [(rel / f).as_posix() for f in sorted(files)
                      if SUFFIXES.get(Path(f).suffix.lower()) in kinds]
    if len(found) > MAX_CANDIDATES:
        found = [f for f in found if CONFIG_WORDS.search(f)]
    return found if len(found) <= MAX_CANDIDATES else []


def tree_text(rel: PurePosixPath, root: Path) -> Optional[str]:
    """The text of the file ``rel`` of the tree at ``root``; None when it leaves the tree (a
    link out of it), is no regular file, cannot be read or is too large."""
    path = root / Path(*rel.parts)
    try:
        if not path.resolve().is_relative_to(root.resolve()):
            return None
        data = read_source(path, MAX_CONFIG_BYTES, follow_symlinks=False)
    except (OSError, RuntimeError):
        return None
    return None if len(data) > MAX_CONFIG_BYTES else data.decode("utf-8", errors="replace")


def _parse_yaml(text: str) -> Optional[tuple[Any, dict[tuple, int]]]:
    try:
        import yaml
    except ImportError:  # PyYAML is a dependency; a broken install reads no YAML
        return None
    if _flow_depth(text) > MAX_FLOW_DEPTH:
        return None  # PyYAML's pure-Python composer recurses per level: slow, then a crash
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    lines: dict[tuple, int] = {}
    budget = [MAX_CONFIG_VALUES]
    return _yaml_value(node, (), lines, budget), lines


def _flow_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest in ``text`` (brackets in strings counted too: a bound, not
    a parse)."""
    depth = deepest = 0
    for ch in re.findall(r"[\[\]{}]", text):
        depth = depth + 1 if ch in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def _yaml_value(node: Any, at: tuple, lines: dict[tuple, int], budget: list[int]) -> Any:
    """The plain value of a composed YAML node (mappings, sequences and scalars; anything past
    the budget is None), recording each key's line."""
    import yaml

    budget[0] -= 1
    if node is None or budget[0] < 0:
        return None
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _yaml_scalar(key_node)
            if isinstance(key, (str, int, float, bool)):
                lines[(*at, key)] = key_node.start_mark.line + 1
                out[key] = _yaml_value(value_node, (*at, key), lines, budget)
        return out
    if isinstance(node, yaml.SequenceNode):  # as a JSON file's lists (Hydra's `defaults`)
        return [_yaml_value(item, (*at, i), lines, budget) for i, item in enumerate(node.value)]
    return _yaml_scalar(node)


def _yaml_scalar(node: Any) -> Any:
    """A scalar node's value as the safe loader resolves it (``0.5`` a float, ``sum`` a str)."""
    import yaml

    if not isinstance(node, yaml.ScalarNode):
        return None
    try:
        return yaml.SafeLoader("").construct_object(node, deep=False)
    except yaml.YAMLError:
        return None


def _parse_json(text: str) -> Optional[tuple[Any, dict[tuple, int]]]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    lines: dict[tuple, int] = {}
    _json_lines(data, (), text, 0, lines, [MAX_CONFIG_VALUES])
    return data, lines


def _parse_toml(text: str) -> Optional[tuple[Any, dict[tuple, int]]]:
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return None
    return data, _toml_lines(text)


_TOML_TABLE = re.compile(r"\s*\[\[?([^\[\]]+)\]\]?\s*(#.*)?$")
_TOML_KEY = re.compile(r"\s*((?:[\w-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[\w-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _toml_key(text: str) -> tuple:
    return tuple(part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text))


def _toml_lines(text: str) -> dict[tuple, int]:
    """The line of each key: its ``key = value`` under the latest ``[table]`` header, dotted
    keys and headers split. A line-by-line scan: a line inside a multi-line string or array
    that looks like ``key =`` is taken for one, and the first line written for a path wins."""
    lines: dict[tuple, int] = {}
    table: tuple = ()
    for number, line in enumerate(text.splitlines()[:MAX_CONFIG_VALUES], 1):
        header = _TOML_TABLE.match(line)
        if header:
            table = _toml_key(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _TOML_KEY.match(line)
        if key:
            lines.setdefault((*table, *_toml_key(key.group(1))), number)
    return lines


def _json_lines(data: Any, at: tuple, text: str, start: int, lines: dict[tuple, int],
                budget: list[int]) -> None:
    """The line of each key: its first ``"key":`` after where its parent's was written."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        budget[0] -= 1
        if budget[0] < 0:
            return
        found = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, start)
        offset = found.start() if found else start
        lines[(*at, key)] = text.count("\n", 0, offset) + 1
        _json_lines(value, (*at, key), text, offset, lines, budget)


PARSERS = {"yaml": _parse_yaml, "json": _parse_json, "toml": _parse_toml}
