"""Run a case's src/train.py in-process with runtime observers.

    python tools/probe.py CASE_ROOT OUT.json [-- extra train.py args]

Observers (installed before train.py runs, nothing in the case is modified):
  * LitGraphMAE.backward: gradients already present before backward (zero_grad skipped)
  * LitGraphMAE.training_step: module/encoder mode, batch feature
    statistics, self loops per node, returned loss (value, dtype, graph), masked-node count
  * dgl GATConv.forward: grad mode / training flag inside and outside training_step
  * BatchNorm1d.forward: train-mode calls outside training_step (running stats written)
  * global optimizer step pre/post hooks: grads None, grad norm, params unchanged by
    the step, optimizer params vs. the parameters of the module actually trained
  * torch.load (weights_only), nn.Module.load_state_dict (strict, missing, unexpected)
  * at exit: live tensors still holding an autograd graph, peak RSS
"""
import gc
import json
import math
import os
import resource
import runpy
import sys
import traceback

case_root = os.path.abspath(sys.argv[1])
out_path = os.path.abspath(sys.argv[2])
extra = sys.argv[4:] if len(sys.argv) > 3 and sys.argv[3] == "--" else []

os.chdir(case_root)
sys.path.insert(0, os.path.join(case_root, "src"))

import torch  # noqa: E402
import dgl  # noqa: E402
from dgl.nn.pytorch.conv.gatconv import GATConv  # noqa: E402

import lit_module  # noqa: E402  (the case's own module; train.py reuses it from sys.modules)

SRC = os.path.join(case_root, "src")
P = {
    "train_steps": 0,
    "train_step_module_eval": 0,
    "train_step_encoder_bn_eval": 0,
    "backward_with_stale_grads": 0,
    "gat_train_calls": 0,
    "gat_train_calls_grad_off": 0,
    "gat_train_calls_eval_mode": 0,
    "gat_other_calls_train_mode": 0,
    "bn_train_mode_calls_outside_step": 0,
    "bn_running_mean_shift_outside_step": 0.0,
    "self_loops_per_node": [],
    "batch_feat_mean_absmax": [],
    "loss_values": [],
    "masked_nodes": [],
    "loss_dtype": None,
    "loss_requires_grad": None,
    "opt_steps": 0,
    "opt_params": None,
    "opt_params_grad_none_max": 0,
    "opt_params_in_trained_module": None,
    "model_params_grad_none_max": 0,
    "model_params_grad_none_names": [],
    "model_params_frozen": None,
    "param_dtypes": None,
    "grad_norms": [],
    "frac_grad_elems_not_updated": [],
    "torch_load": [],
    "load_state_dict": [],
    "errors": [],
}
STATE = {"in_step": False, "module": None, "snap": None}


def _from_case():
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.startswith(SRC):
            return os.path.relpath(frame.filename, case_root) + ":" + str(frame.lineno)
    return None


# --- training_step -------------------------------------------------------------------
_orig_ts = lit_module.LitGraphMAE.training_step


def training_step(self, batch, batch_idx):
    STATE["module"] = self
    g, x = batch
    P["train_steps"] += 1
    if not self.model.training:
        P["train_step_module_eval"] += 1
    if not self.model.encoder.norms[0].training:
        P["train_step_encoder_bn_eval"] += 1
    P["batch_feat_mean_absmax"].append(float(x.float().mean(0).abs().max()))
    if P["model_params_frozen"] is None:
        P["model_params_frozen"] = sum(1 for p in self.model.parameters() if not p.requires_grad)
    STATE["in_step"] = True
    try:
        loss = _orig_ts(self, batch, batch_idx)
    finally:
        STATE["in_step"] = False
    P["loss_values"].append(float(loss.detach().float()))
    P["masked_nodes"].append(int(self.model.mask_rate * x.shape[0]))
    P["loss_dtype"] = str(loss.dtype)
    P["loss_requires_grad"] = bool(loss.requires_grad)
    return loss


lit_module.LitGraphMAE.training_step = training_step

_orig_bw = lit_module.LitGraphMAE.backward


def backward(self, loss, *a, **k):
    # gradients left over from an earlier step when this step's backward starts
    if any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in self.model.parameters()):
        P["backward_with_stale_grads"] += 1
    return _orig_bw(self, loss, *a, **k)


lit_module.LitGraphMAE.backward = backward

# --- GATConv / BatchNorm ---------------------------------------------------------------
_orig_gat = GATConv.forward


def gat_forward(self, graph, feat, *a, **k):
    if STATE["in_step"]:
        P["gat_train_calls"] += 1
        if not torch.is_grad_enabled():
            P["gat_train_calls_grad_off"] += 1
        if not self.training:
            P["gat_train_calls_eval_mode"] += 1
        if P["gat_train_calls"] <= 5 or P["gat_train_calls"] % 100 == 0:
            src, dst = graph.edges()
            r = round(float((src == dst).sum()) / graph.num_nodes(), 3)
            if r not in P["self_loops_per_node"]:
                P["self_loops_per_node"].append(r)
    elif self.training:
        P["gat_other_calls_train_mode"] += 1
    return _orig_gat(self, graph, feat, *a, **k)


