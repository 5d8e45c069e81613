"""Optimizers: parameters stepped versus the trained model's, their change per step, ``zero_grad``.
"""

from __future__ import annotations

import importlib
import weakref


def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls


    optim_mod = importlib.import_module("torch.optim.optimizer")

    @guarded
    def opt_pre(optimizer, args, kwargs):
        closure = kwargs.get("closure", args[0] if args else None)
        if rec.library_class(type(optimizer)) and not callable(closure):
            # a library step runs no user code; a closure runs the training step itself (as
            # Lightning's automatic optimization does): its lines are counted like any other
            tls.step_untraced = rec.suspend_tracing()
        model = last_model()
        if model is None or not rec.detailed_step():
            return  # parameter changes (GM105) are measured at the detailed steps
        params = list(model.parameters())
        if sum(p.numel() for p in params) <= 50_000_000:
            rec.snapshots[id(optimizer)] = [(rec.param_name(p), p, p.detach().clone()) for p in params]

    def dtypes(optimizer) -> dict:
        """Floating dtypes of the parameters an optimizer steps and of its state tensors."""
        params = [p for g in optimizer.param_groups for p in g["params"]]
        state = [t for st in optimizer.state.values() for t in st.values()
                 if isinstance(t, torch.Tensor) and t.dim()]
        return {"param_dtypes": sorted({rec.short(p.dtype) for p in params
                                        if p.is_floating_point()}),
                "state_dtypes": sorted({rec.short(t.dtype) for t in state
                                        if t.is_floating_point()})}

    def last_model():
        return rec.last_model() if rec.last_model is not None else None

    @guarded
    def opt_post(optimizer, args, kwargs):
        if tls.step_untraced:
            tls.step_untraced = False
            rec.resume_tracing()
        path, line = rec.site()
        model = last_model()
        opt_ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
        info = {"step": rec.step_count, "n_params": len(opt_ids)}
        if model is not None:
            named = list(model.named_parameters())
            model_ids = {id(p) for _, p in named}
            missing = [n for n, p in named if id(p) not in opt_ids and p.requires_grad]
            foreign = len(opt_ids - model_ids)
            info.update(missing_model_params=missing[:200], foreign_params=foreign)
            if id(optimizer) not in rec.opt_seen:
                rec.opt_seen.add(id(optimizer))
                rec.add("optimizers", {"path": path or "", "line": line,
                                       "cls": type(optimizer).__name__, "n_params": len(opt_ids),
                                       "model": type(model).__name__,
                                       "missing_model_params": missing[:200],
                                       "foreign_params": foreign,
                                       "frozen_in_groups": [n for n, p in named if id(p) in opt_ids
                                                            and not p.requires_grad][:200],
                                       "optimizer_built_at": built(rec.opt_built, optimizer),
                                       "model_built_at": built(rec.built_at, model),
                                       "replaced_built_at": replaced(optimizer, model),
                                       **dtypes(optimizer)})
        snap = rec.snapshots.pop(id(optimizer), None)
        if snap and rec.steps:
            diffs = torch.stack([(p.detach().float() - old.float()).abs().max()
                                 if p.numel() else torch.zeros((), device=p.device)
                                 for _, p, old in snap]).tolist() if snap else []
            change = rec.steps[-1].setdefault("param_change", {})
            for (name, _, _), d in zip(snap, diffs):
                change[name] = max(change.get(name, 0.0), float(d))
        if rec.steps:
            rec.steps[-1]["optimizer_steps"] = rec.steps[-1].get("optimizer_steps", 0) + 1
        rec.opt_after_backward = False
        rec.record("optimizer.step", path, line, info)
        if rec.budget_spent():
            rec.stop_for_budget()

    rec.handles.append(optim_mod.register_optimizer_step_pre_hook(opt_pre))
    rec.handles.append(optim_mod.register_optimizer_step_post_hook(opt_post))

    def zero_grad_wrapper(original):
        def zero_grad(self, *args, **kwargs):
            note_zero_grad(self, args, kwargs)
            return original(self, *args, **kwargs)
        return zero_grad

    @guarded
    def note_zero_grad(obj, args, kwargs):
        path, line = rec.site()
        set_to_none = kwargs.get("set_to_none", args[0] if args else True)
        # a module without trainable parameters (a frozen EMA teacher) resets no gradient the
        # optimizer steps: counting it would hide gradients accumulating across steps
        if not isinstance(obj, nn.Module) or any(p.requires_grad for p in obj.parameters()):
            rec.cur["zero_grad"] += 1
        rec.record("zero_grad", path, line, {"set_to_none": bool(set_to_none),
                                             "step": rec.step_count, "owner": type(obj).__name__,
                                             "after_backward": rec.opt_after_backward})

    rec.patch(torch.optim.Optimizer, "zero_grad", zero_grad_wrapper)
    rec.patch(nn.Module, "zero_grad", zero_grad_wrapper)

    # -- construction sites: which call built the optimizer, and the model it lacks ---------------
    def opt_init_wrapper(original):
        def __init__(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if not tls.busy:
                note_built(rec.opt_built, self, "optimizer")
                rec.new_phase()
            return out
        return __init__

    def module_init_wrapper(original):
        def __init__(self, *args, **kwargs):
            if not tls.busy:
                note_built(rec.built_at, self, "module")
            return original(self, *args, **kwargs)
        return __init__

    @guarded
    def note_built(table, obj, kind):
        own = obj

        def own_init(frame):
            # the object's own __init__ (and its bases'): the construction call is above them
            return frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is own

        stack = rec.stack(2, skip=own_init)
        if stack:
            rec.cause_seq += 1
            # with the object's weakref: a deep copy (no __init__) may get a dead object's id
            table[id(obj)] = (weakref.ref(obj), {
                "kind": kind, "path": stack[0][0], "line": stack[0][1], "stack": stack,
                "seq": rec.cause_seq, "cls": type(obj).__name__})

    def built(table, obj):
        entry = table.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def replaced(optimizer, model):
        """The construction of ``model``'s class latest before the optimizer's, when ``model``
        came after it: the instance the optimizer was built over (often freed by now)."""
        made, now = built(rec.opt_built, optimizer), built(rec.built_at, model)
        if not made or not now or now["seq"] < made["seq"]:
            return None
        earlier = [info for _, info in rec.built_at.values()
                   if info["cls"] == now["cls"] and info["seq"] < made["seq"]]
        return max(earlier, key=lambda info: info["seq"], default=None)

    rec.patch(torch.optim.Optimizer, "__init__", opt_init_wrapper)
    rec.patch(torch.nn.Module, "__init__", module_init_wrapper)
