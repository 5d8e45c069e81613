from .graphmae import GraphMAE, build_model

__all__ = ["GraphMAE", "build_model"]
