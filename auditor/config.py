"""``[tool.gm-audit]`` in the nearest pyproject.toml (or ``--config FILE``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional


from auditor.findings import Severity
from auditor.globs import matches
from auditor.registry import RUNTIME_CHECKS, all_rules, expand
from auditor.static.reading import MAX_ANALYSED_LINES
from auditor.suggest import did_you_mean
from auditor.toml_file import TomlError, read_toml, subtable

KNOWN_KEYS = {"select", "extend-select", "ignore", "per-file-ignores", "exclude", "fail-on",
              "max-lines", "preview", "probe"}
PROBE_KEYS = {"command", "steps", "max-steps", "timeout", "device", "paths"}
# every file's path is matched against each pattern: a bound keeps a crafted config from making
# the walk quadratic (a real project has a few dozen)
MAX_PATTERNS = 1000


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
    preview: bool = False  # also report the preview kinds of findings (auditor/rule.py)
    max_lines: int = MAX_ANALYSED_LINES  # a longer file is skipped (its analysis's memory)
    probe: dict[str, Any] = field(default_factory=dict)


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml holding a ``[tool.gm-audit]`` table, walking upwards. One that
    is not valid TOML (or holds something else than a table at ``tool``) stops the walk with a
    ConfigError: it may hold the table, and running on with the defaults would silently ignore
    the user's settings."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                if "gm-audit" in subtable(read_toml(candidate), "tool"):
                    return candidate
            except OSError:
                continue
            except TomlError as exc:
                raise ConfigError(f"{candidate}: {exc}") from None
    return None


def _str_list(value: Any, key: str, where: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return value


def _bounded(count: int, key: str, where: Path) -> None:
    if count > MAX_PATTERNS:
        raise ConfigError(f"{where}: `{key}` holds {count} patterns; at most {MAX_PATTERNS} are accepted")


def load_config(explicit: Optional[str], start: Path) -> Config:
    path = Path(explicit) if explicit else find_pyproject(start)
    if path is None:
        return Config(root=Path.cwd())
    try:
        data = read_toml(path)
        tool = subtable(data, "tool")
        # a standalone gm-audit.toml may hold the keys at top level
        chosen = subtable(data, "tool.gm-audit") if "gm-audit" in tool or path.name == "pyproject.toml" else data
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except TomlError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parse_table(chosen, path)


def parse_table(table: dict[str, Any], path: Path) -> Config:
    _known_keys(table, KNOWN_KEYS, "[tool.gm-audit]", path)
    cfg = Config(root=path.parent.resolve(), path=path)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: `per-file-ignores` must be a table of glob = [codes]")
    _bounded(len(pfi), "per-file-ignores", path)
    try:
        if "select" in table:
            cfg.select = _str_list(table["select"], "select", path)
            expand(cfg.select)
        cfg.extend_select = _str_list(table.get("extend-select", []), "extend-select", path)
        expand(cfg.extend_select)
        cfg.ignore = _str_list(table.get("ignore", []), "ignore", path)
        expand(cfg.ignore)
        for glob, codes in pfi.items():
            cfg.per_file_ignores[glob] = _str_list(codes, f"per-file-ignores.{glob}", path)
            expand(cfg.per_file_ignores[glob])
    except ConfigError:
        raise  # names the file already
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    cfg.exclude = _str_list(table.get("exclude", []), "exclude", path)
    _bounded(len(cfg.exclude), "exclude", path)
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
    if "max-lines" in table:
        value = table["max-lines"]
        if type(value) is not int or value < 1:
            raise ConfigError(f"{path}: `max-lines` must be a positive whole number")
        cfg.max_lines = value
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
