"""Run one copy of the pipeline in-process with instrumentation and write observations + metrics.

usage: python tools/observe.py CASE_DIR OUT_JSON [--seed N]
CASE_DIR holds src/ (the pipeline); the run is `python -m src.stream.run --config src/configs/default.json`
executed in-process from CASE_DIR.
"""
import contextlib
import gc
import hashlib
import io
import json
import os
import resource
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.optim.optimizer as torch_optimizer  # noqa: E402


def main():
    case_dir, out_path = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    extra = sys.argv[3:]
    os.chdir(case_dir)
    sys.path.insert(0, case_dir)
    for name in list(sys.modules):
        if name == "src" or name.startswith("src."):
            del sys.modules[name]

    import importlib
    st_state = importlib.import_module("src.stream.state")
    st_steps = importlib.import_module("src.stream.steps")
    st_ckpt = importlib.import_module("src.stream.checkpoint")
    import dgl
    import torch.backends.cudnn as cudnn

    cudnn_attrs_before = set(vars(cudnn))
    obs = {
        "micro_steps": 0, "optimizer_steps": 0,
        "step_grad_enabled": set(), "step_autocast": set(),
        "student_fwd_training": set(), "student_fwd_grad": set(), "student_fwd_dtypes": set(),
        "teacher_fwd_training": set(), "teacher_fwd_grad": set(),
        "self_loops_per_node": set(), "loss_dtypes": set(), "loss_requires_grad": set(),
        "zero_grad_calls_per_step": [], "grads_none": set(), "grads_zero": set(),
        "student_params_not_in_optimizer": set(), "optimizer_params_not_in_student": 0,
        "grad_norms": [], "loss_first": None,
        "micro_steps_with_student_module_in_eval": 0, "micro_steps_with_student_module_under_no_grad": 0,
        "torch_load": [], "load_state_dict": [],
    }
    ctx = {"state": None, "in_step": False, "zero_grad": 0, "init": None, "names": {}}

    # --- capture the TrainState ---------------------------------------------------------
    orig_init = st_state.TrainState.__init__

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        ctx["state"] = self
        ctx["init"] = {n: p.detach().clone() for n, p in self._model.named_parameters()}
        ctx["init_buffers"] = {n: b.detach().clone() for n, b in self._model.named_buffers()}
        ctx["names"] = {id(p): n for n, p in self._model.named_parameters()}
    st_state.TrainState.__init__ = init

    # --- mark the training micro-step ---------------------------------------------------
    orig_call = st_steps.MaskedReconStep.__call__

    def call(self, *a, **k):
        ctx["in_step"] = True
        ctx["flags"] = set()
        obs["micro_steps"] += 1
        obs["step_grad_enabled"].add(torch.is_grad_enabled())
        obs["step_autocast"].add(torch.is_autocast_cpu_enabled())
        try:
            out = orig_call(self, *a, **k)
        finally:
            ctx["in_step"] = False
        for flag in ctx["flags"]:
            obs[flag] = obs.get(flag, 0) + 1
        loss = out[0]
        obs["loss_dtypes"].add(str(loss.dtype))
        obs["loss_requires_grad"].add(bool(loss.requires_grad))
        if obs["loss_first"] is None:
            obs["loss_first"] = float(loss.detach())
        return out
    st_steps.MaskedReconStep.__call__ = call

    # --- forward hooks ------------------------------------------------------------------
    def fwd_hook(module, args, output):
        if ctx.get("probe") and isinstance(module, torch.nn.Linear) and torch.is_grad_enabled() \
                and args and torch.is_tensor(args[0]) and args[0].dim() == 2 and args[0].shape[0] > 1:
            a = args[0].detach()
            ctx.setdefault("probe_batch_mean", []).append(float(a.mean(0).abs().mean()))
            ctx.setdefault("probe_batch_std", []).append(float((a.std(0) - 1).abs().mean()))
        if not ctx["in_step"] or ctx["state"] is None:
            return
        state = ctx["state"]
        student = {id(m) for m in state._model.modules()}
        teacher = {id(m) for m in state._teacher.modules()}
        dt = output.dtype if torch.is_tensor(output) else None
        if id(module) in teacher and module is state._teacher:
            obs["teacher_fwd_training"].add(module.training)
            obs["teacher_fwd_grad"].add(torch.is_grad_enabled())
        if id(module) in student and len(list(module.parameters(recurse=False))) > 0:
            obs["student_fwd_training"].add(module.training)
            obs["student_fwd_grad"].add(torch.is_grad_enabled())
            if not module.training:
                ctx["flags"].add("micro_steps_with_student_module_in_eval")
            if not torch.is_grad_enabled():
                ctx["flags"].add("micro_steps_with_student_module_under_no_grad")
            if dt is not None:
                obs["student_fwd_dtypes"].add(str(dt))
        if isinstance(module, dgl.nn.GraphConv) and args and isinstance(args[0], dgl.DGLGraph):
            g = args[0]
            s, d = g.edges()
            obs["self_loops_per_node"].add(round(float((s == d).sum()) / g.num_nodes(), 4))
    torch.nn.modules.module.register_module_forward_hook(fwd_hook)

    # --- zero_grad counting -------------------------------------------------------------
    orig_zg = torch.optim.Optimizer.zero_grad

    def zero_grad(self, *a, **k):
        if ctx["state"] is not None and self is ctx["state"].optimizer:
            ctx["zero_grad"] += 1
        return orig_zg(self, *a, **k)
    torch.optim.Optimizer.zero_grad = zero_grad

    # --- optimizer step pre-hook --------------------------------------------------------
    def step_pre(opt, args, kwargs):
        state = ctx["state"]
        if state is None or opt is not state.optimizer:
            return
        obs["optimizer_steps"] += 1
        obs["zero_grad_calls_per_step"].append(ctx["zero_grad"])
        ctx["zero_grad"] = 0
        in_opt = {id(p) for g in opt.param_groups for p in g["params"]}
        names = ctx["names"]
        for n, p in state._model.named_parameters():
            if id(p) not in in_opt:
                obs["student_params_not_in_optimizer"].add(n)
            if p.grad is None:
                obs["grads_none"].add(n)
            elif not torch.any(p.grad != 0):
                obs["grads_zero"].add(n)
        obs["optimizer_params_not_in_student"] = len([i for i in in_opt if i not in names])
        gs = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        obs["grad_norms"].append(float(torch.norm(torch.stack([x.norm() for x in gs]))) if gs else 0.0)
        if obs["optimizer_steps"] == 1:
            obs["cudnn_deterministic"] = bool(cudnn.deterministic)
            obs["cudnn_benchmark"] = bool(cudnn.benchmark)
            obs["cudnn_stray_attrs"] = sorted(set(vars(cudnn)) - cudnn_attrs_before - {"deterministic", "benchmark"})
    torch_optimizer.register_optimizer_step_pre_hook(step_pre)

    # --- end of pretraining: parameters that never changed, live graphs -------------------
    orig_save = st_ckpt.save_encoder

    def save_encoder(state, *a, **k):
        gc.collect()
        live = sum(1 for o in gc.get_objects()
                   if torch.is_tensor(o) and getattr(o, "grad_fn", None) is not None)
        obs["live_tensors_with_grad_fn"] = live
        unchanged = [n for n, p in state._model.named_parameters()
                     if torch.equal(p.detach(), ctx["init"][n])]
        obs["params_unchanged"] = unchanged
        obs["num_params"] = len(ctx["init"])
        bufs = dict(state._model.named_buffers())
        obs["bn_running_stats_unchanged"] = sorted(
            n for n, b in bufs.items() if "running" in n and torch.equal(b, ctx["init_buffers"][n]))
        obs["student_training_at_end"] = state._model.training
        obs["encoder_training_at_end"] = state._model.encoder.training
        obs["teacher_is_student_encoder"] = state._teacher is state._model.encoder
        obs["teacher_param_dist"] = float(sum((t - s).norm() for t, s in zip(
            state._teacher.parameters(), state._model.encoder.parameters())))
        ctx["probe"] = True
        return orig_save(state, *a, **k)
    st_ckpt.save_encoder = save_encoder

    # --- loading --------------------------------------------------------------------------
    orig_load = torch.load

    def load(*a, **k):
        obs["torch_load"].append({"weights_only": k.get("weights_only", None)})
        return orig_load(*a, **k)
    torch.load = load
    orig_lsd = torch.nn.Module.load_state_dict

    def lsd(self, state_dict, strict=True, *a, **k):
        res = orig_lsd(self, state_dict, strict, *a, **k)
        obs["load_state_dict"].append({
            "module": type(self).__name__, "strict": strict,
            "missing": len(res.missing_keys), "unexpected": len(res.unexpected_keys),
            "loaded": len([key for key in self.state_dict() if key in state_dict]),
        })
        return res
    torch.nn.Module.load_state_dict = lsd

    run = importlib.import_module("src.stream.run")
    argv = ["--config", "src/configs/default.json"] + extra
    buf = io.StringIO()
    t0 = time.time()
    error = None
    try:
        with contextlib.redirect_stdout(buf):
            metrics = run.main(argv)
    except Exception as exc:  # a crash is recorded, not hidden
        import traceback
        error = traceback.format_exc()
        metrics = None
    obs["wall_s"] = round(time.time() - t0, 2)
    obs["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    pm, ps = ctx.get("probe_batch_mean", []), ctx.get("probe_batch_std", [])
    obs["probe_train_batch_mean_abs"] = round(sum(pm) / len(pm), 4) if pm else None
    obs["probe_train_batch_std_dev_from_1"] = round(sum(ps) / len(ps), 4) if ps else None
    gn = obs.pop("grad_norms")
    obs["grad_norm_after_clip_first"] = round(gn[0], 6) if gn else None
    obs["grad_norm_after_clip_mean"] = round(sum(gn) / len(gn), 6) if gn else None
    zg = obs.pop("zero_grad_calls_per_step")
    obs["zero_grad_calls_per_step"] = sorted(set(zg[1:])) if len(zg) > 1 else zg
    for k, v in list(obs.items()):
        if isinstance(v, set):
            obs[k] = sorted(v, key=str)
    st = ctx["state"]
    if st is not None:
        h = hashlib.sha1()
        for n, p in sorted(ctx["init"].items()):
            h.update(p.numpy().tobytes())
        obs["init_param_hash"] = h.hexdigest()[:12]
    result = {"case_dir": case_dir, "argv": argv, "metrics": metrics, "observations": obs,
              "error": error, "stdout": buf.getvalue()[-2000:]}
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
