"""Autograd: the backward that closes each step, and what cuts or freezes gradients (``.detach()``,
``.data``, ``requires_grad_``).
"""

from __future__ import annotations


MAX_CUTS = 16  # .detach()/.data calls on graph tensors kept per step


def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls

    def backward_wrapper(original, tensors_of):
        def wrapper(*args, **kwargs):
            if tls.in_backward or tls.busy:
                return original(*args, **kwargs)
            ctx = None
            tls.busy += 1
            try:
                tls.depth = 0  # a forward that raised leaves no stale nesting
                if rec.budget_spent():
                    rec.stop_for_budget()
                ctx = rec.before_backward(tensors_of(args, kwargs), rec.site())
            except Exception:
                ctx = None
            finally:
                tls.busy -= 1
            tls.in_backward = True
            traced = rec.suspend_tracing()  # the backward runs library code only
            try:
                return original(*args, **kwargs)
            finally:
                tls.in_backward = False
                if traced:
                    rec.resume_tracing()
                if ctx is not None:
                    guarded(rec.after_backward)(ctx)
        return wrapper

    def tensor_args(args, kwargs):
        return [args[0]]

    def autograd_args(args, kwargs):
        t = args[0] if args else kwargs.get("tensors")
        if isinstance(t, torch.Tensor):
            return [t]
        return [x for x in (t or ()) if isinstance(x, torch.Tensor)]

    rec.patch(torch.Tensor, "backward", lambda o: backward_wrapper(o, tensor_args))
    rec.patch(torch.autograd, "backward", lambda o: backward_wrapper(o, autograd_args))

    # -- detach / .data / requires_grad_ --------------------------------------------------------
    def detach_wrapper(original):
        def detach(self):
            if not tls.busy:
                where = rec.direct_user_caller(2)
                if where is not None:
                    note_tensor("detach", self, where)
            return original(self)
        return detach

    @guarded
    def note_tensor(kind, t, where):
        gf = t.grad_fn
        if gf is not None and len(rec.cur["cuts"]) < MAX_CUTS:
            # which parameters this cut separates from the loss is decided at the backward
            rec.cur["cuts"].append((kind, where, rec.stack(3), gf))
        rec.record(kind, where[0], where[1], {
            "requires_grad": bool(t.requires_grad), "grad_fn": type(gf).__name__ if gf else None,
            "shape": list(t.shape), "is_param": id(t) in rec.param_names,
            "step": rec.step_count})

    rec.patch(torch.Tensor, "detach", detach_wrapper)
    base_data = None
    for klass in type.mro(torch.Tensor):
        if "data" in vars(klass) and klass is not torch.Tensor:
            base_data = vars(klass)["data"]
            break
    if base_data is not None and "data" not in vars(torch.Tensor):
        def data_get(self):
            if not tls.busy:
                where = rec.direct_user_caller(2)
                if where is not None:
                    note_tensor("data", self, where)
            return base_data.__get__(self, type(self))

        def data_set(self, value):
            base_data.__set__(self, value)

        torch.Tensor.data = property(data_get, data_set)
        rec.patches.append((torch.Tensor, "data", base_data, False))

    def requires_grad_wrapper(original):
        def requires_grad_(self, requires_grad=True):
            if not tls.busy:
                if isinstance(self, nn.Parameter):
                    # Module.requires_grad_ calls this from torch: the user frame above counts
                    note_freeze(self, requires_grad, "requires_grad_")
                else:
                    where = rec.direct_user_caller(2)
                    if where is not None:
                        rec.record("requires_grad_", where[0], where[1], {
                            "flag": bool(requires_grad), "param": None, "is_param": False})
            return original(self, requires_grad)
        return requires_grad_

    @guarded
    def note_freeze(p, flag, kind):
        cause = rec.cause(kind, rec.stack(2), flag=bool(flag), param=rec.param_names.get(id(p)),
                          is_param=True)
        if flag:
            rec.frozen_cause.pop(id(p), None)
        elif cause is not None:
            rec.frozen_cause[id(p)] = cause

    rec.patch(torch.Tensor, "requires_grad_", requires_grad_wrapper)
    # `p.requires_grad = False` on parameters: a property over torch's own descriptor, on
    # nn.Parameter only (plain tensors set requires_grad inside torch all the time)
    base_rg = next((vars(k)["requires_grad"] for k in type.mro(nn.Parameter)
                    if "requires_grad" in vars(k)), None)
    if base_rg is not None and "requires_grad" not in vars(nn.Parameter):
        def rg_set(self, value):
            base_rg.__set__(self, value)
            if not tls.busy:
                note_freeze(self, value, "requires_grad")

        nn.Parameter.requires_grad = property(base_rg.__get__, rg_set)
        rec.patches.append((nn.Parameter, "requires_grad", base_rg, False))
