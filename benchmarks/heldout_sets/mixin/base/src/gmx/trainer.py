"""The Trainer: mixins + LoopBase, with the model, the optimizer and the loss."""
import math
from contextlib import ExitStack
from types import SimpleNamespace

import dgl
import torch

from .data import build_dataset, make_loaders, heldout_masks, node_mask
from .loop import LoopBase, track
from .loss import sce_loss
from .mixins import AmpMixin, CheckpointMixin, EmaMixin, EvalMixin
from .model import GraphMAE
from .probe import linear_probe
from .utils import freeze


class Trainer(CheckpointMixin, EvalMixin, AmpMixin, EmaMixin, LoopBase):
    def __init__(self, cfg, data, **kw):
        self.mask_gen = torch.Generator().manual_seed(cfg.train.seed + 1)
        super().__init__(cfg=cfg, data=data, **kw)

    def build_model(self):
        return GraphMAE(self.cfg.model, self.cfg.data.feat_dim)

    def build_optimizer(self):
        freeze(self.model, self.cfg.train.freeze)
        params = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.cfg.optim.lr, weight_decay=self.cfg.optim.weight_decay)

    def build_scheduler(self):
        per_epoch = math.ceil(len(self.data.train_loader) / self.cfg.train.accum_steps)
        total, warm = self.cfg.train.epochs * per_epoch, self.cfg.optim.warmup_steps

        def factor(step):
            if step < warm:
                return (step + 1) / warm
            return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))
        return torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)

    def encoder_frozen(self):
        return self.epoch < self.cfg.train.freeze_encoder_epochs

    def encode(self, g, x_in):
        with ExitStack() as stack:
            if self.encoder_frozen():
                stack.enter_context(torch.no_grad())
            return self.model.encode(g, x_in)

    @track("loss")
    def training_step(self, batch):
        g, x = batch.graph, batch.feat
        mask = node_mask(g, self.cfg.model.mask_rate, self.mask_gen)
        x_in = x
        if self.cfg.train.feat_noise > 0:
            x_in = x + self.cfg.train.feat_noise * torch.randn_like(x)
        with ExitStack() as stack:
            stack.enter_context(self.autocast())
            h = self.encode(g, self.model.mask_input(x_in, mask))
            h = self.on_representation(h)
            recon = self.model.decode(g, h, mask)
        return sce_loss(recon[mask].float(), x[mask], self.cfg.model.alpha, self.cfg.train.reduction)

    def run(self):
        self.fit()
        path = self.save_checkpoint()
        model = self.load_for_eval(path)
        n_epoch = len(self.data.train_loader)
        return {
            "final_loss": round(float(sum(self.history["loss"][-n_epoch:])) / n_epoch, 6),
            "heldout_cos": round(self.reconstruction_cos(model, "test"), 6),
            "heldout_cos_live": round(self.reconstruction_cos(self.model, "test"), 6),
            "probe_acc": round(linear_probe(model, self.data.sets, self.cfg.data.n_classes, self.cfg.train.seed), 4),
            "val_cos_curve": self.val_curve,
            "steps": self.global_step,
            "trainable_params": sum(p.numel() for p in self.model.parameters() if p.requires_grad),
        }


def prepare_data(cfg):
    graphs, labels, splits = build_dataset(cfg.data)
    train_loader, sets = make_loaders(graphs, labels, splits, cfg.data, cfg.train.seed)
    heldout = {}
    for i, split in enumerate(("val", "test")):
        g = dgl.batch(sets[split].graphs)
        heldout[split] = (g, g.ndata["x"], heldout_masks(g, cfg.model.mask_rate, 1000 + i))
    return SimpleNamespace(train_loader=train_loader, sets=sets, heldout=heldout)
