"""gm-audit: a static-plus-dynamic auditor for PyTorch + DGL GraphMAE training pipelines."""

import sys

__version__ = "0.1.0"

# pyproject's requires-python: the interpreter the pinned stack is tested on (the Makefile's
# PYTHON). Older ones lack what the static pass uses (tomllib, sys.stdlib_module_names): say so
# in one line rather than fail on the first check with an AttributeError.
MIN_PYTHON = (3, 11)
if sys.version_info < MIN_PYTHON:
    print(f"gm-audit: error: needs Python {'.'.join(map(str, MIN_PYTHON))} or newer, not "
          f"{sys.version.split()[0]} ({sys.executable})", file=sys.stderr)
    raise SystemExit(2)
