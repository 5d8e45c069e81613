import abc

import torch

from ..config import Config
from ..optim import build_optimizer, build_scheduler


class BaseTrainer(abc.ABC):
    """Epoch loop as a template method; subclasses fill in the hooks."""

    def __init__(self, model: torch.nn.Module, cfg: Config, train_loader, val_loader=None):
        self.model = model
        self.cfg = cfg
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.global_step = 0
        self.optimizer = self.configure_optimizers()
        self.scheduler = build_scheduler(self.optimizer, cfg.optim, cfg.train.epochs)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return build_optimizer(self.model.parameters(), self.cfg.optim)

    @abc.abstractmethod
    def training_step(self, batch) -> torch.Tensor:
        ...

    @abc.abstractmethod
    def compute_loss(self, *args, **kwargs) -> torch.Tensor:
        ...

    @abc.abstractmethod
    def on_validation(self, epoch: int) -> dict:
        ...

    def on_train_epoch_start(self, epoch: int) -> None:
        self.model.train()

    def on_train_epoch_end(self, epoch: int, mean_loss: float) -> None:
        pass

    def train_epoch(self, epoch: int) -> float:
        self.on_train_epoch_start(epoch)
        total, num_batches = 0.0, 0
        for batch in self.train_loader:
            loss = self.training_step(batch)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item()
            num_batches += 1
            self.global_step += 1
        if self.scheduler is not None:
            self.scheduler.step()
        return total / max(num_batches, 1)

    def fit(self) -> None:
        for epoch in range(self.cfg.train.epochs):
            mean_loss = self.train_epoch(epoch)
            self.on_train_epoch_end(epoch, mean_loss)
            if (epoch + 1) % self.cfg.train.eval_every == 0:
                self.on_validation(epoch)
