"""Snapshot mode of the probe's recorder, for ``gm-audit diff``.

Loaded by ``auditor/probe/recorder.py`` by file path when ``GM_AUDIT_DIFF_DIR`` is set (it imports
nothing of gm-audit and only the standard library at module level: it runs inside the user's
program). It seeds every RNG at start-up (``random`` now, numpy / torch (and so CUDA) as soon as
the program imports them) with ``GM_AUDIT_DIFF_SEED``; DGL's only if the program has not seeded it
itself by its first draw from it or its first training step. (A ``dgl.seed`` made while DGL runs
several OpenMP threads left the program's own later ``set_num_threads(1)`` and ``dgl.seed``
unreproducible under CPU load: 3 runs in 8 drew other graphs.) Then it records, per training step
of the step budget, by object identity:

* ``init``: parameters and buffers of every candidate model before the first forward,
* ``input``: facts of each DGL graph entering a module (counts, self loops, in-degree histogram);
  the tensors entering a root forward, by module; the batch: the DataLoader's latest batch as the
  step starts, and the node and edge features of each graph entering a root forward, by order of
  arrival; the masks (``torch.randperm`` called directly by user code); the program's seeding and
  draws of each global RNG,
* ``mode``: the ``training`` flag of every module at the step's first forward,
* ``forward``: the outputs of every module,
* ``loss``: the backpropagated tensor, and the root model's scalar outputs (loss components),
* ``grad``: the norm of the ``.grad`` each parameter holds as the backward starts (``stale``),
  ``.grad`` of every parameter after the backward,
* ``update``: the parameters and buffers after the first ``optimizer.step()`` that follows it, taken
  again when the next training step starts (what happened in between counts: an extra forward in
  training mode moves the BatchNorm running statistics),
* ``lines``: the watched lines (static findings) that first ran during the step; ``lines_after``
  of the document: those that first ran after the last recorded step.

``gm-audit diff --outcome`` sets ``GM_AUDIT_DIFF_OUTCOME`` to a number of steps W: the run goes on
past the recorded steps to the recorder's own step budget, and the document's ``outcome`` holds
the masked entities' target and reconstructed rows of the last W training steps (the recorder
finds them: ``Recorder.note_reconstruction``).

The steps recorded: ``GM_AUDIT_DIFF_STEPS`` (the recorder is given one more, so that the process
lives on to the start of the next step); the run stops there, or, when ``GM_AUDIT_DIFF_STOP``
names a file that holds a step count (the other run, in ``--steps auto``, stopped after that many),
at the first step start past it.

Names are resolved at the backward, once the trained model is known: the top-level module (found
in the user's frames) whose parameters the loss's autograd graph reaches most, unwrapped from
DistributedDataParallel / DataParallel / ``torch.compile``, so names are stable across scripts
(``encoder.layers.0.fc.weight``) whatever the wrapping or call order. Output:
``$GM_AUDIT_DIFF_DIR/snapshot-<pid>.pt`` (plain dicts, lists and CPU tensors: loadable with
``torch.load(weights_only=True)``), written when the recorder stops or the program exits.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
import weakref

ENV_DIR = "GM_AUDIT_DIFF_DIR"
ENV_SEED = "GM_AUDIT_DIFF_SEED"
ENV_STEPS = "GM_AUDIT_DIFF_STEPS"
ENV_STOP = "GM_AUDIT_DIFF_STOP"
ENV_OUTCOME = "GM_AUDIT_DIFF_OUTCOME"
FULL_NUMEL = 1 << 20  # step 1: tensors up to this size are stored in full
SMALL_NUMEL = 4096  # later steps: only these in full, the rest as summary + hash + sample
SAMPLE = 512
MAX_MASKS = 8
MAX_HIST = 64
WRAPPERS = ("DistributedDataParallel", "DataParallel", "OptimizedModule")
PROGRESS_FILE = "progress"  # --outcome: the steps trained so far, for the progress display
PROGRESS_EVERY_S = 0.5


def strip_prefixes(name: str) -> str:
    """``module.encoder.x`` / ``_orig_mod.encoder.x`` -> ``encoder.x``."""
    while True:
        for prefix in ("module.", "_orig_mod."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        else:
            return "" if name in ("module", "_orig_mod") else name


class Snapshot:
    def __init__(self, rec, out_dir: str, seed: int, steps: int = 0, stop_file: str = "",
                 outcome_steps: int = 0) -> None:
        self.rec = rec
        self.outcome_steps = outcome_steps  # > 0: --outcome (see the module's docstring)
        self.outcome: list[dict] = []
        self.recording = True  # False once the recorded steps are done and the run goes on
        self.progress_at = 0.0
        self.steps_wanted = steps
        self.stop_file = stop_file
        self.lines_seen: set = set()
        self.versions: dict = {}  # name -> (id, version) of the trained model's tensors at the update
        self.dir = out_dir
        self.seed = seed
        self.torch = None
        self.depth = 0
        self.steps: list[dict] = []
        self.cur = None  # capture of the step in progress
        self.masks: list = []  # randperm outputs since the last backward
        self.fetched = None  # the DataLoader's latest batch, until a training step starts
        self.init: dict[int, dict] = {}  # id(top-level module) -> {name: record}
        self.model = None  # weakref of the model the last recorded step trained
        self.dgl_seed = None  # DGL's own ``seed``, until DGL is seeded (see the module's docstring)
        self.written = False
        random.seed(seed)

    # -- start-up seeding, hooks ---------------------------------------------------------------
    def imported(self, name: str, module) -> None:
        """Called by the recorder right after the program imported numpy, torch or dgl."""
        try:
            self.seed_and_hook(name, module)
        except Exception as exc:  # the user's program runs regardless
            sys.stderr.write("gm-audit diff: cannot seed %s: %r\n" % (name, exc))

    def seed_and_hook(self, name: str, module) -> None:
        if name == "numpy" and hasattr(module, "random"):
            module.random.seed(self.seed)
        elif name == "dgl" and hasattr(module, "seed"):
            self.dgl_seed = module.seed  # the function itself: the recorder wraps the attribute
        elif name == "torch":
            self.torch = module
            module.manual_seed(self.seed)  # every CUDA device too, lazily
            self.install_hooks(module)

    def install_hooks(self, torch) -> None:
        rec = self.rec
        mm = torch.nn.modules.module
        # registered before the recorder's own hooks: they run first, in particular before the
        # optimizer hook that ends the process when the step budget is spent
        rec.handles.append(mm.register_module_forward_pre_hook(rec.guarded(self.pre)))
        rec.handles.append(mm.register_module_forward_hook(rec.guarded(self.post)))
        optim = sys.modules.get("torch.optim.optimizer")
        if optim is None:
            import importlib

            optim = importlib.import_module("torch.optim.optimizer")
        rec.handles.append(optim.register_optimizer_step_post_hook(rec.guarded(self.after_step)))
        snap = self

        def randperm_wrapper(original):
            def randperm(*args, **kwargs):
                out = original(*args, **kwargs)
                # training masks only: an evaluation in between samples its own under no_grad
                if not rec.tls.busy and torch.is_grad_enabled() \
                        and rec.direct_user_caller(2) is not None:
                    rec.guarded(snap.note_mask)(out)
                return out
            return randperm

        rec.patch(torch, "randperm", randperm_wrapper)

        def next_wrapper(original):
            def __next__(self):
                out = original(self)
                snap.fetched = out  # the batch the step that starts next trains on
                return out
            return __next__

        rec.patch(torch.utils.data.dataloader._BaseDataLoaderIter, "__next__", next_wrapper)

    def seed_dgl(self) -> None:
        """Before DGL's first draw or the first training step: seed DGL's generator, unless the
        program did so itself."""
        seed, self.dgl_seed = self.dgl_seed, None
        if seed is not None and not any(s.get("rng") == "dgl" for s in self.rec.lists["seeds"]):
            seed(self.seed)

    def budget(self) -> int:
        return self.steps_wanted or self.rec.budget_steps or 1

    def stop_requested(self) -> bool:
        """The other run stopped after as many steps as this one has recorded (``--steps auto``)."""
        if not self.stop_file or not os.path.exists(self.stop_file):
            return False
        try:
            with open(self.stop_file, encoding="utf-8") as fh:
                return len(self.steps) >= int(fh.read().strip() or 0)
        except (OSError, ValueError):
            return False

    def new_lines(self) -> list:
        """Watched lines that ran since the last call, as ``[path, line]``."""
        hit = set(list(self.rec.line_hits)) - self.lines_seen
        self.lines_seen |= hit
        return sorted([p, n] for p, n in hit)

    # -- records -------------------------------------------------------------------------------
    def tensor(self, t, full: bool) -> dict:
        torch = self.torch
        t = t.detach()
        c = t.to("cpu") if t.device.type != "cpu" else t
        c = c.contiguous()
        out = {"shape": list(c.shape), "dtype": str(c.dtype).replace("torch.", ""),
               "numel": int(c.numel())}
        flat = c.reshape(-1)
        try:
            out["hash"] = hashlib.sha1(flat.view(torch.uint8).numpy().tobytes()).hexdigest()
        except Exception:
            out["hash"] = ""
        if c.is_floating_point() or c.is_complex():
            f = flat.float() if c.is_floating_point() else flat.abs().float()
            if f.numel():
                finite = torch.isfinite(f)
                ff = f[finite]
                stats = torch.stack([ff.sum(), ff.norm(), ff.abs().max() if ff.numel() else ff.sum()])
                out["stats"] = {"sum": float(stats[0]), "norm": float(stats[1]),
                                "absmax": float(stats[2]),
                                "nonfinite": int(f.numel() - int(finite.sum()))}
        if full or out["numel"] <= SMALL_NUMEL:
            out["values"] = c.clone()
        else:
            idx = torch.linspace(0, out["numel"] - 1, SAMPLE).long()
            out["sample"] = flat[idx].clone()
        return out

    def full(self) -> bool:
        return len(self.steps) == 0

    def tensors_of(self, value, prefix: str, out: list, depth: int = 0, graphs: bool = False) -> None:
        """Flatten a module output, or input (a collate_fn's batch: ``graphs`` keeps DGL graphs
        too): tensors of tuples, lists and dicts, two levels deep."""
        torch = self.torch
        if isinstance(value, torch.Tensor) or (graphs and type(value).__name__ == "DGLGraph"):
            out.append((prefix, value))
        elif depth < 2 and isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                self.tensors_of(v, f"{prefix}[{i}]", out, depth + 1, graphs)
        elif depth < 2 and isinstance(value, dict):
            for k, v in value.items():
                self.tensors_of(v, f"{prefix}.{k}", out, depth + 1, graphs)

    def graph(self, g) -> dict:
        torch = self.torch
        facts = self.rec.graph_facts(g)
        deg = g.in_degrees().long().clamp(max=MAX_HIST - 1).cpu()
        facts["in_degree_hist"] = [int(x) for x in torch.bincount(deg).tolist()]
        return facts

    # -- candidate models ----------------------------------------------------------------------
    def frame_modules(self) -> list:
        """Modules held by the user's frames (locals, and attributes of locals such as a
        Trainer's ``self.model``)."""
        nn = self.torch.nn
        found: dict[int, object] = {}
        f = sys._getframe(1)
        while f is not None:
            if self.rec.rel(f.f_code.co_filename) is not None:
                for v in list(f.f_locals.values()):
                    if isinstance(v, nn.Module):
                        found[id(v)] = v
                    elif hasattr(v, "__dict__") and not isinstance(v, type):
                        try:
                            attrs = list(vars(v).values())
                        except TypeError:
                            continue
                        for a in attrs:
                            if isinstance(a, nn.Module):
                                found[id(a)] = a
            f = f.f_back
        return list(found.values())

    @staticmethod
    def top_level(modules: list) -> list:
        inner: set[int] = set()
        for m in modules:
            inner.update(id(x) for x in m.modules() if x is not m)
        seen: set[int] = set()
        out = []
        for m in modules:
            if id(m) not in inner and id(m) not in seen:
                seen.add(id(m))
                out.append(m)
        return out

    @staticmethod
    def unwrap(model):
        while type(model).__name__ in WRAPPERS:
            inner = getattr(model, "module", None) or getattr(model, "_orig_mod", None)
            if inner is None:
                break
            model = inner
        return model

    def state(self, model) -> dict:
        model = self.unwrap(model)
        out = {}
        for name, p in model.named_parameters():
            out[strip_prefixes(name)] = self.tensor(p, True)
        for name, b in model.named_buffers():
            if b is not None:
                out[strip_prefixes(name)] = self.tensor(b, True)
        return out

    # -- hooks ---------------------------------------------------------------------------------
    def pre(self, module, args) -> None:
        torch = self.torch
        root = self.depth == 0
        self.depth += 1
        training = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        if root and self.cur is not None and "grad" in self.cur and training:
            self.finish_step()  # the previous step had no optimizer step (accumulation)
        if root and not self.steps and self.cur is None and not training and module.training:
            # a forward under no_grad in training mode before the first step moves BatchNorm
            # statistics: the state before it is the initial one
            self.note_init([module, *self.frame_modules()])
        if root and self.cur is None and training and self.recording:
            if self.steps:
                self.refresh_update()
            if len(self.steps) < self.budget() and not self.stop_requested():
                self.start_step(module)
            elif self.outcome_steps:
                self.recording = False  # the recorder's step budget ends the run
            else:
                self.rec.stop_for_budget()  # ends the process
        cur = self.cur
        if cur is None:
            return
        inputs: list = []
        if root:  # what the data pipeline hands the model, inside a collated batch too
            for i, a in enumerate(args):
                self.tensors_of(a, f"arg{i}", inputs, graphs=True)
        else:
            inputs = [(f"arg{i}", a) for i, a in enumerate(args) if type(a).__name__ == "DGLGraph"]
        for key, a in inputs:
            if isinstance(a, torch.Tensor):
                cur["features"].append((id(module), key, self.tensor(a, self.full())))
                continue
            if id(module) not in cur["graph_of"]:
                cur["graph_of"][id(module)] = True
                cur["graphs"].append((id(module), self.graph(a)))
            if root and id(a) not in cur["batch_graphs"]:
                # a graph carries its features into whichever of the model's parts the pipeline
                # calls: named by arrival, not by the module it enters
                key = cur["batch_graphs"][id(a)] = f"graph[{len(cur['batch_graphs'])}]"
                self.note_batch(key, a)

    def note_batch(self, key: str, value) -> None:
        """What the data pipeline hands the model, independent of the module it enters (a
        pipeline that calls its model's parts one by one feeds the same batch as a script calling
        the model): a collate function's augmentation or per-batch normalisation shows here."""
        torch, batch = self.torch, self.cur["batch"]
        items: list = []
        self.tensors_of(value, key, items, graphs=True)
        for name, a in items:
            if isinstance(a, torch.Tensor):
                batch[name] = self.tensor(a, self.full())
                continue
            for kind, data in (("ndata", a.ndata), ("edata", a.edata)):
                for field, v in data.items():
                    if isinstance(v, torch.Tensor) and v.is_floating_point():
                        batch[f"{name}.{kind}.{field}"] = self.tensor(v, self.full())

    def start_step(self, module) -> None:
        cands = self.top_level([module, *self.frame_modules()])
        modes = {}
        for top in cands:
            for m in top.modules():
                modes[id(m)] = bool(m.training)
        if not self.steps:
            self.seed_dgl()
            self.note_init(cands)
        self.cur = {"cands": [weakref.ref(m) for m in cands], "modes": modes, "graphs": [],
                    "graph_of": {}, "features": [], "batch_graphs": {}, "batch": {},
                    "outputs": [], "classes": {},
                    "masks": list(self.masks)}
        self.masks = []
        if self.fetched is not None:
            self.note_batch("loader", self.fetched)
            self.fetched = None

    def note_init(self, modules: list) -> None:
        for top in self.top_level(modules):
            if id(top) not in self.init:
                self.init[id(top)] = self.state(top)

    @staticmethod
    def model_state(model) -> dict:
        """name -> parameter or buffer of the (unwrapped) trained model."""
        out = {strip_prefixes(n): p for n, p in model.named_parameters()}
        out.update({strip_prefixes(n): b for n, b in model.named_buffers() if b is not None})
        return out

    def refresh_update(self) -> None:
        """The previous step's ``update`` as the next step starts from it: the buffers, and the
        parameters written since the optimizer step (their version counter moved), are recorded
        again (BatchNorm writes its running statistics without moving their version counter)."""
        last = self.steps[-1]
        model = self.model() if self.model is not None else None
        if model is None or last.get("update") is None:
            return
        params = {id(p) for p in model.parameters()}
        for name, t in self.model_state(model).items():
            if id(t) not in params or self.versions.get(name) != (id(t), t._version):
                last["update"][name] = self.tensor(t, len(self.steps) == 1)
        self.versions = {}

    def post(self, module, args, output) -> None:
        self.depth = max(0, self.depth - 1)
        cur = self.cur
        if cur is None or "loss" in cur:
            return
        flat: list = []
        self.tensors_of(output, "", flat)
        cur["outputs"].append((id(module), type(module).__name__,
                               [(k, self.tensor(t, self.full())) for k, t in flat]))

    def note_mask(self, out) -> None:
        target = self.cur["masks"] if self.cur is not None and "loss" not in self.cur else self.masks
        if len(target) < MAX_MASKS:
            target.append(self.tensor(out, True))

    def note_outcome(self, step: int, target, predicted, masked: bool) -> None:
        """The target and reconstructed rows of a training step's masked entities (every row
        when the recorder could not tell the masked ones), kept for the last steps only."""
        self.outcome.append({"step": step, "masked": masked,
                             "target": target.detach().float().cpu().clone(),
                             "predicted": predicted.detach().float().cpu().clone()})
        del self.outcome[:-self.outcome_steps]

    def before_backward(self, tensors) -> None:
        """Called by the recorder before a backward: the loss, and which model is trained."""
        try:
            cur = self.cur
            self.depth = 0
            if cur is None or "loss" in cur or not tensors:
                return
            loss = tensors[0]
            cur["loss"] = self.tensor(loss, True)
            reached = self.rec.reached_params(tensors)
            cands = [r() for r in cur["cands"]]
            cands = self.top_level([m for m in cands if m is not None] + self.frame_modules())
            best, best_n = None, -1
            for m in cands:
                n = sum(1 for p in m.parameters() if id(p) in reached)
                if n > best_n:
                    best, best_n = m, n
            cur["top"] = id(best) if best is not None else None
            cur["model"] = weakref.ref(self.unwrap(best)) if best is not None else None
            if best is not None:
                cur["stale"] = self.stale_grads(self.unwrap(best))
            cur["rngs"] = self.rng_use()
        except Exception:
            if os.environ.get("GM_AUDIT_DEBUG"):
                import traceback

                traceback.print_exc()

    @staticmethod
    def stale_grads(model) -> dict:
        """name -> norm of the gradient a parameter already holds as the backward starts (0 when
        cleared): what this backward adds to, when the program does not clear it each step."""
        return {strip_prefixes(n): {"gradient before backward":
                                    0.0 if p.grad is None else float(p.grad.detach().norm())}
                for n, p in model.named_parameters()}

    def rng_use(self) -> dict:
        """Global RNG -> whether the program seeded it and how often it drew from it so far.
        Every generator is seeded at start-up for the comparison, which hides one the program
        itself never seeds: its draws would change from run to run."""
        rec = self.rec
        rec.check_rngs()
        seeded = {s.get("rng") for s in rec.lists["seeds"]}
        return {rng: {"seeded": rng in seeded,
                      "draws": int((rec.rng_draws.get(rng) or {}).get("count", 0))}
                for rng in set(rec.rng_draws) | seeded}

    def note_progress(self) -> None:
        now = time.monotonic()
        if now - self.progress_at < PROGRESS_EVERY_S:
            return
        self.progress_at = now
        tmp = os.path.join(self.dir, f"{PROGRESS_FILE}.{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(str(self.rec.step_count))
        os.replace(tmp, os.path.join(self.dir, PROGRESS_FILE))

    def after_backward(self) -> None:
        try:
            if self.outcome_steps:
                self.note_progress()
            cur = self.cur
            if cur is None or cur.get("model") is None or "grad" in cur:
                return
            model = cur["model"]()
            if model is None:
                return
            cur["grad"] = {strip_prefixes(n): (None if p.grad is None else self.tensor(p.grad, self.full()))
                           for n, p in model.named_parameters()}
        except Exception:
            if os.environ.get("GM_AUDIT_DEBUG"):
                import traceback

                traceback.print_exc()

    def after_step(self, optimizer, args, kwargs) -> None:
        cur = self.cur
        if cur is None or "grad" not in cur:
            return
        model = cur["model"]()
        if model is not None:
            # buffers too: BatchNorm running statistics the forward updated (or not)
            state = self.model_state(model)
            cur["update"] = {n: self.tensor(t, self.full()) for n, t in state.items()}
            self.versions = {n: (id(t), t._version) for n, t in state.items()}
        self.finish_step()

    def finish_step(self) -> None:
        """Names for everything recorded by identity; the step joins ``self.steps``."""
        cur, self.cur = self.cur, None
        model = cur.get("model") and cur["model"]()
        if model is None:
            return
        names = {id(m): strip_prefixes(n) for n, m in model.named_modules()}
        wrappers = {id(r()) for r in cur["cands"] if r() is not None
                    and type(r()).__name__ in WRAPPERS}

        def name_of(mid: int, cls: str, used: dict) -> str:
            base = names.get(mid, f"<{cls}>")
            used[base] = used.get(base, 0) + 1
            return base if used[base] == 1 else f"{base}#{used[base]}"

        classes = {strip_prefixes(n): type(m).__name__ for n, m in model.named_modules()}
        step = {"index": len(self.steps) + 1, "model": type(model).__name__,
                "classes": classes if not self.steps else {},
                "modes": {strip_prefixes(n): cur["modes"][id(m)]
                          for n, m in model.named_modules() if id(m) in cur["modes"]},
                "graphs": {}, "features": {}, "batch": cur["batch"], "rngs": cur.get("rngs") or {},
                "masks": cur["masks"], "forward": {}, "loss": {"loss": cur["loss"]},
                "stale": cur.get("stale"), "grad": cur.get("grad"), "update": cur.get("update"),
                "lines": self.new_lines()}
        self.model = weakref.ref(model)
        used: dict = {}
        for mid, facts in cur["graphs"]:
            step["graphs"][name_of(mid, "module", used)] = facts
        for mid, key, t in cur["features"]:
            step["features"][f"{names.get(mid, '<input>')}.{key}".lstrip(".")] = t
        used = {}
        for mid, cls, outs in cur["outputs"]:
            if mid in wrappers:
                continue
            name = name_of(mid, cls, used)
            for key, t in outs:
                if name == "" and names.get(mid) == "":
                    step["loss"][f"output{key}"] = t  # the model's own outputs: loss components
                else:
                    step["forward"][f"{name}{key}"] = t
        if not self.steps:
            step["init"] = self.init.get(cur.get("top"))
            self.init.clear()
        self.steps.append(step)

    # -- output --------------------------------------------------------------------------------
    def write(self) -> None:
        try:
            self.save()
        except Exception as exc:
            sys.stderr.write("gm-audit diff: snapshot not written: %r\n" % (exc,))

    def save(self) -> None:
        if self.written or self.torch is None or os.getpid() != self.rec.pid:
            return
        self.written = True
        if self.cur is not None and "loss" in self.cur:
            self.finish_step()  # a backward without an optimizer step after it
        doc = {"version": 1, "seed": self.seed, "steps": self.steps, "lines_after": self.new_lines(),
               "outcome": self.outcome, "steps_run": self.rec.step_count}
        target = os.path.join(self.dir, f"snapshot-{os.getpid()}.pt")
        tmp = target + ".tmp"
        self.torch.save(doc, tmp)
        os.replace(tmp, target)


def _env_int(name: str) -> int:
    try:
        return int(os.environ.get(name, "0"))
    except ValueError:
        return 0


def load(rec) -> "Snapshot | None":
    """The snapshot mode of this process's recorder, when ``gm-audit diff`` asked for it."""
    out_dir = os.environ.get(ENV_DIR)
    if not out_dir:
        return None
    return Snapshot(rec, out_dir, _env_int(ENV_SEED), _env_int(ENV_STEPS),
                    os.environ.get(ENV_STOP, ""), _env_int(ENV_OUTCOME))
