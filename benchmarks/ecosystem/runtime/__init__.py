"""Real corpus pipelines run offline, unchanged, for the runtime score (issue 11, point 5).

One wrapper script per pipeline (``graphmae2.py``, ``lifesci_ogbg.py``) patches the dataset
classes the script loads with a small synthetic stand-in, stubs optional imports the venv lacks,
and runs the script with ``runpy`` from its own folder; ``pipelines.py`` says how to run each.
"""
