import json
import logging
import tempfile
import warnings

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint

from callbacks import EmbeddingProbe
from config import load_config
from data import SyntheticGraphDataModule
from graphmae import build_model
from lit_module import LitGraphMAE
from metrics import masked_reconstruction
from seeding import seed_everything

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
warnings.filterwarnings("ignore", ".*does not have many workers.*")


def load_best(path, cfg):
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    state = {k.removeprefix("model."): v for k, v in ckpt["state_dict"].items()}
    model = build_model(cfg)
    model.load_state_dict(state)
    return model


def main(argv=None):
    cfg = load_config(argv)
    seed_everything(cfg["seed"])
    dm = SyntheticGraphDataModule(cfg["data"])
    lit = LitGraphMAE(cfg)
    probe = EmbeddingProbe(cfg["probe"]["every"])

    with tempfile.TemporaryDirectory() as ckpt_dir:
        best = ModelCheckpoint(dirpath=ckpt_dir, filename="best-{step}", monitor="val/mse",
                               mode="min", save_top_k=1)
        trainer = pl.Trainer(
            max_steps=cfg["trainer"]["max_steps"],
            val_check_interval=cfg["trainer"]["val_every"],
            check_val_every_n_epoch=None,
            accelerator="cpu",
            devices=1,
            precision=cfg["trainer"]["precision"],
            callbacks=[best, probe],
            num_sanity_val_steps=0,
            enable_progress_bar=False,
            enable_model_summary=False,
            logger=False,
            enable_checkpointing=True,
        )
        trainer.fit(lit, datamodule=dm)
        if best.best_model_path:
            best_step = int(best.best_model_path.rsplit("step=", 1)[1].split(".")[0])
            model = load_best(best.best_model_path, cfg)
        else:  # fewer steps than one validation interval
            best_step, model = trainer.global_step, lit.model

    result = masked_reconstruction(model, dm.val_dataloader())
    final_loss = float(sum(lit.loss_history[-10:]) / 10)
    result.update(final_loss=final_loss, best_step=best_step, steps=trainer.global_step,
                  seed=cfg["seed"])
    print(json.dumps({k: round(v, 6) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
