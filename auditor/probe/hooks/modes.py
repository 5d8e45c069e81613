"""Module modes: ``train()`` / ``eval()`` at user level."""

from __future__ import annotations



def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls

    def train_wrapper(original, kind):
        def train(self, *args, **kwargs):
            outer = tls.train_depth == 0
            tls.train_depth += 1
            try:
                if outer:
                    note_mode(self, kind, args, kwargs)
                return original(self, *args, **kwargs)
            finally:
                tls.train_depth -= 1
        return train

    @guarded
    def note_mode(module, kind, args, kwargs):
        mode = False if kind == "eval" else bool(kwargs.get("mode", args[0] if args else True))
        cause = rec.cause("eval" if not mode else "train", rec.stack(1),
                          module=type(module).__name__, mode=mode,
                          name=rec.module_names.get(id(module)),
                          is_root=rec.module_names.get(id(module)) == ""
                          if id(module) in rec.model_of else None)
        # the call that left each (sub)module in eval mode: a backward in eval mode names it
        for m in module.modules():
            if mode:
                rec.mode_cause.pop(id(m), None)
            elif cause is not None:
                rec.mode_cause[id(m)] = cause

    rec.patch(nn.Module, "train", lambda o: train_wrapper(o, "train"))
    rec.patch(nn.Module, "eval", lambda o: train_wrapper(o, "eval"))
