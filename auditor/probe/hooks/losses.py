"""Losses: ``torch.nn.functional`` loss calls (reduction, dtype, value, prediction statistics),
``F.normalize`` of predicted directions, and the summing reductions whose scale the backward
later measures (GM401): full ``.sum()`` / ``torch.sum`` in user code and losses with
``reduction='sum'``, each at its cause site (an ``nn`` loss module's: its construction).
"""

from __future__ import annotations

import inspect
import sys
import weakref

LOSS_FUNCTIONS = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "soft_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
)
MAX_SUMS = 16  # summing reductions with a graph kept per step


def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls

    F = nn.functional

    def loss_wrapper(original, fname):
        try:
            names = list(inspect.signature(original).parameters)
        except (TypeError, ValueError):
            names = []
        idx = {n: i for i, n in enumerate(names)}

        def loss(*args, **kwargs):
            outer = tls.loss_depth == 0 and not tls.busy
            tls.loss_depth += 1
            try:
                out = original(*args, **kwargs)
            finally:
                tls.loss_depth -= 1
            if outer:
                note_loss(fname, idx, args, kwargs, out)
            return out
        return loss

    def arg(idx, args, kwargs, name, default=None):
        if name in kwargs:
            return kwargs[name]
        i = idx.get(name)
        return args[i] if i is not None and i < len(args) else default

    @guarded
    def note_loss(fname, idx, args, kwargs, out):
        path, line = rec.site()
        reduction = arg(idx, args, kwargs, "reduction", "mean")
        size_average, reduce = arg(idx, args, kwargs, "size_average"), arg(idx, args, kwargs, "reduce")
        if size_average is not None or reduce is not None:
            reduction = nn._reduction.legacy_get_string(size_average, reduce, emit_warning=False)
        inp = arg(idx, args, kwargs, "input")
        tgt = arg(idx, args, kwargs, "target")
        item = {"path": path or "", "line": line, "fn": fname, "reduction": str(reduction),
                "dtype": rec.short(out.dtype) if isinstance(out, torch.Tensor) else "",
                "step": rec.step_count, "autocast": rec.autocast_state(),
                "graded": isinstance(out, torch.Tensor) and out.grad_fn is not None}
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            item["value"] = float(out.detach().float().item())
        if isinstance(inp, torch.Tensor):
            item["input_dtype"] = rec.short(inp.dtype)
            item["numel"] = int(inp.numel())
            item["batch"] = int(inp.shape[0]) if inp.dim() else 1
            if (isinstance(tgt, torch.Tensor) and inp.is_floating_point() and tgt.is_floating_point()
                    and inp.shape == tgt.shape and inp.dim() >= 1 and inp.shape[0] > 1):
                p = inp.detach().float().reshape(inp.shape[0], -1)
                t = tgt.detach().float().reshape(tgt.shape[0], -1)
                stats = torch.stack([p.std(0).mean(), t.std(0).mean(), p.pow(2).mean().sqrt(),
                                     t.pow(2).mean().sqrt()]).tolist()
                item.update(pred_std=stats[0], target_std=stats[1], pred_rms=stats[2],
                            target_rms=stats[3])
        rec.add("losses", item)
        if isinstance(out, torch.Tensor) and out.grad_fn is not None and out.numel() == 1:
            rec.cur["components"].append((f"{fname}@{path}:{line}", weakref.ref(out)))
        rec.record("loss", path, line, {k: item.get(k) for k in
                                        ("fn", "reduction", "dtype", "value", "numel")})
        if item["reduction"] == "sum" and isinstance(inp, torch.Tensor):
            note_sum(out, inp, loss_module_site() or rec.stack(2), fname)

    def loss_module_site():
        """The construction of the ``nn`` loss module (``nn.MSELoss(reduction='sum')``) whose
        forward made this loss call: where its reduction was chosen; None for a direct call."""
        f = sys._getframe(3)
        while f is not None and rec.rel(f.f_code.co_filename) is None:
            module = f.f_locals.get("self")
            if isinstance(module, loss_base):
                entry = rec.built_at.get(id(module))
                return entry[1]["stack"] if entry is not None and entry[0]() is module else None
            f = f.f_back
        return None

    def note_sum(out, inp, stack, fn):
        """A summing reduction with a graph, at a detailed step: a tensor hook catches the
        gradient the step's backward brings to it (``Recorder.sum_reductions`` weighs it)."""
        sums = rec.cur["sums"]
        if (stack and len(sums) < MAX_SUMS and isinstance(out, torch.Tensor)
                and out.grad_fn is not None and out.numel() == 1 and inp.dim() >= 1
                and rec.detailed_step()):
            info = {"fn": fn, "path": stack[0][0], "line": stack[0][1], "stack": stack,
                    "rows": int(inp.shape[0]), "numel": int(inp.numel()),
                    "scale": rec.row_scale(out.grad_fn), "value": out.detach()}

            def caught(grad, info=info):
                info["grad"] = grad.detach()

            out.register_hook(caught)
            sums.append(info)

    for name in LOSS_FUNCTIONS:
        if hasattr(F, name):
            rec.patch(F, name, lambda o, n=name: loss_wrapper(o, n))
    loss_base = nn.modules.loss._Loss

    # -- full sums in user code: `err.sum()`, `torch.sum(err)` -----------------------------------
    def sum_wrapper(original, method):
        def full_sum(*args, **kwargs):
            out = original(*args, **kwargs)
            # the full reduction only (no dim), called by user code itself, on a graph
            if (not tls.busy and len(args) == 1 and not kwargs and rec.detailed_step()
                    and isinstance(out, torch.Tensor) and out.grad_fn is not None):
                where = rec.direct_user_caller(2)
                if where is not None:
                    guarded(note_full_sum)(out, args[0], method)
            return out
        return full_sum

    def note_full_sum(out, inp, method):
        if isinstance(inp, torch.Tensor):
            note_sum(out, inp, rec.stack(3), ".sum()" if method else "torch.sum")

    rec.patch(torch.Tensor, "sum", lambda o: sum_wrapper(o, True))
    rec.patch(torch, "sum", lambda o: sum_wrapper(o, False))

    def normalize_wrapper(original):
        def normalize(input, *args, **kwargs):
            if not tls.busy and isinstance(input, torch.Tensor) and input.requires_grad:
                note_normalize(input, args, kwargs)
            return original(input, *args, **kwargs)
        return normalize

    @guarded
    def note_normalize(inp, args, kwargs):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else 1)
        p = kwargs.get("p", args[0] if args else 2.0)
        if p != 2 and p != 2.0 or not inp.is_floating_point():
            return
        size = int(inp.shape[dim]) if inp.dim() else 0
        if size != 3 and not rec.detailed_step():
            return  # direction vectors (GM703) are measured at every step, the rest when detailed
        path, line = rec.site()
        if path is None:
            return
        mean_norm = float(inp.detach().float().norm(dim=dim).mean())
        rec.add("outputs", {"path": path, "line": line, "kind": "normalize", "step": rec.step_count,
                            "mean_norm": mean_norm, "dim_size": size})
        rec.record("normalize", path, line, {"mean_norm": mean_norm, "dim_size": size})

    rec.patch(F, "normalize", normalize_wrapper)
