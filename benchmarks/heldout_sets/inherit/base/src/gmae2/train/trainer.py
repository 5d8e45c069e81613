import torch
import torch.nn.functional as F

from .base import BaseTrainer
from .mixins import CheckpointMixin, LoggingMixin


@torch.no_grad()
def reconstruction_metrics(model, loader, seed: int = 1234) -> dict:
    """Masked-feature reconstruction quality with a fixed masking seed."""
    was_training = model.training
    model.eval()
    cos_sum, se_sum, count = 0.0, 0.0, 0
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for g, _ in loader:
            x = g.ndata["feat"]
            recon, mask_nodes = model(g, x)
            pred, target = recon[mask_nodes], x[mask_nodes]
            cos_sum += F.cosine_similarity(pred, target, dim=-1).sum().item()
            se_sum += (pred - target).pow(2).mean(dim=-1).sum().item()
            count += mask_nodes.numel()
    model.train(was_training)
    return {"recon_cos": cos_sum / count, "recon_mse": se_sum / count}


class GraphMAETrainer(CheckpointMixin, LoggingMixin, BaseTrainer):
    def __init__(self, model, cfg, train_loader, val_loader=None):
        super().__init__(model, cfg, train_loader, val_loader)
        self.init_logging(cfg.train.log_every)
        self.criterion = model.criterion

    def on_train_epoch_start(self, epoch: int) -> None:
        super().on_train_epoch_start(epoch)
        self.step_losses.clear()

    def training_step(self, batch) -> torch.Tensor:
        g, _ = batch
        x = g.ndata["feat"]
        recon, mask_nodes = self.model(g, x)
        loss = self.compute_loss(recon, x, mask_nodes)
        self.log_step(loss)
        return loss

    def compute_loss(self, recon, x, mask_nodes) -> torch.Tensor:
        return self.criterion(recon[mask_nodes], x[mask_nodes])

    def on_train_epoch_end(self, epoch: int, mean_loss: float) -> None:
        self.log_metrics({"epoch": epoch, "loss": mean_loss,
                          "lr": self.optimizer.param_groups[0]["lr"]})

    def on_validation(self, epoch: int) -> dict:
        self.model.eval()
        metrics = reconstruction_metrics(self.model, self.val_loader)
        self.log_metrics({"epoch": epoch, **metrics})
        self.save_checkpoint("last.pt", epoch=epoch)
        return metrics
