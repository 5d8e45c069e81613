"""Training state: the student GraphMAE, its EMA teacher encoder and the optimisation objects."""
import copy

import torch


class TrainState:
    def __init__(self, model, momentum):
        self._model = model
        self._teacher = copy.deepcopy(model.encoder).eval()
        self._teacher.requires_grad_(False)
        self.momentum = momentum
        self.optimizer = None
        self.scheduler = None
        self.scaler = None
        self.step = 0

    @property
    def model(self):
        return self._model

    @property
    def encoder(self):
        return self._model.encoder

    @property
    def teacher(self):
        return self._teacher

    @torch.no_grad()
    def update_teacher(self):
        m = self.momentum
        for t, s in zip(self._teacher.parameters(), self.encoder.parameters()):
            t.mul_(m).add_(s.detach(), alpha=1.0 - m)
        for tb, sb in zip(self._teacher.buffers(), self.encoder.buffers()):
            tb.copy_(sb)
