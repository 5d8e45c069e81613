"""Random number generators: every seeding call (``random``, numpy, torch, cuda, dgl), where it ran
and with which value; draws are found by comparing generator states (``Recorder.check_rngs``).
"""

from __future__ import annotations


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
    rec.rng_state.update({k: v for k, v in rec.rng_states().items() if k not in rec.rng_state})


def install_dgl(rec, dgl) -> None:
    seed_wrap(rec, dgl, "seed", "dgl", "dgl.seed")
    if hasattr(dgl, "random"):
        seed_wrap(rec, dgl.random, "seed", "dgl", "dgl.seed")


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
