"""Run a case's src/train.py in-process (same argv as its `run` command) with instrumentation.

usage: python tools/observe.py CASE_DIR OUT.json [train.py args ...]

Trainer.train_epoch / validate / fit / finish and the linear probe are wrapped only to know the phase
(training epoch, validation, checkpoint round trip, probe); what is measured goes through generic hooks:
global module forward hooks (module mode, grad mode, autocast, output dtypes, self loops per node seen by the
GraphConv of a same-type relation, BatchNorm train-mode forwards outside training, probe minibatch
statistics), a global optimizer step pre-hook (parameters with grad None, gradient norm, zero_grad calls per
step, model parameters missing from the optimizer, cudnn flags), the loss call (first loss, dtype, per-type
terms, targets compared with the clean dataset features), DistributedDataParallel construction and forward,
parameters unchanged through training, frozen parameters, BatchNorm running statistics, live autograd graphs
reachable from tensors left after training, load_state_dict (strict, missing, unexpected, tensors changed),
torch.load arguments, the training split hash.  Under DDP (fork) each rank dumps its observations and the
parent merges them (rank 0's as the main ones, plus per-rank parameter checksums).  Nothing here draws random
numbers, so the metrics equal those of `python src/train.py`.
"""
import gc
import hashlib
import json
import os
import runpy
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")
CASE = os.path.abspath(sys.argv[1])
OUT = os.path.abspath(sys.argv[2])
ARGS = sys.argv[3:]
SRC = os.path.join(CASE, "src")
os.chdir(CASE)
sys.path.insert(0, SRC)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.multiprocessing  # noqa: E402
import dgl  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import hgmae.trainer as T  # noqa: E402  (the case's own copy)
import hgmae.losses.sce as SCE  # noqa: E402

OBS = {}
ST = {"phase": "setup", "epoch": 0, "zero_grads": 0, "trainer": None, "dataset": None, "snap": None,
      "sl": {}}


def add(key, value):
    OBS.setdefault(key, [])
    if value not in OBS[key]:
        OBS[key].append(value)


def inc(key, n=1):
    OBS[key] = OBS.get(key, 0) + n


def net():
    tr = ST["trainer"]
    if tr is None:
        return None
    return tr.model.module if isinstance(tr.model, DDP) else tr.model


def names():
    m = net()
    return {id(p): n for n, p in m.named_parameters()} if m is not None else {}


def _dtypes(out):
    if torch.is_tensor(out):
        return [str(out.dtype)]
    if isinstance(out, dict):
        return sorted({str(v.dtype) for v in out.values() if torch.is_tensor(v)})
    return []


# ------------------------------------------------------------------ forward hooks
def _fwd_hook(mod, args, out):
    if isinstance(mod, (nn.ModuleDict, nn.ModuleList)):
        return
    ph = ST["phase"]
    if ph == "train":
        add("train_fwd_module_training", mod.training)
        add("train_fwd_grad_enabled", torch.is_grad_enabled())
        add("train_fwd_autocast", torch.is_autocast_cpu_enabled())
        for d in _dtypes(out):
            add("train_fwd_dtypes", d)
        if not mod.training:
            OBS.setdefault("_eval_epochs", set()).add(ST["epoch"])
            add("train_fwd_eval_modules", type(mod).__name__)
    if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.training and ph != "train":
        inc(f"bn_train_forwards_outside_training[{ph}]")
    if ph == "probe" and isinstance(mod, nn.Linear) and mod.training and torch.is_grad_enabled():
        xb = args[0].detach()
        OBS.setdefault("_probe_batches", []).append((float(xb.mean(0).abs().mean()),
                                                     float((xb.std(0) - 1).abs().mean())))


