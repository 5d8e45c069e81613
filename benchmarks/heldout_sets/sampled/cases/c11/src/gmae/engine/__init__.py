from .trainer import Trainer
from .callbacks import ProgressLogger, LinearProbeMonitor, EarlyStopping, BestCheckpoint
from .optim import build_optimizer, build_scheduler
