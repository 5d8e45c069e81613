"""Losses: ``torch.nn.functional`` loss calls (reduction, dtype, value, prediction statistics) and
``F.normalize`` of predicted directions.
"""

from __future__ import annotations

import inspect
import weakref

LOSS_FUNCTIONS = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "soft_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
)


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
                "step": rec.step_count, "autocast": rec.autocast_state()}
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

    for name in LOSS_FUNCTIONS:
        if hasattr(F, name):
            rec.patch(F, name, lambda o, n=name: loss_wrapper(o, n))

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
        path, line = rec.site()
        if path is None:
            return
        size = int(inp.shape[dim]) if inp.dim() else 0
        mean_norm = float(inp.detach().float().norm(dim=dim).mean())
        rec.add("outputs", {"path": path, "line": line, "kind": "normalize", "step": rec.step_count,
                            "mean_norm": mean_norm, "dim_size": size})
        rec.record("normalize", path, line, {"mean_norm": mean_norm, "dim_size": size})

    rec.patch(F, "normalize", normalize_wrapper)
