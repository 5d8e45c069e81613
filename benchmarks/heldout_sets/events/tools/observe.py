"""Run one copy of the pipeline in-process with instrumentation and write observations + metrics.

usage: python tools/observe.py CASE_DIR OUT_JSON
CASE_DIR holds src/ (the pipeline); the run is
`python -m src.gmevents.main --config src/configs/exp/pretrain.yaml` executed in-process from CASE_DIR
(checkpoints go to a temporary folder through `--opts train.out_dir=...`).
"""
import contextlib
import gc
import hashlib
import io
import json
import os
import resource
import shutil
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.optim.optimizer as torch_optimizer  # noqa: E402

ATTR = 8


def main():
    case_dir, out_path = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.chdir(case_dir)
    sys.path.insert(0, case_dir)
    for name in list(sys.modules):
        if name == "src" or name.startswith("src."):
            del sys.modules[name]

    import importlib
    tr = importlib.import_module("src.gmevents.trainer")
    ls = importlib.import_module("src.gmevents.losses")
    pr = importlib.import_module("src.gmevents.probe")
    md = importlib.import_module("src.gmevents.model")
    import dgl
    import torch.backends.cudnn as cudnn

    cudnn_attrs_before = set(vars(cudnn))
    obs = {
        "iterations": 0, "optimizer_steps": 0,
        "step_grad_enabled": set(), "step_autocast": set(),
        "train_fwd_training": set(), "train_fwd_grad": set(), "train_fwd_dtypes": set(),
        "self_loops_per_node": set(), "loss_dtypes": set(), "loss_requires_grad": set(),
        "zero_grad_calls_per_step": [], "grads_none": set(), "grads_zero": set(),
        "trained_params_not_in_optimizer": set(), "optimizer_params_not_in_trained_model": 0,
        "iterations_with_module_in_eval": 0, "iterations_with_module_under_no_grad": 0,
        "eval_runs": 0, "eval_fwd_training": set(), "bn_train_forwards_outside_training": 0,
        "torch_load": [], "load_state_dict": [],
    }
    ctx = {"in_step": False, "zero_grad": 0, "trained": None, "opt": None, "model_arg": None,
           "flags": set(), "grad_norms": [], "feat_mean": [], "feat_std": [], "in_eval": False}

    # --- the training engine: wrap process_fn and run ----------------------------------------
    orig_create_trainer = tr.create_trainer

    def create_trainer(model, optimizer, loss_fn, cfg):
        ctx["model_arg"], ctx["opt"] = model, optimizer
        ctx["init"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        ctx["init_buffers"] = {n: b.detach().clone() for n, b in model.named_buffers()}
        engine = orig_create_trainer(model, optimizer, loss_fn, cfg)
        inner = engine._process_fn

        def process_fn(eng, batch):
            g = batch[0]
            f = g.ndata["feat"][:, :ATTR]
            ctx["feat_mean"].append(float(f.mean(0).abs().mean()))
            ctx["feat_std"].append(float((f.std(0) - 1).abs().mean()))
            ctx["in_step"], ctx["flags"] = True, set()
            obs["iterations"] += 1
            obs["step_grad_enabled"].add(torch.is_grad_enabled())
            obs["step_autocast"].add(torch.is_autocast_cpu_enabled())
            try:
                return inner(eng, batch)
            finally:
                ctx["in_step"] = False
                for flag in ctx["flags"]:
                    obs[flag] += 1
        engine._process_fn = process_fn
        orig_run = engine.run

        def run(data, max_epochs=1):
            state = orig_run(data, max_epochs)
            end_of_pretraining(state)
            return state
        engine.run = run
        return engine
    tr.create_trainer = create_trainer

    orig_create_evaluator = tr.create_evaluator

    def create_evaluator(*a, **k):
        engine = orig_create_evaluator(*a, **k)
        inner = engine._process_fn

        def process_fn(eng, batch):
            if eng.state.iteration == 1:
                obs["eval_runs"] += 1
            ctx["in_eval"] = True
            try:
                return inner(eng, batch)
            finally:
                ctx["in_eval"] = False
        engine._process_fn = process_fn
        return engine
    tr.create_evaluator = create_evaluator

    # --- loss dtype --------------------------------------------------------------------------
    orig_loss_call = ls.MaskedReconLoss.__call__

    def loss_call(self, recon, target):
        loss, parts = orig_loss_call(self, recon, target)
        if ctx["in_step"]:
            obs["loss_dtypes"].add(str(loss.dtype))
            obs["loss_requires_grad"].add(bool(loss.requires_grad))
            obs.setdefault("loss_first", float(loss.detach()))
        return loss, parts
    ls.MaskedReconLoss.__call__ = loss_call

    # --- forward hooks -------------------------------------------------------------------------
    def fwd_hook(module, args, output):
        if ctx.get("probe") and isinstance(module, torch.nn.Linear) and torch.is_grad_enabled() \
                and args and torch.is_tensor(args[0]) and args[0].dim() == 2 and args[0].shape[0] > 1:
            a = args[0].detach()
            ctx.setdefault("probe_batch_mean", []).append(float(a.mean(0).abs().mean()))
            ctx.setdefault("probe_batch_std", []).append(float((a.std(0) - 1).abs().mean()))
        if isinstance(module, torch.nn.BatchNorm1d) and module.training and not ctx["in_step"]:
            obs["bn_train_forwards_outside_training"] += 1
        if ctx["in_eval"] and isinstance(module, md.GraphMAE):
            obs["eval_fwd_training"].add(module.training)
        if not ctx["in_step"]:
            return
        if isinstance(module, md.GraphMAE) and ctx["trained"] is None:
            ctx["trained"] = module
            ctx["names"] = {id(p): n for n, p in module.named_parameters()}
        trained = ctx["trained"]
        if trained is not None and len(list(module.parameters(recurse=False))) > 0 \
                and any(module is m for m in trained.modules()):
            obs["train_fwd_training"].add(module.training)
            obs["train_fwd_grad"].add(torch.is_grad_enabled())
            if not module.training:
                ctx["flags"].add("iterations_with_module_in_eval")
            if not torch.is_grad_enabled():
                ctx["flags"].add("iterations_with_module_under_no_grad")
            if torch.is_tensor(output):
                obs["train_fwd_dtypes"].add(str(output.dtype))
        if isinstance(module, dgl.nn.GINConv) and args and isinstance(args[0], dgl.DGLGraph):
            s, d = args[0].edges()
            obs["self_loops_per_node"].add(round(float((s == d).sum()) / args[0].num_nodes(), 4))
    torch.nn.modules.module.register_module_forward_hook(fwd_hook)

    # --- zero_grad counting, optimizer step pre-hook -------------------------------------------
    orig_zg = torch.optim.Optimizer.zero_grad

    def zero_grad(self, *a, **k):
        if self is ctx["opt"]:
            ctx["zero_grad"] += 1
        return orig_zg(self, *a, **k)
    torch.optim.Optimizer.zero_grad = zero_grad

    def step_pre(opt, args, kwargs):
        if opt is not ctx["opt"]:
            return
        obs["optimizer_steps"] += 1
        obs["zero_grad_calls_per_step"].append(ctx["zero_grad"])
        ctx["zero_grad"] = 0
        trained = ctx["trained"]
        in_opt = {id(p) for grp in opt.param_groups for p in grp["params"]}
        for n, p in trained.named_parameters():
            if id(p) not in in_opt:
                obs["trained_params_not_in_optimizer"].add(n)
            if p.grad is None:
                obs["grads_none"].add(n)
            elif not torch.any(p.grad != 0):
                obs["grads_zero"].add(n)
        obs["optimizer_params_not_in_trained_model"] = len([i for i in in_opt if i not in ctx["names"]])
        gs = [p.grad for grp in opt.param_groups for p in grp["params"] if p.grad is not None]
        ctx["grad_norms"].append(float(torch.norm(torch.stack([x.norm() for x in gs]))) if gs else 0.0)
        if obs["optimizer_steps"] == 1:
            obs["cudnn_deterministic"] = bool(cudnn.deterministic)
            obs["cudnn_benchmark"] = bool(cudnn.benchmark)
            obs["cudnn_stray_attrs"] = sorted(set(vars(cudnn)) - cudnn_attrs_before - {"deterministic", "benchmark"})
            obs["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    torch_optimizer.register_optimizer_step_pre_hook(step_pre)

    # --- end of pretraining ---------------------------------------------------------------------
    def end_of_pretraining(state):
        trained = ctx["trained"]
        gc.collect()
        live = [o for o in gc.get_objects() if torch.is_tensor(o) and getattr(o, "grad_fn", None) is not None]
        obs["live_tensors_with_grad_fn"] = len(live)
        seen, todo = {}, [t.grad_fn for t in live]   # id -> node (kept alive so ids are not reused)
        while todo and len(seen) < 1_000_000:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen[id(fn)] = fn
            todo += [nxt for nxt, _ in getattr(fn, "next_functions", ())]
        obs["autograd_nodes_reachable_from_live_tensors"] = len(seen)
        del live, todo
        obs["trainer_output_types"] = sorted({type(v).__name__ for v in (state.output or {}).values()}) \
            if isinstance(state.output, dict) else type(state.output).__name__
        obs["params_unchanged"] = [n for n, p in trained.named_parameters() if torch.equal(p.detach(), ctx["init"][n])]
        obs["bn_running_stats_unchanged"] = sorted(
            n for n, b in trained.named_buffers() if "running" in n and torch.equal(b, ctx["init_buffers"][n]))
        obs["trained_model_is_model_arg"] = trained is ctx["model_arg"]
        obs["model_arg_params_unchanged"] = len([n for n, p in ctx["model_arg"].named_parameters()
                                                 if torch.equal(p.detach(), ctx["init"][n])])
        obs["training_mode_at_end"] = trained.training
        obs["pretrain_iterations"] = state.iteration
        ctx["final_buffers"] = {n: b.detach().clone() for n, b in ctx["model_arg"].named_buffers()}
        ctx["probe"] = True

    # --- stage two: loading, embedding -----------------------------------------------------------
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
            "loaded": len([key for key in self.state_dict() if key in state_dict])})
        return res
    torch.nn.Module.load_state_dict = lsd

    orig_embed = pr.graph_embeddings

    def graph_embeddings(model, batches):
        obs["embed_model_training"] = model.training
        fb = ctx.get("final_buffers", {})
        obs["embed_bn_buffers_equal_trained"] = all(
            torch.equal(b, fb[n]) for n, b in model.named_buffers() if n in fb) if fb else None
        return orig_embed(model, batches)
    pr.graph_embeddings = graph_embeddings

    dt = importlib.import_module("src.gmevents.data")
    orig_build = dt.build_datasets

    def build_datasets(dcfg):
        train, test, collate, info = orig_build(dcfg)
        h = hashlib.sha1()
        for g in train.graphs:
            h.update(g.ndata["attr"].numpy().tobytes())
        obs["train_split_hash"] = h.hexdigest()[:12]
        return train, test, collate, info
    dt.build_datasets = build_datasets

    run = importlib.import_module("src.gmevents.main")
    tmp = tempfile.mkdtemp(prefix="gmev_")
    argv = ["--config", "src/configs/exp/pretrain.yaml", "--opts", f"train.out_dir={tmp}"]
    buf, err = io.StringIO(), io.StringIO()
    t0 = time.time()
    error = None
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            metrics = run.main(argv)
    except Exception:  # a crash is recorded, not hidden
        import traceback
        error = traceback.format_exc()
        metrics = None
    shutil.rmtree(tmp, ignore_errors=True)
    obs["wall_s"] = round(time.time() - t0, 2)
    obs["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    pm, ps = ctx.get("probe_batch_mean", []), ctx.get("probe_batch_std", [])
    obs["probe_train_batch_mean_abs"] = round(sum(pm) / len(pm), 4) if pm else None
    obs["probe_train_batch_std_dev_from_1"] = round(sum(ps) / len(ps), 4) if ps else None
    fm, fs = ctx["feat_mean"], ctx["feat_std"]
    obs["train_batch_attr_mean_abs"] = round(sum(fm) / len(fm), 4) if fm else None
    obs["train_batch_attr_std_dev_from_1"] = round(sum(fs) / len(fs), 4) if fs else None
    gn = ctx["grad_norms"]
    obs["grad_norm_after_clip_first"] = round(gn[0], 6) if gn else None
    obs["grad_norm_after_clip_mean"] = round(sum(gn) / len(gn), 6) if gn else None
    zg = obs.pop("zero_grad_calls_per_step")
    obs["zero_grad_calls_per_step"] = sorted(set(zg[1:])) if len(zg) > 1 else zg
    for k, v in list(obs.items()):
        if isinstance(v, set):
            obs[k] = sorted(v, key=str)
    if "init" in ctx:
        h = hashlib.sha1()
        for n, p in sorted(ctx["init"].items()):
            h.update(p.numpy().tobytes())
        obs["init_param_hash"] = h.hexdigest()[:12]
    result = {"case_dir": case_dir, "argv": argv, "metrics": metrics, "observations": obs,
              "error": error, "stdout": buf.getvalue()[-2000:], "stderr_tail": err.getvalue()[-600:]}
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
