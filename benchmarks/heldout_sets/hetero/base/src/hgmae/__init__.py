"""HGMAE: masked feature reconstruction on heterogeneous graphs (pretraining + linear probe)."""
__version__ = "0.3.1"
