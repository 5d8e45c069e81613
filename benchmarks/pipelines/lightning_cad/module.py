"""LightningModule wrapping GraphMAE, plus the reconstruction metrics used for evaluation."""
import dgl
import torch
import torch.nn.functional as F
import pytorch_lightning as pl

from model import GraphMAE, reconstruction_loss, split_features


class GraphMAEModule(pl.LightningModule):
    def __init__(self, model_cfg, loss_cfg, optim_cfg):
        super().__init__()
        self.save_hyperparameters()
        self.model = GraphMAE(**model_cfg)
        self.loss_cfg = loss_cfg
        self.optim_cfg = optim_cfg
        self.last_train_loss = float("nan")

    def _shared_step(self, g):
        x = g.ndata["feat"]
        recon, mask = self.model(g, x)
        return reconstruction_loss(recon[mask], x[mask],
                                   coord_weight=self.loss_cfg["coord_weight"],
                                   dir_weight=self.loss_cfg["dir_weight"],
                                   alpha=self.loss_cfg["sce_alpha"])

    def training_step(self, batch, batch_idx):
        loss, coord, direction = self._shared_step(batch)
        self.log_dict({"train_loss": loss, "train_coord": coord, "train_dir": direction},
                      batch_size=batch.batch_size)
        self.last_train_loss = loss.item()
        print(f"step {self.global_step} loss {loss.item():.4f}")
        return loss

    def validation_step(self, batch, batch_idx):
        loss, coord, direction = self._shared_step(batch)
        self.log_dict({"val_loss": loss, "val_coord": coord, "val_dir": direction},
                      batch_size=batch.batch_size)

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.optim_cfg["lr"],
                                weight_decay=self.optim_cfg["weight_decay"])


@torch.no_grad()
def evaluate_reconstruction(model, graphs, coord_mean, coord_std, mask_seed=1234):
    """Reconstruct a fixed random subset of masked nodes on `graphs`.

    Coordinate errors are mean point-to-point distances in part units;
    `mean_predictor_coord_err` is the error of always predicting the training mean.
    """
    was_training = model.training
    model.eval()
    g = dgl.batch(list(graphs))
    x = g.ndata["feat"]
    mask = model.sample_mask(g.num_nodes(), x.device, torch.Generator().manual_seed(mask_seed))
    recon, _ = model(g, x, mask_nodes=mask)
    p_xyz, p_tan, p_nrm = split_features(recon[mask])
    t_xyz, t_tan, t_nrm = split_features(x[mask])
    true_xyz = t_xyz * coord_std + coord_mean
    metrics = {
        "recon_coord_err": (p_xyz * coord_std + coord_mean - true_xyz).norm(dim=-1).mean().item(),
        "mean_predictor_coord_err": (coord_mean - true_xyz).norm(dim=-1).mean().item(),
        "recon_tangent_cos": F.cosine_similarity(p_tan, t_tan, dim=-1).mean().item(),
        "recon_normal_cos": F.cosine_similarity(p_nrm, t_nrm, dim=-1).mean().item(),
    }
    model.train(was_training)
    return metrics
