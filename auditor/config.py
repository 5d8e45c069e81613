"""``[tool.gm-audit]`` in the nearest pyproject.toml (or ``--config FILE``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import tomllib

from auditor.findings import Severity
from auditor.globs import matches
from auditor.registry import RUNTIME_CHECKS, all_rules, expand
from auditor.suggest import did_you_mean

KNOWN_KEYS = {"select", "extend-select", "ignore", "per-file-ignores", "exclude", "fail-on",
              "preview", "probe"}
PROBE_KEYS = {"command", "steps", "max-steps", "timeout", "device", "paths"}


class ConfigError(ValueError):
    pass


@dataclass
class Config:
    root: Path  # the folder of the config file (or the current folder), for relative patterns
    path: Optional[Path] = None
    select: Optional[list[str]] = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    fail_on: Severity = Severity.WARNING
    preview: bool = False  # enable the preview rules (auditor/rule.py: Rule.preview)
    probe: dict[str, Any] = field(default_factory=dict)


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml holding a ``[tool.gm-audit]`` table, walking upwards. One that
    is not valid TOML stops the walk with a ConfigError: it may hold the table, and running on
    with the defaults would silently ignore the user's settings."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
            if "gm-audit" in data.get("tool", {}):
                return candidate
    return None


def _str_list(value: Any, key: str, where: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return value


def load_config(explicit: Optional[str], start: Path) -> Config:
    path = Path(explicit) if explicit else find_pyproject(start)
    if path is None:
        return Config(root=Path.cwd())
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("gm-audit")
    if table is None:
        # a standalone gm-audit.toml may hold the keys at top level
        table = {} if path.name == "pyproject.toml" else data
    return parse_table(table, path)


def parse_table(table: dict[str, Any], path: Path) -> Config:
    _known_keys(table, KNOWN_KEYS, "[tool.gm-audit]", path)
    cfg = Config(root=path.parent.resolve(), path=path)
    try:
        if "select" in table:
            cfg.select = _str_list(table["select"], "select", path)
            expand(cfg.select)
        cfg.extend_select = _str_list(table.get("extend-select", []), "extend-select", path)
        expand(cfg.extend_select)
        cfg.ignore = _str_list(table.get("ignore", []), "ignore", path)
        expand(cfg.ignore)
        pfi = table.get("per-file-ignores", {})
        if not isinstance(pfi, dict):
            raise ConfigError(f"{path}: `per-file-ignores` must be a table of glob = [codes]")
        for glob, codes in pfi.items():
            cfg.per_file_ignores[glob] = _str_list(codes, f"per-file-ignores.{glob}", path)
            expand(cfg.per_file_ignores[glob])
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    cfg.exclude = _str_list(table.get("exclude", []), "exclude", path)
    if "fail-on" in table:
        try:
            cfg.fail_on = Severity(str(table["fail-on"]).lower())
        except ValueError:
            raise ConfigError(
                f"{path}: `fail-on` must be one of info, warning, error"
            ) from None
    if "preview" in table:
        if not isinstance(table["preview"], bool):
            raise ConfigError(f"{path}: `preview` must be true or false")
        cfg.preview = table["preview"]
    probe = table.get("probe", {})
    if not isinstance(probe, dict):
        raise ConfigError(f"{path}: [tool.gm-audit.probe] must be a table")
    _known_keys(probe, PROBE_KEYS, "[tool.gm-audit.probe]", path)
    cfg.probe = probe
    return cfg


def _known_keys(table: dict[str, Any], known: set[str], where: str, path: Path) -> None:
    """ConfigError for a key outside ``known``, with the closest known one."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in {where}: {', '.join(unknown)}"
            f"{did_you_mean(unknown[0], sorted(known))} (known: {', '.join(sorted(known))})"
        )


def per_file_ignored(cfg: Config, relpath: str) -> set[str]:
    """The codes ``per-file-ignores`` turns off for the file at ``relpath`` (as reported)."""
    codes: set[str] = set()
    for glob, selectors in cfg.per_file_ignores.items():
        if matches(Path(relpath), cfg.root, [glob]):
            codes |= expand(selectors)
    return codes


def selection(args: Any, config: Config) -> tuple[Optional[list[str]], list[str]]:
    """(select, ignore) from the command line and the config, as Ruff merges them: ``--select``
    (repeatable) replaces the config's ``select`` and ``extend-select``, ``--extend-select`` adds
    to whichever holds (to every rule when none is selected: it matters then for the engine's
    GM001), ignores add up. None: every rule, the default."""
    if args.select:
        chosen, extra = args.select, []
    else:
        chosen, extra = config.select, list(config.extend_select)
    extra += list(getattr(args, "extend_select", None) or [])
    if extra:  # "every rule" spelled as the prefixes of the rules' families (GM1, ..., GM7):
        # no exact code, so no preview rule counts as selected by its code
        chosen = [*(chosen or sorted({c[:3] for c in [*all_rules(), *RUNTIME_CHECKS]})), *extra]
    return chosen, [*config.ignore, *args.ignore]
