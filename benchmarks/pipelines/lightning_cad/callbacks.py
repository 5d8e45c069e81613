"""Training callbacks: periodic reconstruction check on the validation graphs."""
import pytorch_lightning as pl

from module import evaluate_reconstruction


class ReconstructionMonitor(pl.Callback):
    """Every `every_n_steps` optimizer steps, reconstruct the validation graphs
    with a fixed mask and print/log the geometric errors."""

    def __init__(self, every_n_steps=50, mask_seed=1234):
        self.every_n_steps = every_n_steps
        self.mask_seed = mask_seed
        self.history = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        step = trainer.global_step  # already incremented for this batch
        if step % self.every_n_steps != 0:
            return
        dm = trainer.datamodule
        m = evaluate_reconstruction(pl_module.model, dm.val_set, dm.coord_mean, dm.coord_std,
                                    mask_seed=self.mask_seed)
        self.history.append((step, m))
        pl_module.log_dict({f"val_{k}": v for k, v in m.items()})
        print(f"[recon @ {step}] coord_err {m['recon_coord_err']:.4f} "
              f"tangent_cos {m['recon_tangent_cos']:.3f} normal_cos {m['recon_normal_cos']:.3f}")
