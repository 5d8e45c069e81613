"""Random number generators: every seeding call (``random``, numpy, torch, cuda, dgl), where it ran
and with which value; draws are found by comparing generator states (``Recorder.check_rngs``),
except DGL's, whose state cannot be read: its draws are seen at the calls that take from it.
A fresh numpy ``Generator`` built without a seed in user code is recorded where it was built.
"""

from __future__ import annotations

import sys

# DGL's own generator (C++, seeded only by ``dgl.seed``) is taken from through these C API
# functions, whichever DGL entry point runs them: ``dgl.random.choice`` (``rand_graph``,
# ``rand_bipartite``, ``sample_labors`` without a ``random_seed``), the neighbour samplers (what the
# dataloaders' samplers call), random walks, global negative sampling, graclus matching. Module
# (under dgl) -> function -> position of its fan-out argument, None when every call draws: a
# fan-out of -1 for every edge type takes all neighbours and draws nothing.
DGL_DRAWS = {
    "random": {"_CAPI_Choice": None},
    "sampling.neighbor": {"_CAPI_DGLSampleNeighbors": 2, "_CAPI_DGLSampleNeighborsFused": 3,
                          "_CAPI_DGLSampleNeighborsEType": 3, "_CAPI_DGLSampleNeighborsBiased": 2},
    "sampling.randomwalks": {"_CAPI_DGLSamplingRandomWalk": None,
                             "_CAPI_DGLSamplingRandomWalkWithRestart": None,
                             "_CAPI_DGLSamplingRandomWalkWithStepwiseRestart": None},
    "sampling.node2vec_randomwalk": {"_CAPI_DGLSamplingNode2vec": None},
    "sampling.negative": {"_CAPI_DGLGlobalUniformNegativeSampling": None},
    "geometry.capi": {"_CAPI_NeighborMatching": None},
}


def install_random(rec, random) -> None:
    seed_wrap(rec, random, "seed", "random", "random.seed")
    rec.rng_state.update(rec.rng_states())


def install(rec, torch) -> None:
    seed_wrap(rec, torch, "manual_seed", "torch", "torch.manual_seed")
    seed_wrap(rec, torch.random, "manual_seed", "torch", "torch.manual_seed")
    seed_wrap(rec, torch.cuda, "manual_seed", "cuda", "torch.cuda.manual_seed")
    seed_wrap(rec, torch.cuda, "manual_seed_all", "cuda", "torch.cuda.manual_seed_all")
    seed_wrap(rec, torch, "seed", "torch", "torch.seed")


def install_numpy(rec, np) -> None:
    if hasattr(np, "random"):
        seed_wrap(rec, np.random, "seed", "numpy", "np.random.seed")
        fresh_generator_wrap(rec, np.random)
    rec.rng_state.update({k: v for k, v in rec.rng_states().items() if k not in rec.rng_state})


def install_dgl(rec, dgl) -> None:
    seed_wrap(rec, dgl, "seed", "dgl", "dgl.seed")
    if hasattr(dgl, "random"):
        seed_wrap(rec, dgl.random, "seed", "dgl", "dgl.seed")
    for name in DGL_DRAWS:
        module = sys.modules.get(f"dgl.{name}")
        if module is not None:
            draw_wrap(rec, module, DGL_DRAWS[name])


def install_dgl_geometry(rec, geometry) -> None:
    """``dgl.geometry`` is imported on its own (``import dgl`` does not load it)."""
    draw_wrap(rec, sys.modules.get("dgl.geometry.capi"), DGL_DRAWS["geometry.capi"])


def draw_wrap(rec, module, functions: dict) -> None:
    """Each draw from DGL's generator: counted, at the user call that led to it."""
    if module is None:
        return

    def make(original, fanout_at):
        def draw(*args, **kwargs):
            note(fanout_at, args)
            return original(*args, **kwargs)
        return draw

    @rec.guarded
    def note(fanout_at, args):
        if fanout_at is None or fanout_at >= len(args) or not _takes_all(args[fanout_at]):
            rec.note_draw("dgl", rec.stack())

    for attr, fanout_at in functions.items():
        rec.patch(module, attr, lambda o, at=fanout_at: make(o, at))


def _takes_all(fanout) -> bool:
    """A fan-out of -1 for every edge type (an int, or DGL's int64 array of them)."""
    values = fanout.asnumpy().ravel().tolist() if hasattr(fanout, "asnumpy") else [fanout]
    return bool(values) and all(v == -1 for v in values)


def fresh_generator_wrap(rec, random) -> None:
    """``np.random.default_rng()`` with no seed, called by user code itself: a generator seeded
    from OS entropy, which no global seed reaches (libraries building their own are not
    recorded)."""
    def make(original):
        def default_rng(*args, **kwargs):
            if (args[0] if args else kwargs.get("seed")) is None:
                note(sys._getframe(1))
            return original(*args, **kwargs)
        return default_rng

    @rec.guarded
    def note(caller):
        if rec.rel(caller.f_code.co_filename) is not None:
            stack = rec.stack_from(caller)
            rec.record("fresh_rng", *stack[0], {"fn": "numpy.random.default_rng",
                                                  "step": rec.step_count}, stack=stack)

    rec.patch(random, "default_rng", make)


def seed_wrap(rec, module, attr: str, rng: str, fname: str) -> None:
    def make(original):
        def seed(*args, **kwargs):
            outer = rec.tls.seed_depth == 0
            rec.tls.seed_depth += 1
            try:
                if outer:
                    note(args, kwargs)
                return original(*args, **kwargs)
            finally:
                rec.tls.seed_depth -= 1
                if outer:
                    rec.guarded(lambda: rec.rng_state.update(rec.rng_states()))()
        return seed

    @rec.guarded
    def note(args, kwargs):
        rec.check_rngs()
        path, line = rec.site()
        value = args[0] if args else kwargs.get("seed", kwargs.get("a"))
        value = value if isinstance(value, (int, float, str, type(None))) else str(value)
        rec.add("seeds", {"fn": fname, "rng": rng, "path": path or "", "line": line, "value": value})
        rec.record("seed", path, line, {"fn": fname, "rng": rng, "value": value})

    rec.patch(module, attr, make)
