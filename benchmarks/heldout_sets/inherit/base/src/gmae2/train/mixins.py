import json
import os
import time

import torch


class LoggingMixin:
    """Keeps a step/epoch history and prints compact log lines."""

    def init_logging(self, log_every: int = 20):
        self.log_every = log_every
        self.step_losses = []
        self.history = []
        self._t0 = time.time()

    def log_step(self, loss: torch.Tensor) -> None:
        self.step_losses.append(loss.item())

    def log_metrics(self, metrics: dict) -> None:
        record = {k: round(float(v), 5) for k, v in metrics.items()}
        record["time"] = round(time.time() - self._t0, 2)
        self.history.append(record)
        if os.environ.get("GMAE_VERBOSE"):
            print(json.dumps(record))


class CheckpointMixin:
    """Save / restore model weights under cfg.train.ckpt_dir."""

    def checkpoint_path(self, name: str) -> str:
        os.makedirs(self.cfg.train.ckpt_dir, exist_ok=True)
        return os.path.join(self.cfg.train.ckpt_dir, name)

    def save_checkpoint(self, name: str, **extra) -> str:
        path = self.checkpoint_path(name)
        state = {"model": self.model.state_dict(), "step": self.global_step}
        state.update(extra)
        torch.save(state, path)
        return path


def load_checkpoint(path: str) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def strip_prefix(state_dict: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