GATConv.forward = gat_forward

_orig_bn = torch.nn.BatchNorm1d.forward


def bn_forward(self, x):
    if self.training and not STATE["in_step"]:
        before = self.running_mean.detach().clone()
        out = _orig_bn(self, x)
        P["bn_train_mode_calls_outside_step"] += 1
        P["bn_running_mean_shift_outside_step"] += float((self.running_mean - before).abs().mean())
        return out
    return _orig_bn(self, x)


torch.nn.BatchNorm1d.forward = bn_forward

# --- optimizer -----------------------------------------------------------------------


def _params(opt):
    return [p for grp in opt.param_groups for p in grp["params"]]


def pre_hook(opt, args, kwargs):
    STATE["snap"] = [p.detach().clone() for p in _params(opt)]


def post_hook(opt, args, kwargs):
    params = _params(opt)
    P["opt_steps"] += 1
    P["opt_params"] = len(params)
    P["opt_params_grad_none_max"] = max(P["opt_params_grad_none_max"],
                                        sum(1 for p in params if p.grad is None))
    P["param_dtypes"] = sorted({str(p.dtype) for p in params})
    sq = sum(float(p.grad.float().pow(2).sum()) for p in params if p.grad is not None)
    P["grad_norms"].append(math.sqrt(sq))
    nz = same = 0
    for p, old in zip(params, STATE["snap"] or []):
        if p.grad is None:
            continue
        m = p.grad != 0
        nz += int(m.sum())
        same += int(((p.detach() == old) & m).sum())
    P["frac_grad_elems_not_updated"].append(same / nz if nz else None)
    mod = STATE["module"]
    if mod is not None:
        ids = {id(p) for p in mod.model.parameters()}
        P["opt_params_in_trained_module"] = sum(1 for p in params if id(p) in ids)
        none = [n for n, p in mod.model.named_parameters() if p.grad is None]
        if len(none) > P["model_params_grad_none_max"]:
            P["model_params_grad_none_max"] = len(none)
            P["model_params_grad_none_names"] = none[:8]


import torch.optim.optimizer as _optmod  # noqa: E402
_optmod.register_optimizer_step_pre_hook(pre_hook)
_optmod.register_optimizer_step_post_hook(post_hook)

# --- loading -------------------------------------------------------------------------
_orig_load = torch.load


def load(*a, **k):
    where = _from_case()
    if where:
        P["torch_load"].append({"at": where, "weights_only": k.get("weights_only", "unset")})
    return _orig_load(*a, **k)


torch.load = load

_orig_lsd = torch.nn.Module.load_state_dict


def load_state_dict(self, state_dict, strict=True, *a, **k):
    where = _from_case()
    res = _orig_lsd(self, state_dict, strict, *a, **k)
    if where:
        P["load_state_dict"].append({"at": where, "strict": strict, "missing": len(res.missing_keys),
                                     "unexpected": len(res.unexpected_keys)})
    return res


torch.nn.Module.load_state_dict = load_state_dict

# --- run -----------------------------------------------------------------------------
import io  # noqa: E402
import contextlib  # noqa: E402

buf = io.StringIO()
sys.argv = ["src/train.py", "--seed", "0"] + extra
metrics = None
try:
    with contextlib.redirect_stdout(buf):
        runpy.run_path(os.path.join(case_root, "src", "train.py"), run_name="__main__")
    for line in buf.getvalue().splitlines()[::-1]:
        if line.startswith("{"):
            metrics = json.loads(line)
            break
except Exception as exc:  # noqa: BLE001
    P["errors"].append(repr(exc)[:500])
    traceback.print_exc()

gc.collect()
P["live_tensors_with_graph"] = sum(
    1 for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.grad_fn is not None)
P["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _corr(a, b):
    n = len(a)
    if n < 3:
        return None
    ma, mb = sum(a) / n, sum(b) / n
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / math.sqrt(va * vb)


lv, mn = P.pop("loss_values"), P.pop("masked_nodes")
tail = slice(len(lv) // 2, None)  # second half: past the warm-up transient
P["loss_mean_2nd_half"] = sum(lv[tail]) / max(1, len(lv[tail])) if lv else None
P["loss_vs_masked_nodes_corr_2nd_half"] = _corr(lv[tail], mn[tail])
gn = P.pop("grad_norms")
P["grad_norm_mean_first10"] = sum(gn[:10]) / max(1, len(gn[:10])) if gn else None
P["grad_norm_mean_last10"] = sum(gn[-10:]) / max(1, len(gn[-10:])) if gn else None
fr = [f for f in P.pop("frac_grad_elems_not_updated") if f is not None]
P["frac_grad_elems_not_updated_mean"] = sum(fr) / len(fr) if fr else None
bm = P.pop("batch_feat_mean_absmax")
P["batch_feat_mean_absmax_mean"] = sum(bm) / len(bm) if bm else None

with open(out_path, "w") as fh:
    json.dump({"metrics": metrics, "probe": P}, fh, indent=1)
print(json.dumps(metrics))