def _fwd_pre_hook(mod, args):
    if isinstance(mod, dgl.nn.GraphConv) and args and isinstance(args[0], dgl.DGLGraph):
        g = args[0]
        st, _, dt = g.canonical_etypes[0]
        if st == dt and g.num_src_nodes() == g.num_dst_nodes():
            key = id(g)
            if key not in ST["sl"]:
                u, v = g.edges()
                ST["sl"][key] = round(float((u == v).sum()) / g.num_dst_nodes(), 4)
            add(f"self_loops_per_node[{ST['phase']}]", ST["sl"][key])


torch.nn.modules.module.register_module_forward_hook(_fwd_hook)
torch.nn.modules.module.register_module_forward_pre_hook(_fwd_pre_hook)

# ------------------------------------------------------------------ optimiser instrumentation
_orig_zero_grad = torch.optim.Optimizer.zero_grad


def _zero_grad(self, set_to_none=True):
    ST["zero_grads"] += 1
    return _orig_zero_grad(self, set_to_none)


torch.optim.Optimizer.zero_grad = _zero_grad
_orig_clip = torch.nn.utils.clip_grad_norm_


def _clip(parameters, max_norm, *a, **kw):
    total = _orig_clip(parameters, max_norm, *a, **kw)
    if ST["phase"] == "train":
        OBS.setdefault("_pregn", []).append(float(total))
    return total


torch.nn.utils.clip_grad_norm_ = _clip


