"""Trainer behaviour split over mixins. Each mixin sets its own state, then hands the remaining keyword
arguments on with super().__init__(**kw); each hook does its part and calls super()."""
import contextlib
import os
import tempfile

import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


class CheckpointMixin:
    def __init__(self, ckpt_dir=None, **kw):
        self.ckpt_dir = ckpt_dir or tempfile.mkdtemp(prefix="gmx_")
        super().__init__(**kw)

    def configure_model(self):
        # every config / seed starts from the same initial weights (or a warm start)
        with torch.random.fork_rng():
            torch.manual_seed(self.cfg.train.init_seed)
            self.model = self.build_model()
        if self.cfg.train.init_from:
            state = torch.load(self.cfg.train.init_from, map_location="cpu", weights_only=True)
            self.model.load_state_dict(state["model"])
        super().configure_model()

    def save_checkpoint(self, name="last.pt"):
        path = os.path.join(self.ckpt_dir, name)
        torch.save({"model": self.model.state_dict(), "ema": self.ema.state_dict(),
                    "optimizer": self.optimizer.state_dict(), "step": self.global_step}, path)
        return path

    def load_for_eval(self, path):
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = self.build_model()
        sd = {k.removeprefix("module."): v for k, v in state["ema"].items() if k != "n_averaged"}
        model.load_state_dict(sd)
        return model.eval()


class EvalMixin:
    def __init__(self, **kw):
        self.val_curve = []
        self.rep_norms = []
        super().__init__(**kw)

    @torch.no_grad()
    def reconstruction_cos(self, model, split):
        g, x, mask = self.data.heldout[split]
        was_training = model.training
        model.eval()
        recon = model(g, x, mask)
        cos = F.cosine_similarity(recon[mask], x[mask], dim=-1).mean().item()
        model.train(was_training)
        return cos

    def on_representation(self, h):
        self.rep_norms.append(h.detach().norm(dim=-1).mean().item())
        return super().on_representation(h)

    def on_epoch_end(self, epoch):
        if (epoch + 1) % self.cfg.train.eval_every == 0:
            self.val_curve.append(round(self.reconstruction_cos(self.model, "val"), 4))
        super().on_epoch_end(epoch)


class AmpMixin:
    def autocast(self):
        if self.cfg.train.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()


class EmaMixin:
    def configure_model(self):
        self.ema = AveragedModel(self.model, multi_avg_fn=get_ema_multi_avg_fn(self.cfg.train.ema_decay),
                                 use_buffers=True)
        super().configure_model()

    def on_step_end(self):
        self.ema.update_parameters(self.model)
        super().on_step_end()
