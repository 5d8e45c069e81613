from .trainer import GraphMAETrainer

__all__ = ["GraphMAETrainer"]
