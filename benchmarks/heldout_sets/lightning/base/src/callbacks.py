import pytorch_lightning as pl
import torch


class EmbeddingProbe(pl.Callback):
    """Watches for representation collapse: mean per-dimension std of the encoder
    output on the (unmasked) validation graphs, every `every` optimizer steps."""

    def __init__(self, every):
        self.every = every
        self.history = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        step = trainer.global_step
        if step % self.every:
            return
        pl_module.eval()
        spreads = []
        for g, x in trainer.datamodule.val_dataloader():
            z = pl_module.embed(g, x.to(pl_module.dtype))
            spreads.append(z.std(dim=0).mean())
        pl_module.train()
        self.history.append((step, float(torch.stack(spreads).mean())))
