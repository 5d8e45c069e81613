"""LoopBase: the training loop and the hooks the mixins override (cooperatively, through super())."""
import functools
from collections import defaultdict

import torch


def track(key):
    """Records the value a step returns under history[key]."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            loss = fn(self, *args, **kwargs)
            self.history[key].append(loss.item())
            return loss
        return wrapper
    return deco


class Accumulator:
    """Decides when the accumulated micro-batches make an optimizer step."""

    def __init__(self, every):
        self.every = max(1, int(every))
        self.count = 0

    def ready(self):
        self.count += 1
        return self.count % self.every == 0


class LoopBase:
    def __init__(self, cfg, data, **kw):
        super().__init__(**kw)
        self.cfg = cfg
        self.data = data
        self.history = defaultdict(list)
        self.epoch = 0
        self.global_step = 0
        self.model = self.build_model()
        self.configure_model()
        self.optimizer = self.build_optimizer()
        self.scheduler = self.build_scheduler()
        self.accum = Accumulator(cfg.train.accum_steps)

    # ---- hooks (mixins extend them and call super()) ----
    def configure_model(self):
        pass

    def on_fit_start(self):
        pass

    def on_epoch_start(self, epoch):
        pass

    def on_representation(self, h):
        return h

    def before_backward(self, loss):
        pass

    def on_step_end(self):
        pass

    def on_epoch_end(self, epoch):
        pass

    # ---- loop ----
    def optimizer_step(self):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.global_step += 1

    def fit(self):
        torch.manual_seed(self.cfg.train.seed)      # same dropout stream whatever was built before
        self.on_fit_start()
        self.model.train()
        for epoch in range(self.cfg.train.epochs):
            self.epoch = epoch
            self.on_epoch_start(epoch)
            for batch in self.data.train_loader:
                loss = self.training_step(batch)
                self.before_backward(loss)
                (loss / self.accum.every).backward()
                if self.accum.ready():
                    self.optimizer_step()
                    self.on_step_end()
            self.on_epoch_end(epoch)
        return self
