"""The recorder's wrappers, one module per subsystem, each with ``install(rec, library)``.

They are loaded by file path into the probed program (see ``auditor/probe/recorder.py``): they
import nothing of gm-audit and reach the recorder's state only through ``rec``.
"""
