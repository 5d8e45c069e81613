from . import encoders, losses  # noqa: F401  (fills the registry)
from .graphmae import GraphMAE, build_model
