"""``check --watch``: check, then check again whenever a checked file or the config changes, until
Ctrl-C. Changes are seen by polling the files' modification times and sizes (no extra dependency,
works on network mounts); a burst of writes, as an editor's save or a ``git checkout`` makes, gives
one re-check once the tree has been still for a moment."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

from auditor.config import ConfigError, load_config
from auditor.discovery import discover
from auditor.emit import EXIT_CLEAN, UsageError

POLL_SECONDS = 0.5
QUIET_SECONDS = 0.3  # how long the tree must stay unchanged before the re-check

Snapshot = dict[str, tuple[int, int]]


def snapshot(paths: list[str], config_file: str | None) -> Snapshot:
    """Modification time and size of every file a check of ``paths`` reads, and of the config."""
    config = load_config(config_file, Path(paths[0]) if paths else Path("."))
    files = [*discover(paths, config.root, config.exclude).files]
    if config.path is not None:
        files.append(config.path)
    out: Snapshot = {}
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        out[str(p)] = (st.st_mtime_ns, st.st_size)
    return out


def _status(message: str) -> None:
    print(f"gm-audit: {message}", file=sys.stderr, flush=True)


def watch(args: argparse.Namespace, check: Callable[[argparse.Namespace], int]) -> int:
    """Run ``check(args)`` now and after every change; a run's usage or config error is printed
    and the watch goes on (the user is editing the config). Ctrl-C ends it with exit code 0."""
    if args.fix or args.diff or args.add_noqa or args.paths == ["-"] or args.output:
        raise UsageError("--watch reports to the terminal; it does not go with --fix, --diff, "
                         "--add-noqa, --output or `-`")

    def run() -> Snapshot:
        before = taken()  # taken first: a change made while the check runs starts another
        try:
            check(args)
        except (UsageError, ConfigError) as exc:
            print(f"gm-audit: error: {exc}", file=sys.stderr)
        sys.stdout.flush()
        _status("watching for file changes (Ctrl-C to stop)")
        return before

    def taken() -> Snapshot:
        try:
            return snapshot(args.paths, args.config)
        except (ConfigError, OSError):  # PathMissing too
            return {}  # a tree that cannot be read: the check says why once it is run

    try:
        seen = run()
        while True:
            time.sleep(POLL_SECONDS)
            now = taken()
            if now == seen:
                continue
            while True:  # wait until the writes are over
                time.sleep(QUIET_SECONDS)
                later = taken()
                if later == now:
                    break
                now = later
            _status("files changed, checking again")
            seen = run()
    except KeyboardInterrupt:
        return EXIT_CLEAN
