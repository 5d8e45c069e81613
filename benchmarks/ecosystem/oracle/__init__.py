"""The oracle: whether a mutant is a bug is decided by running it, not by gm-audit.

``recorder.py`` is installed in the launched Python process at start-up and records, per
optimizer step, what each bug class changes (gradients per parameter, training flags, grad mode,
dtypes, self loops, BatchNorm statistics, the loss, graphs kept alive, the optimizer's
parameters, loads, determinism flags, which mutated lines ran); ``launch.py`` runs a command
under it; ``judge.py`` compares a mutant's run with two clean runs, one comparator per class;
``targets.py`` lists the pipelines that can be run. Nothing here imports gm-audit.
"""
