"""Run a case's src/notebook.py in-process, cell by cell (like a notebook kernel), with instrumentation.

usage: python tools/observe.py CASE_DIR OUT.json

The notebook is split at its `# %%` markers; every code cell is compiled with its real line numbers and
executed in one shared namespace.  A cell's role is recognised from its text (stage-1 loop, stage-2
fine-tuning, reload, probe); `evaluate` is wrapped after the cell that defines it so that forwards
inside evaluation are told apart from training forwards.  Nothing here draws random numbers, so the
metrics equal those of `python src/notebook.py`.
"""
import contextlib
import hashlib
import io
import json
import os
import resource
import sys
import time

os.environ.setdefault("DGLBACKEND", "pytorch")
CASE = os.path.abspath(sys.argv[1])
OUT = sys.argv[2]
SRC = os.path.join(CASE, "src")
os.chdir(CASE)
sys.path.insert(0, SRC)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import dgl  # noqa: E402
import nbutils  # noqa: E402  (the case's own copy)

OBS = {}
STATE = {"phase": "setup", "in_eval": False, "steps": {"stage1": 0, "stage2": 0}}
ns = {"__name__": "__main__", "__file__": os.path.join(SRC, "notebook.py")}


def add(key, value):
    OBS.setdefault(key, [])
    if value not in OBS[key]:
        OBS[key].append(value)


def inc(key, n=1):
    OBS[key] = OBS.get(key, 0) + n


def training_phase():
    return STATE["phase"] in ("stage1", "stage2") and not STATE["in_eval"]


# ------------------------------------------------------------------ forward hooks
def _fwd_hook(mod, args, out):
    if isinstance(mod, (nn.ModuleDict, nn.ModuleList)):
        return
    ph = STATE["phase"]
    if training_phase():
        add(f"{ph}_fwd_training", mod.training)
        add(f"{ph}_fwd_grad", torch.is_grad_enabled())
        if torch.is_tensor(out):
            add(f"{ph}_fwd_dtypes", str(out.dtype))
        if not mod.training:
            OBS.setdefault(f"_{ph}_eval_iters", set()).add(STATE["steps"][ph])
        if isinstance(mod, nn.Linear) and torch.is_tensor(out):
            add(f"{ph}_linear_out_dtype", str(out.dtype))
    if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.training and not training_phase():
        inc(f"bn_train_forwards_outside_training[{ph}{'/eval' if STATE['in_eval'] else ''}]")
    if ph == "probe" and isinstance(mod, nn.Linear) and mod.training and torch.is_grad_enabled():
        xb = args[0].detach()
        OBS.setdefault("_probe_batches", []).append((float(xb.mean(0).abs().mean()),
                                                     float((xb.std(0) - 1).abs().mean())))


def _fwd_pre_hook(mod, args):
    if isinstance(mod, dgl.nn.GraphConv) and args and isinstance(args[0], dgl.DGLGraph):
        key = id(args[0])
        cache = STATE.setdefault("_sl", {})
        if key not in cache:
            cache[key] = round(nbutils.self_loops_per_node(args[0]), 4)
        add(f"self_loops_per_node[{STATE['phase']}]", cache[key])


torch.nn.modules.module.register_module_forward_hook(_fwd_hook)
torch.nn.modules.module.register_module_forward_pre_hook(_fwd_pre_hook)

# ------------------------------------------------------------------ optimiser instrumentation
_orig_zero_grad = torch.optim.Optimizer.zero_grad


def _zero_grad(self, set_to_none=True):
    STATE["zero_grads"] = STATE.get("zero_grads", 0) + 1
    return _orig_zero_grad(self, set_to_none)


torch.optim.Optimizer.zero_grad = _zero_grad


def _param_names():
    m = ns.get("model")
    return {id(p): n for n, p in m.named_parameters()} if isinstance(m, nn.Module) else {}


def _step_pre_hook(opt, args, kwargs):
    ph = STATE["phase"]
    if ph not in ("stage1", "stage2"):
        STATE["zero_grads"] = 0
        return
    names = _param_names()
    params = [p for grp in opt.param_groups for p in grp["params"]]
    none = sorted(names.get(id(p), "?") for p in params if p.grad is None)
    for n in none:
        add(f"{ph}_grads_none", n)
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    gn = float(torch.stack(grads).norm()) if grads else 0.0
    OBS.setdefault(f"_{ph}_gn", []).append(gn)
    add(f"{ph}_zero_grad_calls_per_step", STATE.get("zero_grads", 0))
    STATE["zero_grads"] = 0
    if STATE["steps"][ph] == 0:
        m = ns.get("model")
        ids = {id(p) for p in params}
        trained = [n for n, p in m.named_parameters() if p.requires_grad] if isinstance(m, nn.Module) else []
        OBS[f"{ph}_model_params_in_optimizer"] = sum(id(p) in ids for p in m.parameters())
        OBS[f"{ph}_trainable_model_params_not_in_optimizer"] = sorted(
            n for n, p in m.named_parameters() if p.requires_grad and id(p) not in ids)
        OBS[f"{ph}_optimizer_params"] = len(params)
        OBS[f"{ph}_trainable_names"] = len(trained)
        OBS[f"cudnn_benchmark[{ph}]"] = torch.backends.cudnn.benchmark
        OBS[f"cudnn_deterministic[{ph}]"] = torch.backends.cudnn.deterministic
        OBS[f"deterministic_algorithms[{ph}]"] = torch.are_deterministic_algorithms_enabled()
    STATE["steps"][ph] += 1


