"""gm-audit: a static-plus-dynamic auditor for PyTorch + DGL GraphMAE training pipelines."""

__version__ = "0.1.0"
