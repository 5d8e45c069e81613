import os

import torch

from .model import Encoder


def save_encoder(state, ckpt_dir):
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, "encoder.pt")
    torch.save({"encoder": state.encoder.state_dict(), "step": state.step}, path)
    return path


def load_encoder(path, cfg, in_dim):
    m = cfg.model
    encoder = Encoder(in_dim, m.hidden, m.num_layers, m.feat_drop)
    ckpt = torch.load(path, weights_only=True)
    encoder.load_state_dict(ckpt["encoder"])
    return encoder