torch.optim.Optimizer.register_optimizer_step_pre_hook(_step_pre_hook) if hasattr(
    torch.optim.Optimizer, "register_optimizer_step_pre_hook") else None
from torch.optim.optimizer import register_optimizer_step_pre_hook  # noqa: E402

register_optimizer_step_pre_hook(_step_pre_hook)

# ------------------------------------------------------------------ backward / loss
_orig_backward = torch.Tensor.backward


def _backward(self, *a, **k):
    ph = STATE["phase"]
    if ph in ("stage1", "stage2"):
        add(f"{ph}_loss_dtypes", str(self.dtype))
        if STATE["steps"][ph] == 0:
            OBS[f"{ph}_first_loss"] = round(float(self), 6)
    return _orig_backward(self, *a, **k)


torch.Tensor.backward = _backward

# ------------------------------------------------------------------ targets of the SCE loss
_orig_sce = nbutils.sce_loss


def _sce(x, y, *a, **k):
    if training_phase() and STATE.get("_sce_checked", 0) < 5 and "x" in ns:
        STATE["_sce_checked"] = STATE.get("_sce_checked", 0) + 1
        clean = ns["x"]
        d = torch.cdist(y.detach().double(), clean.double(), compute_mode="donot_use_mm_for_euclid_dist").min(1).values
        add(f"{STATE['phase']}_sce_target_rows_equal_clean_features", round(float((d < 1e-5).float().mean()), 4))
        add(f"{STATE['phase']}_sce_target_dist_to_clean", round(float(d.mean()), 3))
    return _orig_sce(x, y, *a, **k)


nbutils.sce_loss = _sce

# ------------------------------------------------------------------ loading
_orig_load = torch.load


def _load(*a, **k):
    OBS.setdefault("torch_load", []).append({"weights_only": k.get("weights_only", None)})
    return _orig_load(*a, **k)


torch.load = _load
_orig_lsd = nn.Module.load_state_dict


def _lsd(self, state_dict, strict=True, *a, **k):
    before = {n: p.detach().clone() for n, p in self.state_dict().items()}
    res = _orig_lsd(self, state_dict, strict, *a, **k)
    after = self.state_dict()
    own = set(after)
    changed = sum(not torch.equal(before[n], after[n]) for n in own)
    OBS.setdefault("load_state_dict", []).append({
        "cell": STATE["phase"], "module": type(self).__name__, "strict": strict,
        "missing": len(res.missing_keys), "unexpected": len(res.unexpected_keys),
        "loaded": len(own & set(state_dict)) if hasattr(state_dict, "keys") else None,
        "tensors_changed": changed})
    return res


nn.Module.load_state_dict = _lsd


