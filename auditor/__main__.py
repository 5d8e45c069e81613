"""``python -m auditor``. Python put the current folder first on ``sys.path``: run inside the
repository being checked, its own modules (a ``random.py``, a ``json.py``) would shadow the
standard library and packages gm-audit imports, and so run the repository's code. That entry
is taken off before anything else is imported (the ``gm-audit`` script never has it)."""

import os
import sys

if not sys.flags.safe_path and sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
    del sys.path[0]

from auditor.cli import run  # noqa: E402

run()
