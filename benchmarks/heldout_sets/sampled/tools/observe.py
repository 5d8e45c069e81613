"""Run one copy of the pipeline in-process with runtime probes.

python tools/observe.py SRC_DIR --out result.json [--repeat 2] [--set k=v ...]

Probes: GraphMAE/encoder forward mode and grad mode inside Trainer.training_step,
Adam.step (grad None fraction, are the optimised params those of the forwarded
model, grad norm), dtype of the tensor backpropagated, self loops per dst node in
every training block, torch.load weights_only, load_state_dict missing/unexpected,
live autograd graphs after fit, BatchNorm running stats, cudnn flags.
"""
import argparse
import gc
import importlib
import json
import os
import sys
import tempfile

import torch

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("--out", required=True)
ap.add_argument("--repeat", type=int, default=1)
ap.add_argument("--set", dest="overrides", action="append", default=[])
args = ap.parse_args()

src = os.path.abspath(args.src)
sys.path.insert(0, src)
import dgl  # noqa: E402

CUDNN_BEFORE = set(vars(torch.backends.cudnn).keys())
train_mod = importlib.import_module("train")
from gmae.engine.trainer import Trainer  # noqa: E402
from gmae.models.graphmae import GraphMAE  # noqa: E402
from gmae.models.layers import BlockConv  # noqa: E402

S = {}


def reset():
    S.clear()
    S.update(in_step=False, steps=0, fwd_in_step=0, fwd_eval_in_step=0, fwd_nograd_in_step=0,
             enc_nograd_in_step=0, last_model=None, opt_steps=0, opt_foreign=0,
             none_grad_frac=[], grad_norms=[], loss_dtypes=set(), max_self_loops=0,
             torch_load_weights_only=[], load_missing=[], load_unexpected=[],
             first_forward_state=None, pred_dtypes=set())


_orig_step = Trainer.training_step


def training_step(self, blocks):
    S["in_step"] = True
    try:
        return _orig_step(self, blocks)
    finally:
        S["in_step"] = False
        S["steps"] += 1


Trainer.training_step = training_step

_orig_fwd = GraphMAE.forward


def gm_forward(self, *a, **k):
    if S["in_step"]:
        S["fwd_in_step"] += 1
        S["fwd_eval_in_step"] += int(not self.training)
        S["fwd_nograd_in_step"] += int(not torch.is_grad_enabled())
        S["last_model"] = self
        out = _orig_fwd(self, *a, **k)
        S["pred_dtypes"].add(str(out.dtype))
        return out
    return _orig_fwd(self, *a, **k)


GraphMAE.forward = gm_forward

_orig_encode = GraphMAE.encode


def gm_encode(self, *a, **k):
    out = _orig_encode(self, *a, **k)
    if S["in_step"]:
        S["enc_nograd_in_step"] += int(not out.requires_grad)
    return out


GraphMAE.encode = gm_encode

_orig_conv = BlockConv.forward


def conv_forward(self, block, h):
    if S["in_step"] and block.is_block:
        u, v = block.edges()
        su = block.srcdata[dgl.NID][u]
        dv = block.dstdata[dgl.NID][v]
        sl = v[su == dv]
        if sl.numel():
            S["max_self_loops"] = max(S["max_self_loops"], int(torch.bincount(sl).max()))
    return _orig_conv(self, block, h)


BlockConv.forward = conv_forward

_orig_adam_step = torch.optim.Adam.step


def adam_step(self, *a, **k):
    if S["in_step"]:
        params = [p for g in self.param_groups for p in g["params"]]
        S["opt_steps"] += 1
        none = sum(p.grad is None for p in params)
        S["none_grad_frac"].append(none / max(1, len(params)))
        gn = [p.grad.norm() for p in params if p.grad is not None]
        S["grad_norms"].append(float(torch.stack(gn).norm()) if gn else 0.0)
        model = S["last_model"]
        if model is not None:
            ids = {id(p) for p in model.parameters()}
            if not all(id(p) in ids for p in params):
                S["opt_foreign"] += 1
    return _orig_adam_step(self, *a, **k)


torch.optim.Adam.step = adam_step

_orig_backward = torch.Tensor.backward


def backward(self, *a, **k):
    if S["in_step"]:
        S["loss_dtypes"].add(str(self.dtype))
    return _orig_backward(self, *a, **k)