# ------------------------------------------------------------------ namespace scans
def _walk(obj, path, out, depth=0):
    if depth > 4:
        return
    if torch.is_tensor(obj):
        out.append((path, obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, f"{path}[{k!r}]", out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _walk(v, f"{path}[{i}]", out, depth + 1)


def live_graphs():
    tensors = []
    for k, v in list(ns.items()):
        if k.startswith("__") or isinstance(v, nn.Module) or callable(v):
            continue
        _walk(v, k, tensors)
    holders, seen, stack, keep = [], set(), [], []  # keep: hold the wrappers so ids are not reused
    for path, t in tensors:
        if t.grad_fn is not None:
            holders.append(path)
            stack.append(t.grad_fn)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        keep.append(fn)
        for nxt, _ in getattr(fn, "next_functions", ()):
            stack.append(nxt)
    holders = sorted({h.split("[")[0] + ("[..]" if "[" in h else "") for h in holders})
    return holders, len(seen)


def model_snapshot():
    m = ns.get("model")
    return {n: p.detach().clone() for n, p in m.named_parameters()} if isinstance(m, nn.Module) else {}


def bn_stats(m):
    out = {}
    for n, mod in m.named_modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            out[n] = (mod.momentum, round(float(mod.running_mean.abs().mean()), 5),
                      round(float(mod.running_var.mean()), 5))
    return out


# ------------------------------------------------------------------ the cells
def cells(path):
    lines = open(path).read().splitlines(True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("# %%")] + [len(lines)]
    out = []
    if starts[0] > 0:
        out.append((0, "".join(lines[:starts[0]])))
    for a, b in zip(starts[:-1], starts[1:]):
        if "[markdown]" in lines[a]:
            continue
        out.append((a, "".join(lines[a:b])))
    return out


def role(text):
    if "for epoch in range(cfg.epochs)" in text:
        return "stage1"
    if "for epoch in range(cfg_ft.epochs)" in text:
        return "stage2"
    if "torch.load(ckpt_path" in text:
        return "reload"
    if "probe_epochs" in text and "for _ in range" in text:
        return "probe"
    if "best[\"state\"]" in text:
        return "restore"
    if "tags=[\"parameters\"]" in text or "SWEEP_DEFAULTS" in text:
        return "params"
    return "setup"


def wrap_evaluate():
    f = ns.get("evaluate")
    if f is None or getattr(f, "_wrapped", False):
        return

    def ev(*a, **k):
        prev = STATE["in_eval"]
        STATE["in_eval"] = True
        try:
            return f(*a, **k)
        finally:
            STATE["in_eval"] = prev

    ev._wrapped = True
    ns["evaluate"] = ev


def main():
    path = os.path.join(SRC, "notebook.py")
    sys.argv = [path]
    buf = io.StringIO()
    t0 = time.time()
    err = None
    snaps = {}
    try:
        with contextlib.redirect_stdout(buf):
            for start, text in cells(path):
                STATE["phase"] = role(text)
                ph = STATE["phase"]
                if ph in ("stage1", "stage2"):
                    snaps[ph] = model_snapshot()
                    m = ns.get("model")
                    OBS[f"{ph}_start_model_training"] = m.training if isinstance(m, nn.Module) else None
                code = compile("\n" * start + text, path, "exec")
                exec(code, ns)
                wrap_evaluate()
                if ph == "setup" and "train_idx" in ns and "split_hash" not in OBS:
                    OBS["split_hash"] = hashlib.sha1(ns["train_idx"].numpy().tobytes()).hexdigest()[:10]
                    xt = ns["x"][ns["train_idx"]]
                    OBS["train_attr_mean_abs"] = round(float(xt.mean(0).abs().mean()), 5)
                if ph in ("stage1", "stage2"):
                    after = model_snapshot()
                    before = snaps[ph]
                    OBS[f"{ph}_params_unchanged"] = sorted(n for n in after if n in before and torch.equal(after[n], before[n]))
                    holders, nodes = live_graphs()
                    OBS[f"{ph}_live_grad_holders"] = holders
                    OBS[f"{ph}_live_autograd_nodes"] = nodes
                    OBS[f"{ph}_bn"] = bn_stats(ns["model"])
                    OBS[f"{ph}_steps"] = STATE["steps"][ph]
                    gns = OBS.pop(f"_{ph}_gn", [])
                    OBS[f"{ph}_grad_norm_mean"] = round(sum(gns) / max(len(gns), 1), 5)
                    OBS[f"{ph}_iterations_with_module_in_eval"] = len(OBS.pop(f"_{ph}_eval_iters", set()))
                if ph == "stage2":
                    ema, m = ns.get("ema_model"), ns.get("model")
                    if isinstance(ema, nn.Module):
                        OBS["ema_buffers_equal_model"] = all(
                            torch.equal(a, b) for a, b in zip(ema.buffers(), m.buffers()))
                        OBS["ema_bn"] = bn_stats(ema)
                if ph == "restore":
                    best = ns.get("best", {})
                    st = best.get("state") if isinstance(best, dict) else None
                    ptrs = {p.data_ptr() for p in ns["model"].state_dict().values()}
                    OBS["best_state_aliases_model"] = bool(st) and any(
                        torch.is_tensor(v) and v.data_ptr() in ptrs for v in st.values())
    except Exception as e:  # noqa: BLE001
        import traceback
        err = traceback.format_exc()
    OBS["wall_s"] = round(time.time() - t0, 2)
    OBS["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    pb = OBS.pop("_probe_batches", [])
    if pb:
        OBS["probe_batch_mean_abs"] = round(sum(a for a, _ in pb) / len(pb), 4)
        OBS["probe_batch_std_dev_from_1"] = round(sum(b for _, b in pb) / len(pb), 4)
    for k in list(OBS):
        if k.startswith("_"):
            OBS.pop(k)
        elif isinstance(OBS[k], list) and OBS[k] and all(isinstance(v, (bool, int, float, str)) for v in OBS[k]):
            OBS[k] = sorted(OBS[k], key=str)
    metrics = None
    for line in buf.getvalue().splitlines()[::-1]:
        if line.startswith("{"):
            metrics = json.loads(line)
            break
    with open(OUT, "w") as fh:
        json.dump({"metrics": metrics, "observations": OBS, "error": err,
                   "stdout_tail": buf.getvalue()[-1500:]}, fh, indent=1, default=str)


main()
