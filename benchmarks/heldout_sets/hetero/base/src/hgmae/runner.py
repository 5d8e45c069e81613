"""A small Accelerate-like runner: device placement, DDP wrapping, gradient accumulation,
autocast, backward, clipping, process-group bookkeeping."""
import contextlib
import copy

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Runner:
    def __init__(self, mixed_precision="no", grad_accum_steps=1, max_grad_norm=None, world_size=1,
                 backend="gloo", rank=0, init_file=None):
        self.config = copy.deepcopy({"mixed_precision": mixed_precision, "grad_accum_steps": grad_accum_steps,
                                     "max_grad_norm": max_grad_norm, "world_size": world_size})
        self.mixed_precision = mixed_precision
        self.grad_accum_steps = grad_accum_steps
        self.max_grad_norm = max_grad_norm
        self.world_size = world_size
        self.rank = rank
        self.distributed = world_size > 1
        if self.distributed and not dist.is_initialized():
            dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank,
                                    world_size=world_size)
        self.device = torch.device("cpu")
        self.micro_step = 0
        self.sync_gradients = True
        self.loss_log = []

    @property
    def is_main_process(self):
        return self.rank == 0

    def prepare(self, model, optimizer):
        model = model.to(self.device)
        if self.distributed:
            model = DistributedDataParallel(model)
        return model, optimizer

    def unwrap_model(self, model):
        return model.module if isinstance(model, DistributedDataParallel) else model

    @contextlib.contextmanager
    def accumulate(self, model):
        """One micro-step; gradients are synchronised (and the optimizer may step) on the last one."""
        self.micro_step += 1
        self.sync_gradients = self.micro_step % self.grad_accum_steps == 0
        if self.distributed and not self.sync_gradients:
            with model.no_sync():
                yield
        else:
            yield

    def autocast(self):
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.mixed_precision == "bf16")

    def backward(self, loss):
        self.loss_log.append(loss.detach())
        (loss / self.grad_accum_steps).backward()

    def clip_grad_norm_(self, parameters, max_norm=None):
        max_norm = max_norm or self.max_grad_norm
        if max_norm is None:
            return None
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def wait_for_everyone(self):
        if self.distributed:
            dist.barrier()

    def close(self):
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()
