"""Loading: ``torch.load`` and ``Module.load_state_dict`` (keys missing or unexpected, parameters
changed).
"""

from __future__ import annotations



def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls

    def load_wrapper(original):
        def load(*args, **kwargs):
            note_load(args, kwargs)
            return original(*args, **kwargs)
        return load

    @guarded
    def note_load(args, kwargs):
        path, line = rec.site()
        wo = kwargs.get("weights_only")
        f = args[0] if args else kwargs.get("f")
        info = {"weights_only": wo, "file": f if isinstance(f, str) else str(type(f).__name__)}
        rec.add("loads", {"kind": "torch.load", "path": path or "", "line": line,
                          "weights_only": wo, "step": rec.step_count})
        rec.record("torch.load", path, line, info)

    rec.patch(torch, "load", load_wrapper)
    rec.patch(torch.serialization, "load", load_wrapper)

    def lsd_wrapper(original):
        def load_state_dict(self, state_dict, *args, **kwargs):
            if tls.busy:
                return original(self, state_dict, *args, **kwargs)
            strict = kwargs.get("strict", args[0] if args else True)
            before = snapshot_params(self)
            result, error = None, None
            try:
                result = original(self, state_dict, *args, **kwargs)
                return result
            except Exception as exc:
                error = exc
                raise
            finally:
                note_lsd(self, strict, result, error, before, state_dict)
        return load_state_dict

    @guarded
    def snapshot_params(module):
        params = list(module.parameters())
        if sum(p.numel() for p in params) > 50_000_000:
            return None
        return [(p, p.detach().clone()) for p in params]

    @guarded
    def note_lsd(module, strict, result, error, before, state_dict):
        path, line = rec.site()
        missing = list(getattr(result, "missing_keys", []) or [])
        unexpected = list(getattr(result, "unexpected_keys", []) or [])
        if error is not None:
            text = str(error)
            missing = _keys_after(text, "Missing key(s) in state_dict:")
            unexpected = _keys_after(text, "Unexpected key(s) in state_dict:")
        changed = 0
        if before:
            for p, old in before:
                if p.shape != old.shape or not torch.equal(p.detach(), old):
                    changed += 1
        for _, m in module.named_modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                rec.bn_versions[id(m)] = rec.bn_state(m)
        # missing keys of a module that got its other keys: a checkpoint cut short, never the
        # new head a fine-tuning load leaves out on purpose (whole modules missing)
        loaded = {k.rpartition(".")[0] for k in state_dict.keys()} if hasattr(state_dict, "keys") else set()
        partial = [k for k in missing if k.rpartition(".")[0] in loaded]
        info = {"kind": "load_state_dict", "path": path or "", "line": line, "strict": bool(strict),
                "missing": missing[:200], "unexpected": unexpected[:200], "partial": partial[:200],
                "module": type(module).__name__, "changed": changed, "step": rec.step_count,
                "_module_id": id(module)}
        rec.add("loads", info)
        rec.record("load_state_dict", path, line, {k: info[k] for k in
                                                   ("strict", "missing", "unexpected", "partial",
                                                    "module", "changed")})

    rec.patch(nn.Module, "load_state_dict", lsd_wrapper)


def _keys_after(text: str, marker: str) -> list:
    if marker not in text:
        return []
    rest = text.split(marker, 1)[1].split(". ", 1)[0]
    return [k.strip().strip('"') for k in rest.split(",") if k.strip()]