def _step_pre_hook(opt, args, kwargs):
    if ST["phase"] != "train":
        ST["zero_grads"] = 0
        return
    nm = names()
    params = [p for grp in opt.param_groups for p in grp["params"]]
    for p in params:
        if p.grad is None:
            add("train_grads_none", nm.get(id(p), "<not a model parameter>"))
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    OBS.setdefault("_gn", []).append(float(torch.stack(grads).norm()) if grads else 0.0)
    add("zero_grad_calls_per_step", ST["zero_grads"])
    ST["zero_grads"] = 0
    if "model_params_in_optimizer" not in OBS:
        m = net()
        ids = {id(p) for p in params}
        OBS["model_params_in_optimizer"] = sum(id(p) in ids for p in m.parameters())
        OBS["model_params_total"] = len(list(m.parameters()))
        OBS["optimizer_params_total"] = len(params)
        OBS["cudnn_flags_at_first_step"] = {"benchmark": torch.backends.cudnn.benchmark,
                                            "deterministic": torch.backends.cudnn.deterministic,
                                            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


import torch.optim.optimizer as _topt  # noqa: E402
_topt.register_optimizer_step_pre_hook(_step_pre_hook)

# ------------------------------------------------------------------ loss
_orig_loss_call = SCE.SCELoss.__call__


def _loss_call(self, recon, target, masks):
    total, parts = _orig_loss_call(self, recon, target, masks)
    if ST["phase"] == "train":
        add("loss_dtype", str(total.dtype))
        add("loss_requires_grad", bool(total.requires_grad))
        if "first_loss" not in OBS:
            OBS["first_loss"] = round(float(total), 6)
            OBS["first_loss_terms"] = {t: round(float(v), 6) for t, v in parts.items()}
            OBS["loss_weights"] = dict(self.weights)
            OBS["loss_reduction"] = self.reduction
            OBS["masked_nodes_per_type"] = {t: int(len(m)) for t, m in masks.items()}
        ds = ST["dataset"]
        if ds is not None:
            eq = all(torch.equal(target[t], ds.feats[t]) for t in target)
            add("loss_targets_equal_clean_features", eq)
            if not eq:
                d = [float((target[t] - ds.feats[t]).norm(dim=1).mean()) for t in target]
                OBS.setdefault("_target_dist", []).append(sum(d) / len(d))
    return total, parts


SCE.SCELoss.__call__ = _loss_call

# ------------------------------------------------------------------ DDP
_orig_ddp_init = DDP.__init__
_orig_ddp_fwd = DDP.forward


def _ddp_init(self, module, *a, **kw):
    import torch.distributed as dist
    add("ddp_wrapped_world_size", dist.get_world_size() if dist.is_initialized() else None)
    return _orig_ddp_init(self, module, *a, **kw)


def _ddp_fwd(self, *a, **kw):
    if ST["phase"] == "train":
        inc("train_forwards_through_ddp")
    return _orig_ddp_fwd(self, *a, **kw)


DDP.__init__ = _ddp_init
DDP.forward = _ddp_fwd

# ------------------------------------------------------------------ load / save
_orig_lsd = nn.Module.load_state_dict
_orig_load = torch.load


def _lsd(self, state_dict, strict=True, assign=False):
    before = {k: v.detach().clone() for k, v in self.state_dict().items()}
    res = _orig_lsd(self, state_dict, strict=strict, assign=assign)
    after = self.state_dict()
    changed = sum(not torch.equal(before[k], after[k]) for k in before)
    OBS.setdefault("load_state_dict", []).append({
        "phase": ST["phase"], "module": type(self).__name__, "strict": strict,
        "missing": len(res.missing_keys), "unexpected": len(res.unexpected_keys),
        "loaded": len([k for k in state_dict if k in before]), "tensors_changed": changed})
    return res


def _load(*a, **kw):
    OBS.setdefault("torch_load", []).append({"weights_only": kw.get("weights_only"),
                                             "map_location": str(kw.get("map_location"))})
    return _orig_load(*a, **kw)


nn.Module.load_state_dict = _lsd
torch.load = _load

# ------------------------------------------------------------------ phases
_orig = {k: getattr(T.Trainer, k) for k in ("__init__", "train_epoch", "validate", "fit", "finish")}
_orig_build = T.build_dataset
_orig_probe = T.linear_probe
_orig_log = T.log_metrics


def _build(cfg, seed=0):
    ds = _orig_build(cfg, seed)
    ST["dataset"] = ds
    OBS["train_split_hash"] = hashlib.sha1(
        b"".join(ds.splits[t]["train"].numpy().tobytes() for t in ("author", "paper", "subject"))).hexdigest()[:10]
    return ds


def _init(self, cfg, dataset, runner):
    _orig["__init__"](self, cfg, dataset, runner)
    ST["trainer"] = self
    m = net()
    OBS["frozen_params"] = sorted(n for n, p in m.named_parameters() if not p.requires_grad)
    OBS["trainable_param_count"] = sum(p.numel() for p in m.parameters() if p.requires_grad)
    g = self.g
    u, v = g.edges(etype="cites")
    OBS["data_self_loops_per_paper"] = round(float((u == v).sum()) / g.num_nodes("paper"), 4)


def _train_epoch(self, epoch):
    if ST["snap"] is None:
        ST["snap"] = {n: p.detach().clone() for n, p in net().named_parameters()}
    ST["phase"], ST["epoch"] = "train", epoch
    try:
        return _orig["train_epoch"](self, epoch)
    finally:
        ST["phase"] = "fit"
        if epoch == self.cfg["trainer"]["epochs"]:
            OBS["params_unchanged_by_training"] = sorted(
                n for n, p in net().named_parameters() if torch.equal(p.detach(), ST["snap"][n]))
            OBS["bn_running_stats_after_training"] = {
                n: [m.momentum, round(float(m.running_mean.mean()), 5), round(float(m.running_var.mean()), 5)]
                for n, m in net().named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)}


def _validate(self, epoch):
    ST["phase"] = "validate"
    try:
        return _orig["validate"](self, epoch)
    finally:
        ST["phase"] = "fit"
        st = self.best["state"]
        if st is not None:
            live = {p.data_ptr() for p in net().parameters()}
            add("best_state_aliases_live_params", any(v.data_ptr() in live for v in st.values()))


def _graph_nodes():
    seen, stack = set(), []
    for o in gc.get_objects():
        try:
            if torch.is_tensor(o) and o.grad_fn is not None:
                stack.append(o.grad_fn)
        except Exception:
            pass
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        stack.extend(nf for nf, _ in getattr(f, "next_functions", ()))
    return len(seen)


