"""Stage 2: rebuild the encoder from the checkpoint, compute frozen embeddings
with full-neighbour sampled inference, train a linear classifier on them."""
import torch

from ..data.loader import build_inference_loader, prepare_batch
from ..registry import build
from .evaluation import fit_linear_probe


def load_encoder(cfg, in_dim, ckpt_path):
    m = cfg.model
    encoder = build("encoder", m.encoder, in_dim, m.hidden, m.num_layers, dropout=m.feat_drop)
    state = torch.load(ckpt_path, map_location="cpu", weights_only=True)["model"]
    prefix = "encoder."
    enc_state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    encoder.load_state_dict(enc_state)
    return encoder


def sampled_embeddings(encoder, dataset, num_layers, device="cpu"):
    encoder.eval()
    out = torch.zeros(dataset.graph.num_nodes(), encoder.layers[-1].neigh.out_features)
    loader = build_inference_loader(dataset.graph, torch.arange(dataset.graph.num_nodes()), num_layers)
    with torch.no_grad():
        for _inp, seeds, blocks in loader:
            blocks, x = prepare_batch(blocks, dataset.stats, device)
            out[seeds] = encoder(blocks, x).cpu()
    return out


def run_linear_probe(cfg, dataset, ckpt_path):
    encoder = load_encoder(cfg, dataset.in_dim, ckpt_path)
    emb = sampled_embeddings(encoder, dataset, cfg.model.num_layers)
    acc = fit_linear_probe(emb, dataset.graph.ndata["label"], dataset.train_idx,
                           dataset.test_idx, dataset.num_classes)
    return {"probe_acc": acc}