torch.Tensor.backward = backward

_orig_load = torch.load


def tload(*a, **k):
    S["torch_load_weights_only"].append(k.get("weights_only", None))
    return _orig_load(*a, **k)


torch.load = tload

_orig_lsd = torch.nn.Module.load_state_dict


def lsd(self, state_dict, strict=True, *a, **k):
    res = _orig_lsd(self, state_dict, strict, *a, **k)
    S["load_missing"].append(len(res.missing_keys))
    S["load_unexpected"].append(len(res.unexpected_keys))
    return res


torch.nn.Module.load_state_dict = lsd

_orig_fit = Trainer.fit


def fit(self, *a, **k):
    out = _orig_fit(self, *a, **k)
    gc.collect()
    live, nodes, keep = 0, set(), []  # keep: hold the wrappers so ids are not reused
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj.grad_fn is not None:
                live += 1
                stack = [obj.grad_fn]
                while stack and len(nodes) < 200000:
                    fnode = stack.pop()
                    if fnode is None or id(fnode) in nodes:
                        continue
                    nodes.add(id(fnode))
                    keep.append(fnode)
                    stack.extend(nf for nf, _ in fnode.next_functions)
        except Exception:
            pass
    S["live_graph_tensors_after_fit"] = live
    S["live_graph_nodes_after_fit"] = len(nodes)
    bns = [m for m in self.model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    S["bn_running_mean_absmax"] = max(float(b.running_mean.abs().max()) for b in bns) if bns else None
    S["bn_batches_tracked"] = [int(b.num_batches_tracked) for b in bns]
    trainable = [n for n, p in self.model.named_parameters() if not p.requires_grad]
    S["frozen_params_after_fit"] = len(trainable)
    return out


Trainer.fit = fit


def summary():
    gns = S["grad_norms"]
    return {
        "steps": S["steps"],
        "fwd_eval_in_step": S["fwd_eval_in_step"],
        "fwd_nograd_in_step": S["fwd_nograd_in_step"],
        "enc_out_nograd_in_step": S["enc_nograd_in_step"],
        "opt_steps": S["opt_steps"],
        "opt_params_not_in_forwarded_model_steps": S["opt_foreign"],
        "opt_none_grad_frac_max": max(S["none_grad_frac"], default=None),
        "opt_steps_with_none_grad": sum(f > 0 for f in S["none_grad_frac"]),
        "grad_norm_mean": sum(gns) / len(gns) if gns else None,
        "grad_norm_max": max(gns, default=None),
        "loss_dtypes": sorted(S["loss_dtypes"]),
        "pred_dtypes": sorted(S["pred_dtypes"]),
        "max_self_loops_per_dst": S["max_self_loops"],
        "torch_load_weights_only": S["torch_load_weights_only"],
        "load_missing": S["load_missing"],
        "load_unexpected": S["load_unexpected"],
        "live_graph_tensors_after_fit": S.get("live_graph_tensors_after_fit"),
        "live_graph_nodes_after_fit": S.get("live_graph_nodes_after_fit"),
        "bn_running_mean_absmax": S.get("bn_running_mean_absmax"),
        "bn_batches_tracked": S.get("bn_batches_tracked"),
        "frozen_params_after_fit": S.get("frozen_params_after_fit"),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_extra_attrs": sorted(set(vars(torch.backends.cudnn).keys()) - CUDNN_BEFORE),
    }


results = []
for r in range(args.repeat):
    reset()
    work = tempfile.mkdtemp(prefix="gmae_sampled_")
    metrics = train_mod.main(["--set", f"run.workdir={work}"] + sum((["--set", o] for o in args.overrides), []))
    metrics = dict(metrics)
    metrics["runtime"] = summary()
    results.append(metrics)

out = results[0]
if args.repeat > 1:
    keys = ["recon_mse", "recon_cos", "final_loss", "probe_acc"]
    out["repeat"] = [{k: r_[k] for k in keys} for r_ in results]
    out["repeat_identical"] = all(r_[k] == results[0][k] for r_ in results for k in keys)
with open(args.out, "w") as fh:
    json.dump(out, fh, indent=1)
print(json.dumps({k: v for k, v in out.items() if k != "runtime"}))
