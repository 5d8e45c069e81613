"""Run a case's src/train.py in-process under generic instrumentation and dump metrics + observations.

usage: python tools/observe.py CASE_DIR OUT.json [train.py ARGS...]
Hooks only generic places: global module forward hooks (mode, grad mode, autocast, dtypes, self loops seen
by GraphConv, per-batch feature statistics), a global optimizer step pre-hook (grad None, zero_grad calls
per step, model parameters missing from the optimizer, cudnn flags), clip_grad_norm_, torch.load,
nn.Module.load_state_dict, the loss function the trainer calls, LoopBase.fit (parameter snapshots, phase),
and a gc scan for live autograd graphs after training."""
import gc
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("DGLBACKEND", "pytorch")
case_dir, out_path, args = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
os.chdir(case_dir)
sys.path.insert(0, os.path.join(case_dir, "src"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import dgl.nn as dglnn  # noqa: E402
import gmx.loop as loop  # noqa: E402
import gmx.trainer as trainer_mod  # noqa: E402
import gmx.mixins as mixins  # noqa: E402

OBS = {"phase": "setup"}
R = {"fwd_training": set(), "fwd_grad": set(), "fwd_autocast": set(), "fwd_dtypes": set(),
     "selfloops": {}, "zero_grad_calls": 0, "zg_per_step": set(), "grads_none": [], "grad_norms": [],
     "missing_in_opt": None, "cudnn": None, "torch_load": [], "load_state_dict": [], "loss_calls": 0,
     "batch_feat_mean_abs": [], "bn_train_fwd_outside_fit": 0, "eval_mode_train_fwds": 0, "train_fwds": 0}
STATE = {"trainer": None}


def fwd_hook(mod, inp, out):
    ph = OBS["phase"]
    if isinstance(mod, dglnn.GraphConv):
        g = inp[0]
        key = f"{ph}"
        if key not in R["selfloops"]:
            s, d = g.edges()
            R["selfloops"][key] = round((s == d).sum().item() / g.num_nodes(), 4)
    if ph == "fit" and mod.__class__.__name__ == "Encoder":
        R["train_fwds"] += 1
        R["fwd_training"].add(mod.training)
        if not all(m.training for m in mod.modules()):
            R["eval_mode_train_fwds"] += 1
        R["fwd_grad"].add(torch.is_grad_enabled())
        R["fwd_autocast"].add(torch.is_autocast_cpu_enabled())
        R["fwd_dtypes"].add(str(out.dtype))
        x = inp[1]
        R["batch_feat_mean_abs"].append(x.mean(0).abs().mean().item())
    if ph != "fit" and isinstance(mod, nn.BatchNorm1d) and mod.training:
        R["bn_train_fwd_outside_fit"] += 1


nn.modules.module.register_module_forward_hook(fwd_hook)

_zg = torch.optim.Optimizer.zero_grad


def zero_grad(self, *a, **k):
    R["zero_grad_calls"] += 1
    return _zg(self, *a, **k)


torch.optim.Optimizer.zero_grad = zero_grad


def step_pre(opt, a, k):
    if OBS["phase"] != "fit":
        return
    params = [p for gr in opt.param_groups for p in gr["params"]]
    R["grads_none"].append(sum(p.grad is None for p in params))
    R["zg_per_step"].add(R["zero_grad_calls"])
    R["zero_grad_calls"] = 0
    t = STATE["trainer"]
    if t is not None and R["missing_in_opt"] is None:
        ids = {id(p) for p in params}
        R["missing_in_opt"] = sorted(n for n, p in t.model.named_parameters() if id(p) not in ids)
        R["model_params_in_optimizer"] = sum(id(p) in ids for p in t.model.parameters())
    if R["cudnn"] is None:
        R["cudnn"] = {"benchmark": torch.backends.cudnn.benchmark,
                      "deterministic": torch.backends.cudnn.deterministic}


from torch.optim.optimizer import register_optimizer_step_pre_hook  # noqa: E402
register_optimizer_step_pre_hook(step_pre)

_clip = torch.nn.utils.clip_grad_norm_


def clip(params, *a, **k):
    params = list(params)
    n = _clip(params, *a, **k)
    R["grad_norms"].append(float(n))
    return n


torch.nn.utils.clip_grad_norm_ = clip

_load = torch.load


def tload(*a, **k):
    R["torch_load"].append({"weights_only": k.get("weights_only")})
    return _load(*a, **k)


torch.load = tload
_lsd = nn.Module.load_state_dict


def lsd(self, sd, strict=True, *a, **k):
    before = {n: t.clone() for n, t in self.state_dict().items()}
    res = _lsd(self, sd, strict, *a, **k)
    after = self.state_dict()
    R["load_state_dict"].append({"module": type(self).__name__, "strict": strict, "phase": OBS["phase"],
                                 "missing": len(res.missing_keys), "unexpected": len(res.unexpected_keys),
                                 "tensors_changed": sum(not torch.equal(before[n], after[n]) for n in before)})
    return res


nn.Module.load_state_dict = lsd

_sce = trainer_mod.sce_loss


def sce(x, y, *a, **k):
    out = _sce(x, y, *a, **k)
    if OBS["phase"] == "fit":
        R["loss_calls"] += 1
        if R["loss_calls"] == 1:
            OBS["first_loss"] = round(out.item(), 6)
            OBS["loss_rows"] = x.shape[0]
            OBS["loss_dtype"] = str(out.dtype)
            OBS["loss_reduction_args"] = [str(v) for v in a] + [f"{kk}={v}" for kk, v in k.items()]
    return out


trainer_mod.sce_loss = sce

_bd = trainer_mod.build_dataset


def bd(cfg):
    graphs, labels, splits = _bd(cfg)
    OBS["train_split_hash"] = hashlib.md5(bytes(str(sorted(splits["train"].tolist())), "ascii")).hexdigest()[:10]
    return graphs, labels, splits


trainer_mod.build_dataset = bd

_init = loop.LoopBase.__init__


def init(self, *a, **k):
    STATE["trainer"] = self
    _init(self, *a, **k)


loop.LoopBase.__init__ = init
_fit = loop.LoopBase.fit


def fit(self):
    STATE["trainer"] = self
    snap = {n: p.detach().clone() for n, p in self.model.named_parameters()}
    OBS["phase"] = "fit"
    res = _fit(self)
    OBS["phase"] = "after_fit"
    OBS["params_unchanged_by_training"] = sorted(n for n, p in self.model.named_parameters()
                                                 if torch.equal(p.detach(), snap[n]))
    OBS["frozen_params"] = sorted(n for n, p in self.model.named_parameters() if not p.requires_grad)
    gc.collect()
    OBS["live_autograd_tensors_after_fit"] = sum(1 for o in gc.get_objects()
                                                 if isinstance(o, torch.Tensor) and o.grad_fn is not None)
    bn = [(n, m) for n, m in self.ema.module.named_modules() if isinstance(m, nn.BatchNorm1d)]
    OBS["ema_bn_running_var_mean"] = {n: round(m.running_var.mean().item(), 4) for n, m in bn}
    bn = [(n, m) for n, m in self.model.named_modules() if isinstance(m, nn.BatchNorm1d)]
    OBS["model_bn_running_var_mean"] = {n: round(m.running_var.mean().item(), 4) for n, m in bn}
    OBS["model_training_after_fit"] = self.model.training
    return res


loop.LoopBase.fit = fit
_rc = mixins.EvalMixin.reconstruction_cos


def rc(self, model, split):
    prev = OBS["phase"]
    OBS["phase"] = "eval"
    try:
        return _rc(self, model, split)
    finally:
        OBS["phase"] = prev


mixins.EvalMixin.reconstruction_cos = rc

t0 = time.time()
import train  # noqa: E402
metrics = train.main(args)
OBS["phase"] = "done"
gn = R["grad_norms"]
obs = {
    "train_fwds": R["train_fwds"],
    "train_fwd_module_training": sorted(R["fwd_training"]),
    "train_fwds_with_eval_modules": R["eval_mode_train_fwds"],
    "train_fwd_grad_enabled": sorted(R["fwd_grad"]),
    "train_fwd_autocast": sorted(R["fwd_autocast"]),
    "train_fwd_dtypes": sorted(R["fwd_dtypes"]),
    "self_loops_per_node": R["selfloops"],
    "zero_grad_calls_per_step": sorted(R["zg_per_step"]),
    "steps_with_all_grads_none": sum(1 for g in R["grads_none"] if g > 0 and g == max(R["grads_none"])) if R["grads_none"] and max(R["grads_none"]) > 0 else 0,
    "max_params_grad_none_at_step": max(R["grads_none"]) if R["grads_none"] else None,
    "model_params_missing_from_optimizer": R["missing_in_opt"],
    "model_params_in_optimizer": R.get("model_params_in_optimizer"),
    "median_grad_norm_before_clip": round(sorted(gn)[len(gn) // 2], 4) if gn else None,
    "cudnn_flags_at_first_step": R["cudnn"],
    "torch_load": R["torch_load"],
    "load_state_dict": R["load_state_dict"],
    "batch_feat_mean_abs_mean": round(sum(R["batch_feat_mean_abs"]) / max(1, len(R["batch_feat_mean_abs"])), 4),
    "bn_train_mode_forwards_outside_fit": R["bn_train_fwd_outside_fit"],
    "wall_s": round(time.time() - t0, 2),
}
obs.update({k: v for k, v in OBS.items() if k != "phase"})
with open(out_path, "w") as fh:
    json.dump({"metrics": metrics, "observations": obs}, fh, indent=1)
