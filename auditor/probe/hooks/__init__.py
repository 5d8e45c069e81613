"""The recorder's wrappers, one module per subsystem, each with ``install(rec, library)``.

They are loaded by file path into the probed program (``_hook`` in ``auditor/probe/recorder.py``)
right after the program imported the library they patch: they import nothing of gm-audit and
reach the recorder's state only through ``rec``. Every hook body runs under ``rec.guarded``: an
error in it is swallowed, never raised into the user's program. A wrapper that sees a state
change records its cause site there (``rec.cause``, ``rec.stack``).
"""
