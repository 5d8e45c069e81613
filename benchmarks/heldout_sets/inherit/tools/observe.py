"""Run one copy of the pipeline with runtime instrumentation.

usage: python observe.py SRC_DIR CKPT_DIR OUT_JSON [extra --override ...]
Hooks are global (optimizer step pre-hook, module forward hooks, torch.load
wrapper) so the pipeline code itself is untouched."""
import gc
import json
import os
import resource
import sys

import torch

src, ckpt_dir, out_path = sys.argv[1:4]
extra = sys.argv[4:]
os.chdir(src)
sys.path.insert(0, os.path.abspath("."))

obs = {
    "train_forwards": 0, "train_forwards_eval_mode": 0, "train_forwards_grad_disabled": 0,
    "train_pred_dtypes": {}, "self_loops_per_node": set(), "max_abs_batch_feat_mean": 0.0,
    "steps": 0, "steps_all_grads_zero": 0, "params_grad_none_first_step": None,
    "params_grad_none_last_step": None, "model_params_not_in_optimizer": None,
    "frozen_params": None, "torch_load_calls": [], "live_grad_tensors_max": 0,
    "bn": None, "cudnn_benchmark_at_fit": None, "cudnn_deterministic_at_fit": None,
}
state = {"model": None, "init": None}


def _called_from(name):
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == name:
            return True
        f = f.f_back
    return False


def _in_training_step():
    return _called_from("training_step")


def _pre(module, args):
    if type(module).__name__ != "GraphMAE":
        return
    if state["model"] is None:
        state["model"] = module
        state["init"] = {n: p.detach().clone() for n, p in module.named_parameters()}
        obs["bn"] = [{"momentum": m.momentum, "track_running_stats": m.track_running_stats}
                     for m in module.modules() if isinstance(m, torch.nn.BatchNorm1d)][:1]
        obs["cudnn_benchmark_at_fit"] = torch.backends.cudnn.benchmark
        obs["cudnn_deterministic_at_fit"] = torch.backends.cudnn.deterministic
        obs["frozen_params"] = [n for n, p in module.named_parameters() if not p.requires_grad]
    if module is state["model"] and _in_training_step():
        g, x = args[0], args[1]
        obs["train_forwards"] += 1
        obs["train_forwards_eval_mode"] += int(not module.training)
        obs["train_forwards_grad_disabled"] += int(not torch.is_grad_enabled())
        s, d = g.edges()
        obs["self_loops_per_node"].add(round(float((s == d).sum()) / g.num_nodes(), 3))
        obs["max_abs_batch_feat_mean"] = max(obs["max_abs_batch_feat_mean"],
                                             float(x.mean(0).abs().max()))
        module._obs_train = True
    else:
        module._obs_train = False


def _post(module, args, output):
    if type(module).__name__ == "GraphMAE" and getattr(module, "_obs_train", False):
        key = str(output[0].dtype)
        obs["train_pred_dtypes"][key] = obs["train_pred_dtypes"].get(key, 0) + 1


torch.nn.modules.module.register_module_forward_pre_hook(_pre)
torch.nn.modules.module.register_module_forward_hook(_post)


def _step_hook(opt, args, kwargs):
    model = state["model"]
    if model is None or _called_from("fit_linear_probe"):
        return
    obs["steps"] += 1
    params = list(model.named_parameters())
    none = [n for n, p in params if p.grad is None]
    total = sum(float(p.grad.abs().sum()) for _, p in params if p.grad is not None)
    obs["steps_all_grads_zero"] += int(total == 0.0)
    if obs["params_grad_none_first_step"] is None:
        obs["params_grad_none_first_step"] = none
        in_opt = {id(p) for grp in opt.param_groups for p in grp["params"]}
        obs["model_params_not_in_optimizer"] = [n for n, p in params if id(p) not in in_opt]
    obs["params_grad_none_last_step"] = none
    if obs["steps"] % 40 == 0:
        roots = [o.grad_fn for o in gc.get_objects()
                 if isinstance(o, torch.Tensor) and o.grad_fn is not None]
        seen, stack = set(), list(roots)
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            stack.extend(n for n, _ in node.next_functions)
        obs["live_grad_tensors_max"] = max(obs["live_grad_tensors_max"], len(roots))
        obs["live_autograd_nodes_max"] = max(obs.get("live_autograd_nodes_max", 0), len(seen))


from torch.optim.optimizer import register_optimizer_step_pre_hook  # noqa: E402
register_optimizer_step_pre_hook(_step_hook)

_orig_load = torch.load


def _load(*a, **kw):
    obs["torch_load_calls"].append({"weights_only": kw.get("weights_only", "<not passed>")})
    return _orig_load(*a, **kw)


torch.load = _load

_orig_lsd = torch.nn.Module.load_state_dict


def _lsd(self, state_dict, strict=True, *a, **kw):
    res = _orig_lsd(self, state_dict, strict, *a, **kw)
    own = len(self.state_dict())
    obs.setdefault("load_state_dict_calls", []).append(
        {"module": type(self).__name__, "strict": strict, "own_keys": own,
         "missing_keys": len(res.missing_keys), "unexpected_keys": len(res.unexpected_keys),
         "keys_loaded": own - len(res.missing_keys)})
    return res


torch.nn.Module.load_state_dict = _lsd

from gmae2 import run  # noqa: E402

error = None
try:
    metrics = run.main(["--config", "configs/base.yaml",
                        "--override", f"train.ckpt_dir={ckpt_dir}"] +
                       [x for o in extra for x in ("--override", o)])
except Exception as exc:  # record crashes as an observation
    metrics, error = {}, f"{type(exc).__name__}: {exc}"

model = state["model"]
if model is not None:
    obs["params_unchanged_after_training"] = [
        n for n, p in model.named_parameters() if torch.equal(p.detach(), state["init"][n])]
    bn = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    if bn and bn[0].running_var is not None:
        obs["bn_running_var_mean"] = round(float(bn[0].running_var.mean()), 4)
obs["self_loops_per_node"] = sorted(obs["self_loops_per_node"])[:5]
obs["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
obs["error"] = error
with open(out_path, "w") as fh:
    json.dump({"metrics": metrics, "obs": obs}, fh, indent=1, default=str)
