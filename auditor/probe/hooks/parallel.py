"""DistributedDataParallel construction: is there a process group, and how large is the world?"""

from __future__ import annotations



def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded

    def ddp_init_wrapper(original):
        def __init__(self, *args, **kwargs):
            note_ddp(self, args, kwargs)
            return original(self, *args, **kwargs)
        return __init__

    @guarded
    def note_ddp(obj, args, kwargs):
        dist = torch.distributed
        init = bool(dist.is_available() and dist.is_initialized())
        info = {"pg_initialized": init, "world_size": dist.get_world_size() if init else 1,
                "backend": str(dist.get_backend()) if init else "",
                "module": type(args[0] if args else kwargs.get("module")).__name__}
        if init:
            rec.rank = dist.get_rank()
            rec.world_size = dist.get_world_size()
        path, line = rec.site()
        rec.add("ddp", {"path": path or "", "line": line, **info})
        rec.record("ddp", path, line, info)
        rec.flush(force=True)

    rec.patch(nn.parallel.DistributedDataParallel, "__init__", ddp_init_wrapper)