def _fit(self):
    ST["phase"] = "fit"
    _orig["fit"](self)
    ST["phase"] = "after_fit"
    gc.collect()
    OBS["live_autograd_nodes_after_fit"] = _graph_nodes()
    OBS["param_checksum"] = round(float(sum(p.detach().double().abs().sum() for p in net().parameters())), 6)
    OBS["train_epochs_with_eval_modules"] = len(OBS.pop("_eval_epochs", set()))
    gn = OBS.pop("_gn", [])
    OBS["optimizer_steps_observed"] = len(gn)
    OBS["mean_grad_norm"] = round(sum(gn) / max(1, len(gn)), 4)
    OBS["max_grad_norm"] = round(max(gn or [0.0]), 4)
    pg = OBS.pop("_pregn", [])
    OBS["mean_grad_norm_before_clip"] = round(sum(pg) / max(1, len(pg)), 4)
    td = OBS.pop("_target_dist", [])
    if td:
        OBS["target_distance_to_clean"] = round(sum(td) / len(td), 4)


def _finish(self):
    ST["phase"] = "finish"
    try:
        return _orig["finish"](self)
    finally:
        ST["phase"] = "done"


def _probe(*a, **kw):
    prev, ST["phase"] = ST["phase"], "probe"
    try:
        return _orig_probe(*a, **kw)
    finally:
        ST["phase"] = prev
        pb = OBS.pop("_probe_batches", [])
        if pb:
            OBS["probe_batch_mean_abs_mean"] = round(sum(b[0] for b in pb) / len(pb), 4)
            OBS["probe_batch_mean_abs_std_minus_1"] = round(sum(b[1] for b in pb) / len(pb), 4)


def _log(metrics):
    OBS["_metrics"] = metrics
    return _orig_log(metrics)


T.Trainer.__init__ = _init
T.Trainer.train_epoch = _train_epoch
T.Trainer.validate = _validate
T.Trainer.fit = _fit
T.Trainer.finish = _finish
T.build_dataset = _build
T.linear_probe = _probe
T.log_metrics = _log

# ------------------------------------------------------------------ DDP ranks (fork)
_orig_start = torch.multiprocessing.start_processes
RANK_FILES = []


def _start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    def wrapped(rank, *a):
        try:
            fn(rank, *a)
        finally:
            with open(f"{OUT}.rank{rank}", "w") as fh:
                json.dump(_jsonable(OBS), fh, default=str)
    RANK_FILES.extend(f"{OUT}.rank{r}" for r in range(nprocs))
    return _orig_start(wrapped, args=args, nprocs=nprocs, join=join, daemon=daemon, start_method=start_method)


torch.multiprocessing.start_processes = _start_processes


def _jsonable(o):
    return json.loads(json.dumps(o, default=lambda v: sorted(v) if isinstance(v, set) else str(v)))


error = None
sys.argv = [os.path.join(SRC, "train.py")] + ARGS
try:
    runpy.run_path(os.path.join(SRC, "train.py"), run_name="__main__")
except BaseException as e:  # noqa: BLE001
    import traceback
    error = traceback.format_exc()

obs = _jsonable(OBS)
if RANK_FILES:
    ranks = []
    for f in RANK_FILES:
        try:
            ranks.append(json.load(open(f)))
            os.remove(f)
        except (OSError, ValueError):
            ranks.append({})
    obs = dict(ranks[0])
    obs["rank_param_checksums"] = [r.get("param_checksum") for r in ranks]
    obs["ranks_params_identical"] = len({r.get("param_checksum") for r in ranks}) == 1
    for i, r in enumerate(ranks[1:], 1):
        obs[f"rank{i}_mean_grad_norm"] = r.get("mean_grad_norm")
metrics = obs.pop("_metrics", None)
with open(OUT, "w") as fh:
    json.dump({"metrics": metrics, "observations": obs, "error": error, "args": ARGS}, fh, indent=1, sort_keys=True)
print(json.dumps(metrics))
