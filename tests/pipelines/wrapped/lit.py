import pytorch_lightning as pl
import torch
from net import Net, batches


class Module(pl.LightningModule):
    """The bare `Net` of minimal.py held as `self.model`, trained by Lightning."""
    def __init__(self):
        super().__init__()
        self.model = Net()

    def training_step(self, x, batch_idx):
        return torch.nn.functional.mse_loss(self.model(x), x)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


if __name__ == "__main__":
    torch.manual_seed(0)
    module = Module()
    loader = torch.utils.data.DataLoader(batches(5), batch_size=None)
    trainer = pl.Trainer(max_steps=5, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", devices=1)
    trainer.fit(module, loader)
