"""Contexts: grad modes (``no_grad``, ``inference_mode``, ``set_grad_enabled``), autocast,
GradScaler.
"""

from __future__ import annotations

import sys


def install(rec, torch) -> None:
    guarded = rec.guarded
    tls = rec.tls

    def enter_wrapper(original, kind, attr):
        def enter(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if not tls.busy:
                note_ctx(self, kind, attr, sys._getframe(1))
            return out
        return enter

    @guarded
    def note_ctx(obj, kind, attr, frame):
        if kind == "autocast":
            path, line = rec.site()
        else:
            # torch switches grad modes internally all the time (optimizer.step...): only a
            # `with` or decorator written in user code counts
            decorated = None
            while frame is not None and frame.f_code.co_filename.endswith("_contextlib.py"):
                decorated = frame.f_locals.get("func", decorated)
                frame = frame.f_back
            path = rec.rel(frame.f_code.co_filename) if frame is not None else None
            line = frame.f_lineno if frame is not None else 0
            mode = getattr(obj, attr, None) if attr else None
            off = kind == "no_grad" or (kind == "inference_mode" and mode is not False) or (
                kind == "set_grad_enabled" and mode is False)
            if path is not None and off:
                # the latest gradient switch-off in user code, with its frame: a root forward
                # that runs with gradients off while that frame is still running names it
                stack = rec.stack_from(frame)
                code = getattr(decorated, "__code__", None)
                where = rec.rel(code.co_filename) if code is not None else None
                if where is not None:
                    # a decorated function: its decorator (co_firstlineno) switched them off
                    path, line = where, code.co_firstlineno
                    stack = [[path, line], *stack]
                tls.grad_off = (frame, stack, where is not None)
        if kind == "autocast":
            args = {"device": getattr(obj, "device", ""), "dtype": rec.short(getattr(obj, "fast_dtype", "")),
                    "enabled": bool(getattr(obj, "_enabled", True))}
        else:
            args = {"mode": getattr(obj, attr, None) if attr else None}
        rec.record(kind, path, line, args)

    rec.patch(torch.no_grad, "__enter__", lambda o: enter_wrapper(o, "no_grad", ""))
    rec.patch(torch.enable_grad, "__enter__", lambda o: enter_wrapper(o, "enable_grad", ""))
    rec.patch(torch.set_grad_enabled, "__init__", lambda o: enter_wrapper(o, "set_grad_enabled", "mode"))
    rec.patch(torch.inference_mode, "__enter__", lambda o: enter_wrapper(o, "inference_mode", "mode"))
    rec.patch(torch.autocast, "__enter__", lambda o: enter_wrapper(o, "autocast", ""))

    def scaler_wrapper(original, kind):
        def method(self, *args, **kwargs):
            note_scaler(self, kind)
            return original(self, *args, **kwargs)
        return method

    @guarded
    def note_scaler(obj, kind):
        if kind == "scaler.scale":
            rec.cur["scaler"] = bool(getattr(obj, "_enabled", True))
        path, line = rec.site()
        rec.record(kind, path, line, {"enabled": bool(getattr(obj, "_enabled", True))})

    scaler_classes = {getattr(getattr(torch, "amp", None), "GradScaler", None),
                      getattr(torch.cuda.amp, "GradScaler", None)}
    for cls in scaler_classes - {None}:
        for m in ("scale", "step", "update", "unscale_"):
            if m in vars(cls):
                rec.patch(cls, m, lambda o, k=f"scaler.{m.rstrip('_')}": scaler_wrapper(o, k))

    # -- modules cast to low precision: the cause of a low-precision loss -----------------------
    low = (torch.float16, torch.bfloat16)

    def cast_wrapper(original, kind):
        def cast(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if not tls.busy:
                note_cast(self, kind, args, kwargs)
            return out
        return cast

    @guarded
    def note_cast(module, kind, args, kwargs):
        dtype = {"half": torch.float16, "bfloat16": torch.bfloat16}.get(kind)
        if kind == "to":
            dtype = kwargs.get("dtype") or next(
                (a for a in args if isinstance(a, torch.dtype)), None)
        if dtype not in low:
            return
        cause = rec.cause("cast", rec.stack(1), dtype=rec.short(dtype),
                          module=type(module).__name__)
        for m in module.modules() if cause is not None else ():
            rec.cast_cause[id(m)] = cause

    for kind in ("half", "bfloat16", "to"):
        rec.patch(torch.nn.Module, kind, lambda o, k=kind: cast_wrapper(o, k))
