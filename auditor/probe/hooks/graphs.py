"""DGL graphs: ``add_self_loop`` / ``remove_self_loop`` calls and the self loops of their results.
"""

from __future__ import annotations


# graphs recorded per call site, with and without duplicate self loops: a dataset built with
# thousands of add_self_loop calls must not use up the run's records before training starts
PER_SITE = 8


def install(rec, dgl) -> None:
    guarded = rec.guarded
    seen: dict[tuple, int] = {}

    def self_loop_wrapper(original, kind):
        def op(g, *args, **kwargs):
            before = facts(g)
            out = original(g, *args, **kwargs)
            # each guarded hook body runs alone: `note` cannot ask `facts` itself
            note(kind, before, facts(out))
            return out
        return op

    @guarded
    def facts(g):
        return rec.graph_facts(g) if rec.torch is not None and rec.is_graph(g) else None

    @guarded
    def note(kind, before, after):
        stack = rec.stack(1)
        if not stack:
            return
        path, line = stack[0]
        rec.record(kind, path, line, {"before": before, "after": after, "step": rec.step_count},
                   stack=stack)
        site = (kind, path, line, bool(after and after["multi_loop_nodes"]))
        seen[site] = seen.get(site, 0) + 1
        if after and seen[site] <= PER_SITE:
            rec.add("graphs", {"path": path, "line": line, "where": kind, "module": "",
                               "step": rec.step_count, "stack": stack, **after})

    for kind in ("add_self_loop", "remove_self_loop"):
        for mod in (dgl, getattr(dgl, "transforms", None),
                    getattr(getattr(dgl, "transforms", None), "functional", None)):
            if mod is not None and hasattr(mod, kind):
                rec.patch(mod, kind, lambda o, k=kind: self_loop_wrapper(o, k))
        if hasattr(dgl, "DGLGraph") and kind in vars(dgl.DGLGraph):
            rec.patch(dgl.DGLGraph, kind, lambda o, k=kind: self_loop_wrapper(o, k))
