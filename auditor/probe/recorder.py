"""The in-process recorder: installed at start-up in every Python process of a probed command.

Loaded by the generated ``sitecustomize`` (see ``auditor/probe/launch.py``) by file path, under
the module name ``_gm_audit_recorder``: it imports nothing of gm-audit and puts nothing on
``sys.path``, so a user project with its own ``rules`` or ``auditor`` module is never shadowed.
torch, dgl and numpy are patched only once the program itself imports them (a ``sys.meta_path``
finder that runs the patch right after the module's own code). Every hook is wrapped so that an
error inside the recorder is swallowed: the user's program must never break because of it.
This module holds the recorder's state and the per-step facts; the wrappers live beside it, one
module per subsystem in ``auditor/probe/hooks/`` (loaded by file path the same way), each
recording the cause sites that it sees.

Overhead is kept to hooks: global module forward hooks, optimizer step hooks and a few wrappers;
no per-operator tracing. Line coverage is measured only for the lines of the static findings
(``GM_AUDIT_PROBE_WATCH``), with a trace function that returns at once for other files.

Output: ``$GM_AUDIT_PROBE_DIR/evidence-<pid>.json`` (schema: ``auditor/probe/evidence.py``),
rewritten at the first steps, afterwards at most every second or fifty times as long as the
last write took (whichever is longer), at the budget stop, at exit and on SIGTERM, so a crash or a timeout still leaves the evidence gathered so far.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import signal
import sys
import sysconfig
import threading
import time
import weakref

SCHEMA_VERSION = 1
MAX_SAMPLES = 3  # recorded argument samples per call site (plus the last one)
MAX_STEP_TAGS = 64
MAX_STACK = 6  # user frames kept per cause site
MAX_RECORDS = 2000  # per list (losses, graphs, outputs...): a long run stays bounded
FLUSH_EVERY_S = 1.0  # a crash or a SIGKILL loses at most this much; SIGTERM writes at once
FLUSH_SHARE = 0.02  # writing the evidence takes at most this share of the run's time
MIN_AUTO_STEPS = 3
DETAIL_STEPS = 6  # steps with every fact recorded (see Recorder.detailed_step)
DETAIL_EVERY = 10
MAX_RECON_NODES = 4  # masked nodes whose rows the reconstruction sample keeps
MAX_LOSS_NODES = 256  # nodes of the backpropagated sum walked to find its named terms
MAX_COMPONENTS = 64  # candidate loss components kept per step
MAX_INPUT_BATCHES = 12  # training forwards whose input feature statistics are recorded
DIRECTION_DEV = 0.05  # median |length - 1| of a column triple below this: a direction vector
MAX_SAMPLE_PRINTS = 50_000  # dataset samples fingerprinted (GM503: a sample drawn again)
MAX_TRACKED_SAMPLES = 64  # per dataset: the first indices drawn, fingerprinted at every draw
WRAPPER_CLASSES = ("DistributedDataParallel", "DataParallel")

_HERE = os.path.dirname(os.path.abspath(__file__))
_AUDITOR_DIR = os.path.dirname(_HERE)


class _Tls(threading.local):
    busy = 0  # > 0 while the recorder itself runs: nothing it does is recorded
    depth = 0  # module forward nesting
    train_depth = 0
    loss_depth = 0
    in_backward = False
    seed_depth = 0
    child_depth = 1  # nesting of the model's own submodules: 2 under a DDP/DataParallel wrapper
    root_grad = True  # grad mode at the current root forward
    grad_off = None  # (frame, stack) of the latest no_grad/inference_mode entered in user code
    bn_watch = None  # train-mode BatchNorms of a root forward with gradients off, their buffers
    off_forward = None  # the running root forward with gradients off (Recorder.cur "off_forwards")
    untraced = None  # the library-only module whose forward runs with line tracing off
    step_untraced = False  # line tracing off during a library optimizer's step


class Recorder:
    """All recorded state of one process, and the patches (restored by :meth:`uninstall`)."""

    wrapper_classes = WRAPPER_CLASSES  # for the hooks, loaded by path (no imports of ours)

    def __init__(self, run_dir: str, cwd: str, budget: str, watch: list) -> None:
        self.run_dir = run_dir
        self.cwd = cwd
        self.pid = os.getpid()
        self.start = time.time()
        self.budget_steps, self.auto = _parse_budget(budget)
        self.all_hit_at: int | None = None  # step count when every watched line had run
        self.tls = _Tls()
        self.lock = threading.RLock()
        self.patches: list[tuple[object, str, object, bool]] = []
        self.handles: list = []
        self.file_cache: dict[str, object] = {}
        self.library_dirs = _library_dirs()
        self.calls: dict[tuple[str, str, int], dict] = {}
        self.steps: list[dict] = []
        self.steps_encoded: list[str] = []  # JSON of the steps before the latest (steps_json)
        self.lists: dict[str, list] = {k: [] for k in (
            "ddp", "losses", "graphs", "loads", "seeds", "batchnorm", "optimizers", "outputs",
            "inputs", "retained")}
        self.rng_draws: dict[str, dict] = {}
        self.reconstruction: dict | None = None  # see note_reconstruction
        self.rng_state: dict[str, object] = {}
        self.step_count = 0
        self.phase_start = 0  # the step at which the current training phase began (new_phase)
        self.opt_after_backward = False
        self.run = {"status": "running", "exit_code": None, "steps": 0, "devices": [],
                    "argv": list(sys.argv), "torch_imported": False, "error": ""}
        self.rank = _env_int("RANK")
        self.world_size = _env_int("WORLD_SIZE")
        self.last_flush = 0.0
        self.flush_gap = FLUSH_EVERY_S  # grows with the cost of a write (see flush)
        self.dirty = False
        self.stopping = False
        self.torch = None
        # module / parameter naming: ids of objects kept alive by weakrefs in `roots`
        self.roots: dict[int, object] = {}  # id(root) -> weakref of the model
        self.module_names: dict[int, str] = {}
        self.param_names: dict[int, str] = {}
        self.model_of: dict[int, int] = {}  # id(module or param) -> id(model root)
        self.special: dict[int, list] = {}  # id(model) -> [(name, module)] Dropout / BatchNorm
        self.container_params: dict[int, set] = {}  # id(model) -> names (see register_root)
        self.held: dict[int, tuple] = {}  # id(module) -> (weakref, ids of its modules): holder()
        self.bn_versions: dict[int, tuple] = {}
        self.bn_frozen_seen: set[int] = set()
        self.bn_stalled_seen: set[int] = set()
        self.bn_outside_seen: set[tuple] = set()  # forward sites that moved BatchNorm stats
        self.input_batches: dict[str, int] = {}  # per source of the inputs: batches recorded
        self.samples: dict[str, dict] = {}  # dataset class -> samples drawn again
        self.sample_prints: dict[tuple, tuple] = {}  # (id(dataset), index) -> (weakref, print)
        self.samples_tracked: dict[int, int] = {}  # id(dataset) -> indices in sample_prints
        self.opt_seen: set[int] = set()
        self.snapshots: dict[int, list] = {}
        self.last_model = None  # weakref of the model of the latest backward
        self.trained_models: set[int] = set()
        # the models a backward trained, as objects: a freed model's id comes back with the next
        self.trained_seen: "weakref.WeakSet" = weakref.WeakSet()
        # cause sites (Recorder.cause) of the state that a backward or a step later shows
        self.cause_seq = 0
        self.mode_cause: dict[int, dict] = {}  # id(module) -> the eval()/train(False) call
        self.frozen_cause: dict[int, dict] = {}  # id(param) -> requires_grad(_) False
        self.built_at: dict[int, tuple] = {}  # id(module) -> (weakref, its construction call)
        self.cast_cause: dict[int, dict] = {}  # id(module) -> .half()/.bfloat16()/.to(dtype)
        self.opt_built: dict[int, tuple] = {}  # id(optimizer) -> (weakref, construction call)
        self.cur = self._new_step_acc()
        # watched lines (static findings): relpath -> set(lines), and hits
        self.watched: dict[str, set] = {}
        for entry in watch:
            try:
                rel, line, end = entry[0], int(entry[1]), int(entry[2] or entry[1])
            except (TypeError, ValueError, IndexError):
                continue
            self.watched.setdefault(rel, set()).update(range(line, end + 1))
        self.spans = [(e[0], int(e[1]), int(e[2] or e[1])) for e in watch if len(e) >= 3]
        # span -> {"files": module bodies whose calls lead to it, "calls": the lines calling its
        # function} (auditor/probe/reach.py; absent: unknown)
        self.reach = {(e[0], int(e[1]), int(e[2] or e[1])): e[3] for e in watch
                      if len(e) >= 4 and isinstance(e[3], dict)}
        self.untaken: dict[tuple, str] = {}  # span -> why this run will not reach it
        self.branches = None  # hooks/branches.py, loaded when a span is still waited for
        self.untaken_step = -1
        self.line_hits: dict[tuple[str, int], int] = {}
        self.call_lines: set[tuple[str, int]] = set()  # lines of recorded calls (they ran)
        self.files_run: set[str] = set()  # watched files any code of which ran
        self.modules_seen: set[str] = set()  # names in sys.modules imported_watched_files checked
        self.code_lines: dict[object, object] = {}
        self.tracing = False
        self.global_trace = None
        self.quiet = False  # a step that is not detailed: no line tracing
        self.library_modules: dict[int, tuple] = {}  # id(module) -> (weakref, library_only)
        self.library_types: dict[type, bool] = {}
        self.graph_cache: dict[tuple, tuple] = {}  # (id, nodes, edges) -> (weakref, facts)
        self.snapshot = _snapshot_mode(self)  # gm-audit diff: seeds and tensor snapshots

    # for the hook modules, which import nothing of the recorder (late-bound: defined below)
    is_graph = staticmethod(lambda x: _is_graph(x))
    row_scale = staticmethod(lambda fn: row_scale(fn))
    short = staticmethod(lambda t: _short(t))

    def bn_state(self, m) -> tuple:
        """A BatchNorm's running buffers as (tensor id, version): a change is a write."""
        return tuple((id(b), b._version) for b in (m.running_mean, m.running_var,
                                                   m.num_batches_tracked) if b is not None)

    # -- call sites --------------------------------------------------------------------------------
    def rel(self, filename: str):
        """``filename`` relative to the probe's cwd when it is user code; None for library code."""
        cached = self.file_cache.get(filename, False)
        if cached is not False:
            return cached
        out = None
        if filename and not filename.startswith("<"):
            path = os.path.realpath(os.path.join(self.cwd, filename))
            if not any(path.startswith(d) for d in self.library_dirs):
                r = os.path.relpath(path, self.cwd)
                out = (path if r.startswith("..") else r).replace(os.sep, "/")
        self.file_cache[filename] = out
        return out

    def site(self, depth: int = 1):
        """The first user frame above the caller: (relpath, line) or (None, 0)."""
        try:
            f = sys._getframe(depth)
        except ValueError:
            return None, 0
        while f is not None:
            r = self.rel(f.f_code.co_filename)
            if r is not None:
                return r, f.f_lineno
            f = f.f_back
        return None, 0

    def stack(self, depth: int = 1, skip=None) -> list:
        """The user frames above the caller, innermost first: ``[[relpath, line], ...]`` (at
        most MAX_STACK; frames of torch, dgl, the standard library, site-packages and gm-audit
        left out). ``skip(frame)``: user frames to pass over (a module's own ``__init__``)."""
        try:
            f = sys._getframe(depth + 1)
        except ValueError:
            return []
        return self.stack_from(f, skip)

    def stack_outside(self, module, depth: int = 1) -> list:
        """:meth:`stack` from the first user frame that is no method of a module holding
        ``module`` (or of ``module`` itself): the call that made it run, not the model's helper
        methods it went through. When every user frame is one of them (a LightningModule's own
        hooks), from the outermost of them."""
        try:
            f = sys._getframe(depth + 1)
        except ValueError:
            return []
        inside = None
        while f is not None:
            if self.rel(f.f_code.co_filename) is not None:
                if self.holder(f, module) is None:
                    return self.stack_from(f)
                inside = f
            f = f.f_back
        return self.stack_from(inside) if inside is not None else []

    def owner(self, module, depth: int = 1):
        """The outermost module whose methods, running in user frames above the caller, run
        ``module``: the model a submodule's forward belongs to when a method calls it directly
        (a LightningModule's ``training_step`` calling ``self.model.encode``), or when a function
        handed the model calls its parts (``m["encoder"](g, x)`` in ``def forward(m, g, x)``);
        ``module`` itself when none does."""
        try:
            f = sys._getframe(depth + 1)
        except ValueError:
            return module
        out = module
        while f is not None:
            if self.rel(f.f_code.co_filename) is not None:
                out = self.holder(f, out) or self.argument_holder(f, out) or out
            f = f.f_back
        return out

    def holder(self, frame, module):
        """The module that is ``self`` in ``frame`` when it holds ``module`` (or is it)."""
        if "self" not in frame.f_code.co_varnames[:frame.f_code.co_argcount]:
            return None
        owner = frame.f_locals.get("self")
        return owner if self.holds(owner, module) else None

    def argument_holder(self, frame, module):
        """A module passed to ``frame``'s function as an argument that holds ``module`` (the
        outermost when several do)."""
        code = frame.f_code
        if not code.co_argcount:
            return None
        args = frame.f_locals
        held = [a for a in (args.get(n) for n in code.co_varnames[:code.co_argcount])
                if a is not module and self.holds(a, module)]
        return max(held, key=lambda a: len(self.held[id(a)][1]), default=None)

    def holds(self, owner, module) -> bool:
        """``owner`` is a module that is ``module`` or holds it."""
        if not isinstance(owner, self.torch.nn.Module):
            return False
        if owner is module:
            return True
        known = self.held.get(id(owner))
        if known is None or known[0]() is not owner or id(module) not in known[1]:
            try:
                known = (weakref.ref(owner), {id(m) for m in owner.modules()})
            except TypeError:
                return False
            self.held[id(owner)] = known
        return id(module) in known[1]

    def stack_from(self, f, skip=None) -> list:
        """:meth:`stack` from frame ``f`` up."""
        out = []
        while f is not None and len(out) < MAX_STACK:
            r = self.rel(f.f_code.co_filename)
            if r is not None and not (skip is not None and skip(f)):
                out.append([r, f.f_lineno])
            f = f.f_back
        return out

    def cause(self, kind: str, stack: list, **facts) -> "dict | None":
        """A state change at its cause site: recorded as a call of ``kind`` at the innermost
        user frame, with the frames that called it; returned for the state that it changes."""
        if not stack:
            return None
        path, line = stack[0]
        self.record(kind, path, line, facts or None, stack=stack)
        self.cause_seq += 1
        return {"kind": kind, "path": path, "line": line, "stack": stack,
                "step": self.step_count, "seq": self.cause_seq, **facts}

    def direct_user_caller(self, depth: int = 2):
        """(relpath, line) when the frame ``depth`` up is user code itself, else None: cheap
        filter for APIs that torch calls internally all the time (detach, .data)."""
        try:
            f = sys._getframe(depth)
        except ValueError:
            return None
        r = self.rel(f.f_code.co_filename)
        return (r, f.f_lineno) if r is not None else None

    def record(self, kind: str, path, line: int, args=None, stack=None) -> None:
        if path is None:
            return
        with self.lock:
            key = (kind, path, line)
            rec = self.calls.get(key)
            if rec is None:
                rec = self.calls[key] = {"kind": kind, "path": path, "line": line, "count": 0,
                                         "args": [], "steps": [], "stack": stack or []}
            rec["count"] += 1
            self.call_lines.add((path, line))
            if args is not None:
                if len(rec["args"]) < MAX_SAMPLES:
                    rec["args"].append(args)
                elif len(rec["args"]) == MAX_SAMPLES:
                    rec["args"].append(args)  # slot for the latest
                else:
                    rec["args"][-1] = args
            tags = rec["steps"]
            if (not tags or tags[-1] != self.step_count) and len(tags) < MAX_STEP_TAGS:
                tags.append(self.step_count)
            self.dirty = True

    def add(self, key: str, item: dict) -> None:
        items = self.lists[key]
        if len(items) < MAX_RECORDS:
            items.append(item)
            self.dirty = True

    # -- patching ----------------------------------------------------------------------------------
    def patch(self, obj, attr: str, make) -> None:
        """Replace ``obj.attr`` with ``make(original)``; remembered for :meth:`uninstall`."""
        try:
            had = attr in vars(obj) if isinstance(obj, type) else True
            original = getattr(obj, attr)
        except AttributeError:
            return
        if getattr(original, "__gm_audit__", False):
            return
        wrapper = make(original)
        try:
            wrapper.__gm_audit__ = True
        except (AttributeError, TypeError):
            pass
        try:
            setattr(obj, attr, wrapper)
        except (AttributeError, TypeError):
            return
        self.patches.append((obj, attr, original, had))

    def uninstall(self) -> None:
        for obj, attr, original, had in reversed(self.patches):
            try:
                if had:
                    setattr(obj, attr, original)
                else:
                    delattr(obj, attr)
            except (AttributeError, TypeError):
                pass
        self.patches.clear()
        for h in self.handles:
            try:
                h.remove()
            except Exception:
                pass
        self.handles.clear()
        if self.tracing:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
            self.tracing = False

    def guarded(self, fn):
        """A hook body that never raises into the user's program and never records itself."""

        @functools.wraps(fn)
        def run(*args, **kwargs):
            tls = self.tls
            if tls.busy:
                return None
            tls.busy += 1
            try:
                return fn(*args, **kwargs)
            except Exception:
                if os.environ.get("GM_AUDIT_DEBUG"):
                    import traceback

                    traceback.print_exc()
                return None
            finally:
                tls.busy -= 1

        return run

    # -- line coverage of the findings ---------------------------------------------------------
    def start_tracing(self) -> None:
        if not self.watched:
            return
        watched, code_lines, hits = self.watched, self.code_lines, self.line_hits

        returned = self.guarded(self.frame_components)

        def local(frame, event, arg):
            if event == "line":
                lines = code_lines.get(frame.f_code)
                if lines and frame.f_lineno in lines[1]:
                    key = (lines[0], frame.f_lineno)
                    hits[key] = hits.get(key, 0) + 1
            elif event == "return":
                returned(frame)
            return local

        def global_trace(frame, event, arg):
            code = frame.f_code
            entry = code_lines.get(code, False)
            if entry is False:
                entry = None
                rel = self.rel(code.co_filename)
                lines = watched.get(rel) if rel else None
                if rel in watched:
                    self.files_run.add(rel)  # imported (or run) by this program
                if lines:
                    # a def/class header (decorators, signature, defaults) runs when its function
                    # is called, not when the enclosing code defines it (at import)
                    nested = set().union(*(_header(c) for c in code.co_consts
                                           if _defined(c)), set())
                    mine = ({ln for _, _, ln in code.co_lines() if ln} - nested) & lines
                    own = _header(code) & lines if _defined(code) else set()
                    if mine or own:
                        entry = (rel, mine - own, own)
                code_lines[code] = entry
            if entry and entry[2]:
                for ln in entry[2]:
                    key = (entry[0], ln)
                    hits[key] = hits.get(key, 0) + 1
            return local if entry and entry[1] else None

        self.tracing = True
        self.global_trace = global_trace
        threading.settrace(global_trace)  # type: ignore[arg-type]
        sys.settrace(global_trace)

    # Line tracing slows every Python instruction of the thread while it is on (CPython 3.11
    # traces per instruction, whatever the frame), so it is off while library code runs that
    # calls no user code: the backward, a library optimizer's step, library-only modules
    # and during the steps that are not detailed (see detailed_step): the lines of the findings
    # are counted before the first backward, at the first DETAIL_STEPS steps and at every
    # DETAIL_EVERY-th step
    def suspend_tracing(self) -> bool:
        """Line tracing off in this thread; True when it was on (resume it after)."""
        if self.tracing and sys.gettrace() is self.global_trace:
            sys.settrace(None)
            return True
        return False

    def resume_tracing(self) -> None:
        if self.tracing and not self.quiet and sys.gettrace() is None:
            sys.settrace(self.global_trace)

    def trace_this_step(self) -> None:
        """At the end of a step: line tracing on for the next one when it is detailed, or at
        every step under ``gm-audit diff`` (it tells the step at which each line first ran)."""
        self.quiet = self.snapshot is None and not self.detailed_step()
        if self.quiet:
            self.suspend_tracing()
        else:
            self.resume_tracing()

    def library_only(self, module) -> bool:
        """The module and all its submodules are of classes defined in libraries (torch, dgl,
        site-packages): its forward runs no user code."""
        key = id(module)
        known = self.library_modules.get(key)
        if known is None or known[0]() is not module:
            flag = all(self.library_class(type(m)) for m in module.modules())
            try:
                known = self.library_modules[key] = (weakref.ref(module), flag)
            except TypeError:
                return False
        return known[1]

    def library_class(self, cls) -> bool:
        flag = self.library_types.get(cls)
        if flag is None:
            mod = sys.modules.get(getattr(cls, "__module__", ""), None)
            path = getattr(mod, "__file__", None)
            flag = self.library_types[cls] = bool(path) and self.rel(path) is None
        return flag

    def span_ran(self, span: tuple) -> bool:
        p, a, b = span
        return any(self.line_hits.get((p, n)) or (p, n) in self.call_lines for n in range(a, b + 1))

    def all_watched_hit(self) -> bool:
        """Every watched span ran (a traced line, or a recorded call there: the tracer is off
        in most steps), leaving out those this run will not reach: in files this program never
        imported, and ``untaken`` ones (hooks/branches.py). They do not hold the
        ``--steps auto`` budget."""
        pending = [s for s in self.spans if s[0] in self.files_run and not self.span_ran(s)]
        if pending and self.untaken_step != self.step_count:
            self.untaken_step = self.step_count  # decided at most once per step
            if self.branches is None:
                self.branches = _hook("branches").install(self)
            self.branches.decide(pending, sys._getframe(1))
        return all(s in self.untaken for s in pending)

    # -- evidence file ------------------------------------------------------------------------------
    def imported_watched_files(self) -> None:
        """Watched files imported as modules, whether or not a traced step saw their code run
        (the tracer is off in most steps). Each module is looked at once: every evidence write
        asks, and a program holds thousands of modules."""
        for name in list(sys.modules.keys() - self.modules_seen):
            self.modules_seen.add(name)
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            rel = self.rel(path) if isinstance(path, str) else None
            if rel in self.watched:
                self.files_run.add(rel)

    def document(self) -> dict:
        """The evidence file's content but its ``steps`` (see :meth:`steps_json`)."""
        if self.watched:
            self.imported_watched_files()
        with self.lock:
            self.run["steps"] = self.step_count
            calls = [dict(c) for c in self.calls.values()]
            return {
                "version": SCHEMA_VERSION,
                "pid": self.pid,
                "rank": self.rank,
                "world_size": self.world_size,
                "start": self.start,
                "cwd": self.cwd,
                "run": dict(self.run),
                "calls": calls,
                "lines": [[p, n, c] for (p, n), c in self.line_hits.items()],
                "files_run": sorted(self.files_run),
                "untaken": [[*span, why] for span, why in self.untaken.items()
                            if not self.span_ran(span)],
                "watching": bool(self.watched),
                "rng_draws": {k: dict(v) for k, v in self.rng_draws.items()},
                "samples": {k: dict(v) for k, v in self.samples.items()},
                "reconstruction": self.reconstruction,
                **{k: list(v) for k, v in self.lists.items()},
                "loads": [self.resolve_load(item) for item in self.lists["loads"]],
            }

    def resolve_load(self, item: dict) -> dict:
        """Was the module a load went into (part of) the model that backward later trained?"""
        item = dict(item)
        mid = item.pop("_module_id", None)
        if mid is not None and self.trained_models:
            item["trained"] = self.model_of.get(mid) in self.trained_models
        return item

    def mark_warm_starts(self, model_id: int) -> None:
        """The first backward of the model ``model_id``: each load into it recorded so far came
        before its training (a warm start), whatever other models trained before (a helper that
        makes the checkpoint); a load after this one is a restore."""
        for item in self.lists["loads"]:
            if (item.get("kind") == "load_state_dict" and "before_training" not in item
                    and self.model_of.get(item.get("_module_id", -1)) == model_id):
                item["before_training"] = True

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (not self.dirty or now - self.last_flush < self.flush_gap):
            return
        if os.getpid() != self.pid:
            return  # a forked child (DataLoader worker) writes nothing of its parent's
        self.last_flush = now
        self.dirty = False
        text = json.dumps(self.document(), default=_jsonable)
        text = f'{text[:-1]}, "steps": {self.steps_json()}}}'
        target = os.path.join(self.run_dir, f"evidence-{self.pid}.json")
        tmp = f"{target}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError:
            pass
        # a large evidence file (a wide feature matrix's column statistics, many steps) costs
        # more to write: the next write waits in proportion, so writing stays a small share
        self.flush_gap = max(FLUSH_EVERY_S, (time.monotonic() - now) / FLUSH_SHARE)

    def steps_json(self) -> str:
        """The steps as a JSON list. A step is final once the next one began (only the latest
        takes its optimizer's facts): each is encoded once, not at every write of a long run."""
        with self.lock:
            steps = list(self.steps)
        done = self.steps_encoded
        # a new list, bound at once: a write the SIGTERM handler makes in between sees either
        done = self.steps_encoded = done + [json.dumps(st, default=_jsonable)
                                            for st in steps[len(done):-1]]
        return "[" + ", ".join([*done, *(json.dumps(st, default=_jsonable)
                                         for st in steps[len(done):])]) + "]"

    def at_exit(self) -> None:
        if self.run["status"] == "running":
            self.run["status"] = "exit"
        if self.snapshot is not None:
            self.snapshot.write()
        self.check_rngs()
        self.flush(force=True)

    def stop_for_budget(self) -> None:
        """The step budget is spent: write the evidence and end the process, exit status 0."""
        if self.stopping:
            return
        self.stopping = True
        self.run["status"] = "budget"
        if self.snapshot is not None:
            self.snapshot.write()
        self.check_rngs()
        self.flush(force=True)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(0)

    def budget_spent(self) -> bool:
        if self.budget_steps is None:
            return False
        if self.step_count >= self.budget_steps:
            return True
        if not (self.auto and self.step_count >= MIN_AUTO_STEPS and self.all_watched_hit()):
            return False
        # the last watched line may have run just now (an `.eval()` at the end of an epoch):
        # one more whole step shows its effect
        if self.all_hit_at is None:
            self.all_hit_at = self.step_count
        return self.step_count > self.all_hit_at

    # -- steps --------------------------------------------------------------------------------------
    def _new_step_acc(self) -> dict:
        return {"used": set(), "roots": {}, "finite": [], "graphs": {}, "scaler": False,
                "zero_grad": 0, "components": [], "recon": None, "cuts": [],
                "grad_off_inner": {}, "grad_off_reads": {}, "off_forwards": {}, "sums": [],
                "node_rows": set()}

    def register_root(self, root, ran=None) -> None:
        """Name a model's modules and parameters the first time it runs a root forward, or one
        of its modules (``ran``) that it did not hold then runs (a submodule rebuilt since). A
        model that turns out to hold earlier roots (submodules its methods ran directly) takes
        them over."""
        model = root
        if type(root).__name__ in WRAPPER_CLASSES and hasattr(root, "module"):
            model = root.module
        known = self.roots.get(self.model_of.get(id(model)))
        known = known() if known is not None else None
        if known is not None and known is not model and self.holds(known, model):
            model = known  # a part of a model already known, run by itself (a cell's code)
        mid = id(model)
        if mid in self.roots and self.roots[mid]() is model and \
                self.model_of.get(id(ran if ran is not None else root)) == mid:
            self.model_of[id(root)] = mid
            return
        try:
            self.roots[mid] = weakref.ref(model)
        except TypeError:
            return
        self.model_of[id(root)] = mid
        torch = self.torch
        modules = list(model.named_modules())
        taken = {mid, None} | {id(m) for _, m in modules[1:] if self.model_of.get(id(m)) == id(m)}
        for old in taken - {mid, None}:
            self.roots.pop(old, None)
            self.special.pop(old, None)
            self.container_params.pop(old, None)
        special = []
        for name, m in modules:
            if self.model_of.get(id(m)) in taken:
                self.module_names[id(m)] = name
                self.model_of[id(m)] = mid
            if isinstance(m, (torch.nn.modules.dropout._DropoutNd,
                              torch.nn.modules.batchnorm._BatchNorm)) and name:
                special.append((name, m))
        self.special[mid] = special
        # parameters held by a module that has submodules (a mask token, an extra embedding): its
        # forward runs whether or not this configuration uses them, so "used" is unknown
        self.container_params[mid] = {
            f"{name}.{pn}" if name else pn for name, m in modules
            if next(iter(m.children()), None) is not None for pn in m._parameters}
        for name, p in model.named_parameters():
            if self.model_of.get(id(p)) in taken:
                self.param_names[id(p)] = name
                self.model_of[id(p)] = mid

    def modes(self, model) -> dict:
        out = {"": bool(model.training)}
        for name, m in self.special.get(id(model), ()):
            out[name] = bool(m.training)
        return out

    def autocast_state(self) -> dict:
        torch = self.torch
        if torch.is_autocast_enabled():
            return {"device": "cuda", "dtype": str(torch.get_autocast_gpu_dtype()).replace("torch.", ""),
                    "enabled": True}
        if torch.is_autocast_cpu_enabled():
            return {"device": "cpu", "dtype": str(torch.get_autocast_cpu_dtype()).replace("torch.", ""),
                    "enabled": True}
        return {"enabled": False}

    def param_name(self, p) -> str:
        name = self.param_names.get(id(p))
        if name is None:
            name = f"<param {tuple(p.shape)}>"
        return name

    def reached_params(self, tensors, seen=None) -> set:
        """ids of the leaf tensors the autograd graph of ``tensors`` reaches (``seen``, when
        given, is filled with the graph's nodes)."""
        seen = set() if seen is None else seen
        out, stack = set(), []
        for t in tensors:
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
            elif t.requires_grad:
                out.add(id(t))
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            var = getattr(fn, "variable", None)
            if var is not None:
                out.add(id(var))
            for nxt, _ in getattr(fn, "next_functions", ()):
                if nxt is not None and nxt not in seen:
                    stack.append(nxt)
        return out

    def before_backward(self, tensors, site) -> dict:
        torch = self.torch
        if self.snapshot is not None:
            self.snapshot.before_backward(tensors)
        nodes: set = set()
        reached = self.reached_params(tensors, nodes)
        acc = self.cur
        models = [self.roots[m]() for m in acc["roots"]] or [r() for r in self.roots.values()]
        models = [m for m in models if m is not None]
        # the trained model: the one whose parameters the loss reaches most
        best, best_n, params = None, -1, []
        for m in models:
            named = list(m.named_parameters())
            n = sum(1 for _, p in named if id(p) in reached)
            if n > best_n:
                best, best_n, params = m, n, named
        loss = tensors[0] if tensors else None
        step = {"index": self.step_count + 1, "path": site[0] or "", "line": site[1],
                "kind": "backward"}
        if loss is not None:
            step["loss_dtype"] = str(loss.dtype).replace("torch.", "")
            step["loss_grad_fn"] = type(loss.grad_fn).__name__ if loss.grad_fn is not None else ""
            if loss.numel() == 1:
                v = float(loss.detach().float().item())
                step["loss_value"] = v
                step["loss_finite"] = math.isfinite(v)
            else:
                step["loss_finite"] = bool(torch.isfinite(loss.detach()).all())
        step["autocast_at_backward"] = self.autocast_state()
        if best is not None:
            step["model"] = type(best).__name__
            step["params_used"] = [n for n, p in params if id(p) in acc["used"]]
            step["params_reached"] = [n for n, p in params if id(p) in reached]
            step["params_frozen"] = [n for n, p in params if not p.requires_grad]
            step["param_dtypes"] = sorted({_short(p.dtype) for _, p in params
                                           if p.requires_grad and p.is_floating_point()})
            step["training_at_backward"] = self.modes(best)
            if self.steps and not self.opt_after_backward and not acc["zero_grad"]:
                step["stale_grads"] = sum(1 for _, p in params if p.grad is not None
                                          and p.requires_grad and bool(p.grad.any()))
            fwd = acc["roots"].get(id(best))
            if fwd:
                step.update(fwd)
            self.causes_at_backward(best, params, acc, reached, step)
            dev = {str(p.device) for _, p in params[:1]}
            for d in dev:
                if d not in self.run["devices"]:
                    self.run["devices"].append(d)
        else:
            step["params_reached"] = sorted(self.param_name_by_id(i) for i in reached)
        step["scaler_used"] = acc["scaler"]
        step["zero_grad_calls"] = acc["zero_grad"]
        if step.get("loss_finite") is False:
            for name, out in acc["finite"]:
                try:
                    if not bool(torch.isfinite(out).all()):
                        step["nonfinite_module"] = name
                        break
                except Exception:
                    continue
        if self.detailed_step():
            try:
                self.term_components(loss)
                self.loss_components(loss, step)
            except Exception:
                pass
            try:
                self.retained_graphs(tensors, nodes, step, best)
            except Exception:
                pass
        return {"step": step, "model": best, "params": params}

    def causes_at_backward(self, model, params, acc, reached, step) -> None:
        """Where the state this backward shows was made: the eval() that left (sub)modules in
        eval mode, the requires_grad(_)(False) of each frozen parameter, and the .detach()/.data
        whose input reaches the parameters that the loss does not."""
        if id(model) in self.cast_cause:
            step["cast_cause"] = self.cast_cause[id(model)]
        for name, m in [("", model), *self.special.get(id(model), ())]:
            cause = self.mode_cause.get(id(m)) if not m.training else None
            if cause is not None:
                step["mode_cause"] = {**cause, "module": name}
                break
        unreached = {id(p): n for n, p in params if id(p) in acc["used"] and id(p) not in reached}
        if not unreached:
            return
        step["params_in_containers"] = sorted(
            set(unreached.values()) & self.container_params.get(id(model), set()))
        trainable = {id(p) for _, p in params if id(p) in unreached and p.requires_grad}
        inner = next((acc["grad_off_inner"][i] for i in trainable if i in acc["grad_off_inner"]),
                     None)
        if inner is None:
            # a parameter read off its module with gradients off (a helper under no_grad that
            # writes it into the input), unless that switch ran whole forwards: an evaluation
            evaluations = set(acc["off_forwards"])
            inner = next((c for i, c in acc["grad_off_reads"].items()
                          if i in trainable and (c["path"], c["line"]) not in evaluations), None)
        if inner is None:
            # a root forward run wholly with gradients off that is part of this step's
            # computation (its output fed the loss without a graph): none of its parameters
            # reached the loss, the latest such. An evaluation of the whole model between
            # steps runs parameters that the training forward reaches, so it is no cause.
            off = next((f for f in reversed(acc["off_forwards"].values())
                        if f["params"] & trainable and not f["params"] & reached), None)
            if off is not None:
                inner = off["cause"]
                step["training_forwards"] = [off["id"]]
        if inner is not None:
            step["grad_off_cause"] = inner
        elif any(id(p) in reached for _, p in params):
            # the backward reached parameters, so its forward ran with gradients: a forward of the
            # whole model under no_grad in this step (an evaluation between steps) is not a cause
            step.pop("grad_off_cause", None)
        frozen = {}
        for n, p in params:
            cause = self.frozen_cause.get(id(p)) if id(p) in unreached else None
            if cause is not None and len(frozen) < 32:
                frozen[n] = {k: cause[k] for k in ("path", "line", "stack")}
        if frozen:
            step["frozen_cause"] = frozen
        held = [(n, p) for n, p in params if id(p) in unreached and not p.requires_grad][:64]
        if held and self.detailed_step():
            # a value sum per frozen parameter: one that moves between steps without gradient
            # is updated by copy (an EMA teacher), not a parameter left untrained
            sums = self.torch.stack([p.detach().float().sum() for _, p in held]).tolist()
            step["frozen_sums"] = {n: v for (n, _), v in zip(held, sums)}
        for kind, where, stack, fn in acc["cuts"]:
            cut = self.reached_params([_GradFnHolder(fn)]) & set(unreached)
            if cut:
                step["cut_cause"] = {"kind": kind, "path": where[0], "line": where[1],
                                     "stack": stack or [list(where)],
                                     "params": sorted(unreached[i] for i in cut)[:32]}
                break

    def detailed_step(self) -> bool:
        """The costlier facts (loss components, graphs held across steps, RNG states) are taken
        on the first steps, where their effects show, then on every DETAIL_EVERY-th step:
        that keeps the probe's per-step overhead small on long runs."""
        return self.step_count - self.phase_start < DETAIL_STEPS or self.step_count % DETAIL_EVERY == 0

    def new_phase(self) -> None:
        """An optimizer built after the first step starts a training phase of its own (a linear
        probe after pre-training): its first steps are detailed like the run's, with line
        tracing on from now, so what only that phase runs is seen."""
        if self.step_count and self.step_count - self.phase_start >= DETAIL_STEPS:
            self.phase_start = self.step_count
            self.trace_this_step()

    def param_name_by_id(self, pid: int) -> str:
        return self.param_names.get(pid, f"<param #{pid % 10000}>")

    def after_backward(self, ctx: dict) -> None:
        torch = self.torch
        step, model = ctx["step"], ctx["model"]
        if model is not None:
            self.last_model = weakref.ref(model)
            self.trained_models.add(id(model))
            if model not in self.trained_seen:
                self.trained_seen.add(model)
                self.mark_warm_starts(id(model))
            params = ctx["params"]  # the backward changed gradients, not which parameters
            with_grad = [(n, p.grad) for n, p in params if p.grad is not None]
            grads = {n: {"state": "none"} for n, p in params if p.grad is None}
            norms = []
            if with_grad:
                gs = [g.detach() for _, g in with_grad]
                try:
                    stacked = torch.stack([x.float() for x in torch._foreach_norm(gs)])
                    # between detailed steps, per-parameter norms only when one is not finite
                    if self.detailed_step() or not math.isfinite(float(stacked.sum())):
                        norms = [float(x) for x in stacked.tolist()]
                except Exception:
                    norms = [float(g.float().norm()) for g in gs]
            if with_grad and not norms:
                step["grads_finite"] = True
            elif with_grad:
                for (n, _), v in zip(with_grad, norms):
                    state = "nonfinite" if not math.isfinite(v) else ("zero" if v == 0 else "finite")
                    grads[n] = {"state": state, "norm": v if math.isfinite(v) else None}
            if not step.get("grads_finite"):
                step["grads"] = grads
                step["nonfinite_grads"] = [n for n, g in grads.items()
                                           if g["state"] == "nonfinite"]
        if self.cur["sums"]:
            try:
                self.sum_reductions(step)
            except Exception:
                pass
        with self.lock:
            self.steps.append(step)
            self.step_count += 1
            self.opt_after_backward = True
            self.cur = self._new_step_acc()
            self.dirty = True
        if self.snapshot is not None:
            self.snapshot.after_backward()
        if self.tracing:
            self.trace_this_step()
        if self.detailed_step():
            self.check_rngs()
        self.flush(force=self.step_count <= 2)

    # -- loss components (GM402) ---------------------------------------------------------------
    def collect_components(self, output, prefix: str = "", depth: int = 0) -> None:
        """Scalar tensors with a graph in a root forward's output (``(loss, {"coord": ...})``):
        candidate loss components, held by weak reference until the step's backward."""
        torch = self.torch
        items = output.items() if isinstance(output, dict) else (
            enumerate(output) if isinstance(output, (tuple, list)) else ())
        for key, value in list(items)[:32]:
            name = str(key) if isinstance(output, dict) else f"{prefix or 'output'}[{key}]"
            if isinstance(value, torch.Tensor):
                if value.grad_fn is not None and value.numel() == 1:
                    self.cur["components"].append((name, weakref.ref(value)))
            elif depth == 0 and isinstance(value, (dict, tuple, list)):
                self.collect_components(value, name, depth + 1)

    def term_components(self, loss) -> None:
        """The terms of the sum the backpropagated loss is (``a + w * b - c``: below its
        additions and scalar factors) that the user's frames around the backward hold under a
        name (a local variable, a dict's key), the outermost named node of each: candidate loss
        components too, a term added outside the model's forward (a regulariser in the training
        step) among them."""
        if loss is None or loss.grad_fn is None:
            return
        torch = self.torch
        known = [t for _, ref in self.cur["components"] if (t := ref()) is not None]
        held = {id(t) for t in known}
        # a component already known (a model's output) is one term, not split in its parts
        stops = {t.grad_fn for t in known}
        named: dict = {}
        for frame in self.user_frames(3):
            for key, t in _named_scalars(torch, frame):
                if t.grad_fn is not loss.grad_fn:
                    named.setdefault(t.grad_fn, (key, t))
        if not named:
            return
        stack, visits = [loss.grad_fn], 0
        while stack and visits < MAX_LOSS_NODES:
            fn, visits = stack.pop(), visits + 1
            if fn in named and fn is not loss.grad_fn:
                name, t = named.pop(fn)
                if id(t) not in held:
                    held.add(id(t))
                    self.cur["components"].append((name, weakref.ref(t)))
                continue
            children = [n for n, _ in fn.next_functions if n is not None]
            kind = type(fn).__name__
            if fn not in stops and (kind.startswith(("AddBackward", "SubBackward")) or (
                    kind.startswith(("MulBackward", "DivBackward", "NegBackward"))
                    and len(children) == 1)):
                stack.extend(children)

    def frame_components(self, frame) -> None:
        """At the return of a function holding a watched line (a loss helper whose parts a
        finding names): its named scalars with a graph, held until the step's backward. The
        backward may come after its callers returned too (a framework's training step), when
        term_components finds no frame that holds them."""
        if self.quiet or self.torch is None:
            return
        comps = self.cur["components"]
        for key, t in _named_scalars(self.torch, frame):
            if len(comps) >= MAX_COMPONENTS:
                return
            comps.append((key, _Held(t)))

    def user_frames(self, limit: int) -> list:
        """The innermost ``limit`` frames of user code calling into the recorder."""
        frames, f = [], sys._getframe(1)
        while f is not None and len(frames) < limit:
            if self.rel(f.f_code.co_filename) is not None:
                frames.append(f)
            f = f.f_back
        return frames

    def loss_components(self, loss, step: dict) -> None:
        """Each component's value, its coefficient in the backpropagated loss (d loss / d
        component, one cheap ``autograd.grad`` over the top of the graph) and its share of the
        loss: a component weighted 0, or left out of the total, gets coefficient 0."""
        torch = self.torch
        if loss is None or loss.numel() != 1 or loss.grad_fn is None:
            return
        comps, ids = [], {id(loss)}
        for name, ref in self.cur["components"]:
            t = ref()
            if t is not None and id(t) not in ids and t.grad_fn is not None:
                ids.add(id(t))
                comps.append((name, t))
        if not comps:
            return
        comps = comps[:16]
        try:
            grads = torch.autograd.grad(loss, [t for _, t in comps], retain_graph=True,
                                        allow_unused=True)
        except Exception:
            return
        values = torch.stack([t.detach().float().reshape(()) for _, t in comps])
        coefs = torch.stack([g.detach().float().reshape(()) if g is not None
                             else torch.zeros((), device=values.device) for g in grads])
        total = float(loss.detach().float().item())
        out = []
        for (name, _), v, c, g in zip(comps, values.tolist(), coefs.tolist(), grads):
            share = c * v / total if total and math.isfinite(total) else None
            out.append({"name": name, "value": v, "coef": c, "share": share,
                        "in_graph": g is not None})
        step["components"] = out

    # -- summing reductions (GM401) -------------------------------------------------------------
    def sum_reductions(self, step: dict) -> None:
        """The full sums (and ``reduction='sum'`` losses) of this step that its backward went
        through, each with the loss's weight per summed row: the gradient that reached the sum
        (d loss / d sum, caught by a tensor hook, see ``hooks/losses.py``) times the scalar
        applied to the rows just before it. A sum that the loss does not divide by a count
        keeps its weight as its rows (the masked nodes) grow."""
        held = [info for info in self.cur["sums"] if "grad" in info]
        if not held:
            return
        torch = self.torch
        coefs = torch.stack([i.pop("grad").float().reshape(()) for i in held]).tolist()
        values = torch.stack([i.pop("value").float().reshape(()) for i in held]).tolist()
        rows = sorted(self.cur["node_rows"])[:8]
        step["sums"] = [{**{k: v for k, v in info.items() if k != "scale"},
                         "coef": c * info["scale"], "value": v, "node_rows": rows}
                        for info, c, v in zip(held, coefs, values)]

    # -- graphs held across steps (GM106) ------------------------------------------------------
    def retained_graphs(self, tensors, nodes: set, step: dict, model=None) -> None:
        """Tensors with an autograd graph held in the user's frames (locals of the functions
        around the backward, and their ``self`` attributes), outside this step's loss graph:
        how many autograd nodes they keep alive. A holder that grows step after step (``total
        += loss``, ``losses.append(loss)``) keeps every step's graph."""
        torch = self.torch
        roots = {id(t) for t in tensors}
        frames = self.user_frames(4)
        holders: dict[str, list] = {}
        owners: dict[str, tuple] = {}  # holder -> (code objects to search, name, is attribute)

        def add(name, value, depth=0):
            if isinstance(value, torch.Tensor):
                if value.grad_fn is not None and id(value) not in roots \
                        and value.grad_fn not in nodes:
                    holders.setdefault(name, []).append(value.grad_fn)
            elif depth < 2 and isinstance(value, (list, tuple)):
                for v in value[-64:]:
                    add(name, v, depth + 1)
            elif depth < 2 and isinstance(value, dict):
                for v in list(value.values())[:64]:
                    add(name, v, depth + 1)

        read: set[int] = set()  # objects whose attributes were read (the model may be a frame's self)

        def attributes(obj, codes=()):
            # a module's own state lives in its private tables: its other attributes are the
            # user's (a LightningModule's running list of losses)
            if not hasattr(obj, "__dict__") or id(obj) in read:
                return
            read.add(id(obj))
            module = isinstance(obj, torch.nn.Module)
            methods = (*codes, *_method_codes(type(obj)))
            for attr, v in list(vars(obj).items()):
                if module and attr.startswith("_"):
                    continue
                add(f"{type(obj).__name__}.{attr}", v)
                owners.setdefault(f"{type(obj).__name__}.{attr}", (methods, attr, True))

        for fr in frames:
            where = fr.f_code.co_name
            for name, value in list(fr.f_locals.items()):
                add(f"{where}.{name}", value)
                owners.setdefault(f"{where}.{name}", ((fr.f_code,), name, False))
                if name == "self":
                    attributes(value, (fr.f_code,))
        if model is not None:
            attributes(model)  # the trained model: its training step has returned by now
        if not holders:
            return
        cap = 4 * len(nodes) + 64  # enough to tell several steps' graphs from one
        for holder, fns in holders.items():
            seen, stack = set(), list(fns)
            while stack and len(seen) < cap:
                fn = stack.pop()
                if fn in seen or fn in nodes:
                    continue
                seen.add(fn)
                for nxt, _ in getattr(fn, "next_functions", ()):
                    if nxt is not None:
                        stack.append(nxt)
            item = {"step": step["index"], "holder": holder, "nodes": len(seen),
                    "loss_nodes": len(nodes), "tensors": len(fns),
                    "path": step.get("path", ""), "line": step.get("line", 0)}
            codes, name, is_attr = owners[holder]
            for code in codes:
                line = _accumulation_line(code, name, is_attr)
                where = self.rel(code.co_filename) if line else None
                if where is not None:
                    item["held_at"] = [where, line]
                    break
            self.add("retained", item)

    # -- model inputs (GM502, GM503) -----------------------------------------------------------
    def input_stats(self, source: str, args, path, line, label: str = "arg") -> None:
        """Per-column statistics of the float feature matrices entering a training forward of
        the module class ``source``, or leaving a user's collate function (tensor arguments and
        the node features of DGL graph arguments), for the first ``MAX_INPUT_BATCHES`` batches
        of each source met at detailed steps (a few milliseconds a batch: the first six steps
        give the three batches a verdict needs); for point features (unit-length column triples
        beside point triples, see :func:`_frame_stats`), the lengths of the direction vectors
        and how well tangents follow the points."""
        torch = self.torch
        if self.input_batches.get(source, 0) >= MAX_INPUT_BATCHES or not self.detailed_step():
            return
        self.input_batches[source] = self.input_batches.get(source, 0) + 1
        for name, x in _feature_matrices(torch, args, label):
            xf = x.detach().float()
            rows = torch.stack([xf.mean(0), xf.std(0), xf.amin(0), xf.amax(0),
                                (xf == xf.round()).all(0).float()]).cpu().tolist()
            item = {"path": path or "", "line": line, "module": source,
                    "input": name, "step": self.step_count, "rows": int(x.shape[0]),
                    "cols": int(x.shape[1]), "mean": rows[0], "std": rows[1], "min": rows[2],
                    "max": rows[3], "integral": [bool(v) for v in rows[4]]}
            frame = _frame_stats(torch, xf)
            if frame is not None:
                item["frame"] = frame
            self.add("inputs", item)

    # -- reconstruction sample (HTML report) --------------------------------------------------------
    def watch_reconstruction(self, args) -> None:
        """At a detailed training forward of the model, and at the last one of the step budget
        (at every one for ``diff --outcome``): remember its feature matrices, to find the
        reconstruction among its direct submodules' outputs (see note_reconstruction)."""
        last = self.budget_steps is not None and self.step_count == self.budget_steps - 1
        if self.detailed_step() or last or (self.snapshot is not None
                                            and self.snapshot.outcome_steps):
            feats = _feature_matrices(self.torch, args)
            self.cur["recon"] = {"inputs": feats, "first": None, "out": None} if feats else None
            self.cur["node_rows"].update(int(x.shape[0]) for _, x in feats)

    def child_input(self, args) -> None:
        """The first feature matrix a direct submodule receives: the model's input as the model
        changed it (GraphMAE masks nodes before its encoder sees them)."""
        acc = self.cur["recon"]
        if acc is None or acc["first"] is not None:
            return
        shapes = {tuple(x.shape): n for n, x in acc["inputs"]}
        for a in args:
            if isinstance(a, self.torch.Tensor) and tuple(a.shape) in shapes:
                acc["first"] = (shapes[tuple(a.shape)], a.detach())
                return

    def child_output(self, module, output) -> None:
        """The last direct submodule output with one row per input row and as many values: the
        reconstruction (the decoder's output; ``(N, 1, D)`` of a one-head GAT counts)."""
        acc = self.cur["recon"]
        out = output[0] if isinstance(output, (tuple, list)) and output else output
        if acc is None or not isinstance(out, self.torch.Tensor) or not out.is_floating_point():
            return
        for name, x in acc["inputs"]:
            if out.dim() >= 1 and out.shape[0] == x.shape[0] and out.numel() == x.numel():
                acc["out"] = (name, out.detach().reshape(x.shape),
                              self.module_names.get(id(module), type(module).__name__))
                return

    def note_reconstruction(self) -> None:
        """A few masked nodes' target rows against their reconstruction, at the latest detailed
        step: the rows the model changed before its first submodule are the masked ones."""
        acc, self.cur["recon"] = self.cur["recon"], None
        if acc is None:
            return
        torch = self.torch
        inputs = dict(acc["inputs"])
        if acc["out"] is None:
            name, x = acc["inputs"][0]
            if self.reconstruction is None:
                self.reconstruction = {"step": self.step_count, "input": name,
                                       "cols": int(x.shape[1]), "module": None}
            return
        name, out, module = acc["out"]
        x = inputs[name]
        first = acc["first"]
        changed = None
        if first is not None and first[0] == name:
            changed = (first[1] != x).any(1).nonzero().flatten()
        masked = changed is not None and 0 < changed.numel() < x.shape[0]
        rows = changed[:MAX_RECON_NODES] if masked else torch.arange(min(MAX_RECON_NODES, x.shape[0]))
        rows = rows.to(x.device)
        if masked:
            self.cur["node_rows"].add(int(changed.numel()))
        if self.snapshot is not None and self.snapshot.outcome_steps:
            every = changed if masked else torch.arange(x.shape[0], device=x.device)
            self.snapshot.note_outcome(self.step_count + 1, x[every], out[every], bool(masked))
        self.reconstruction = {
            "step": self.step_count, "input": name, "module": module, "cols": int(x.shape[1]),
            "masked": bool(masked), "masked_count": int(changed.numel()) if masked else 0,
            "nodes": rows.tolist(), "target": x.detach()[rows].float().cpu().tolist(),
            "predicted": out[rows].float().cpu().tolist()}
        self.dirty = True

    # -- samples drawn again (GM503) -----------------------------------------------------------
    def note_samples(self, dataset, indices, items) -> None:
        """A sample drawn again from a map-style dataset: did its features change, and is it
        the very object returned last time (a cached sample augmented in place)?"""
        facts = self.samples.setdefault(type(dataset).__name__, {
            "fetched": 0, "refetched": 0, "changed": 0, "inplace": 0, "max_change": 0.0})
        # the first MAX_TRACKED_SAMPLES indices drawn, and those again: an augmentation in place
        # changes every sample it touches, and fingerprinting every one cost a small model's
        # step a tenth of its time
        prints, tracked = self.sample_prints, self.samples_tracked
        chosen, room = [], min(MAX_TRACKED_SAMPLES - tracked.get(id(dataset), 0),
                               MAX_SAMPLE_PRINTS - len(prints))
        for idx, item in zip(indices, items):
            key = (id(dataset), idx if isinstance(idx, (int, str)) else repr(idx))
            if key in prints or room > 0:
                room -= key not in prints
                chosen.append((key, item))
        for (key, item), fp in zip(chosen, _fingerprints(self.torch, [it for _, it in chosen])):
            if fp is None:
                continue
            facts["fetched"] += 1
            old = self.sample_prints.get(key)
            if old is not None:
                facts["refetched"] += 1
                change = abs(fp - old[1]) / max(abs(old[1]), 1e-12)
                if change > 1e-6:
                    facts["changed"] += 1
                    facts["max_change"] = max(facts["max_change"], change)
                    if old[0] is not None and old[0]() is item:
                        facts["inplace"] += 1
            if old is None:
                tracked[key[0]] = tracked.get(key[0], 0) + 1
            try:
                ref = weakref.ref(item)
            except TypeError:
                ref = None
            prints[key] = (ref, fp)
        self.dirty = True

    # -- RNG use, by state comparison (no per-draw wrapping) -----------------------------------
    def rng_states(self) -> dict:
        out = {}
        rnd = sys.modules.get("random")
        if rnd is not None:
            out["random"] = rnd.getstate()
        np = sys.modules.get("numpy")
        if np is not None and hasattr(np, "random"):
            try:
                st = np.random.get_state()
                out["numpy"] = (st[1].tobytes(), st[2])
            except Exception:
                pass
        torch = self.torch
        if torch is not None:
            out["torch"] = bytes(torch.get_rng_state().numpy())
            try:
                if torch.cuda.is_initialized():
                    out["cuda"] = bytes(torch.cuda.get_rng_state().numpy())
            except Exception:
                pass
        return out

    def check_rngs(self, seeding: str = "") -> None:
        try:
            states = self.rng_states()
        except Exception:
            return
        for rng, st in states.items():
            old = self.rng_state.get(rng)
            if old is not None and old != st and rng != seeding:
                self.note_draw(rng)
            self.rng_state[rng] = st

    def note_draw(self, rng: str, stack: "list | None" = None) -> None:
        """A draw from ``rng``; ``stack``: the user frames of the call that drew, when the draw
        itself was seen (DGL's generator), kept for the first such call and recorded there."""
        if rng == "dgl" and self.snapshot is not None:
            self.snapshot.seed_dgl()  # before the draw: the diff's seed, if the program set none
        d = self.rng_draws.setdefault(rng, {"count": 0, "path": "", "line": 0,
                                            "before_seed": False})
        d["count"] += 1
        if not any(s["rng"] == rng for s in self.lists["seeds"]):
            d["before_seed"] = True
        if stack:
            if not d["path"]:
                d["path"], d["line"] = stack[0]
            self.record("rng_draw", *stack[0], {"rng": rng, "step": self.step_count}, stack=stack)
        self.dirty = True

    # -- graphs ----------------------------------------------------------------------------------
    def graph_facts(self, g) -> dict:
        """Self loops and in-degrees of a DGL graph; kept per graph object while its node and
        edge counts stay (a full-batch pipeline feeds the same graph at every step)."""
        key = (id(g), g.num_nodes(), g.num_edges())
        cached = self.graph_cache.get(key)
        if cached is not None and cached[0]() is g:
            return dict(cached[1])
        facts = self._graph_facts(g)
        try:
            if len(self.graph_cache) > 256:
                self.graph_cache.clear()
            self.graph_cache[key] = (weakref.ref(g), facts)
        except TypeError:
            pass
        return dict(facts)

    def _graph_facts(self, g) -> dict:
        torch = self.torch
        src, dst = g.edges()
        loop = src == dst
        n = g.num_nodes()
        loops = int(loop.sum())
        multi = 0
        if loops:
            counts = torch.bincount(src[loop].long(), minlength=n)
            multi = int((counts > 1).sum())
        zero_in = int((g.in_degrees() == 0).sum())
        return {"num_nodes": int(n), "num_edges": int(g.num_edges()), "self_loops": loops,
                "multi_loop_nodes": multi, "zero_in_degree": zero_in}


def _defined(code) -> bool:
    """A code object of a def or class statement (not a module, lambda or comprehension)."""
    return hasattr(code, "co_lines") and not code.co_name.startswith("<")


def _header(code) -> set:
    """The lines of a function's or class's header: decorators, signature, default values."""
    first = code.co_firstlineno
    body = min((ln for _, _, ln in code.co_lines() if ln and ln > first), default=first + 1)
    return set(range(first, body))


def _feature_matrices(torch, args, label: str = "arg") -> list:
    """(name, tensor) of the float feature matrices (rows = nodes) among a forward's arguments:
    tensor arguments and the node features of DGL graph arguments, named ``{label}{index}``."""
    found, seen, out = [], set(), []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            found.append((f"{label}{i}", a))
        elif _is_graph(a):
            found += [(f"{label}{i}.ndata.{k}", a.ndata[k]) for k in a.ndata.keys()
                      if isinstance(a.ndata[k], torch.Tensor)]
    for name, x in found:
        if id(x) in seen or x.dim() != 2 or x.shape[0] < 2 or not x.is_floating_point() \
                or x.shape[1] > 4096:
            continue
        seen.add(id(x))
        out.append((name, x))
    return out


def row_scale(sum_fn) -> float:
    """The scalar factor applied to every row just before a sum (``(err / n).sum()``,
    ``(0.5 * err).sum()``): read from the node under the sum; 1.0 when there is none."""
    if not type(sum_fn).__name__.startswith("Sum") or not sum_fn.next_functions:
        return 1.0
    below = sum_fn.next_functions[0][0]
    name = type(below).__name__
    if name.startswith(("DivBackward", "MulBackward")):
        for attr in ("_saved_other", "_saved_self"):
            x = getattr(below, attr, None)
            if hasattr(x, "numel") and x.numel() == 1 and not x.requires_grad:
                v = float(x)
                if name.startswith("Div") and attr == "_saved_other":
                    return 1.0 / v if v else 1.0
                if name.startswith("Mul"):
                    return v
    return 1.0


_GROW_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "setdefault",
                           "update", "__setitem__", "__iadd__"})
_LOADS = frozenset({"LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE"})
_STORES = frozenset({"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"})


def _named_scalars(torch, frame) -> list:
    """(name, tensor) of the one-element tensors with a graph that ``frame`` holds in a local
    variable or a dict's entry."""
    out = []
    for var, value in list(frame.f_locals.items()):
        pairs = value.items() if isinstance(value, dict) else [(var, value)]
        for key, t in list(pairs)[:32]:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.numel() == 1:
                out.append((str(key), t))
    return out


class _Held:
    """A strong reference with a weak reference's call: a component whose function returned,
    kept for this step's backward (the step's record is dropped after it)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __call__(self):
        return self.value


def _method_codes(cls) -> list:
    """The code objects of a class's own functions (where an attribute may be grown)."""
    out = []
    for klass in cls.__mro__[:-1]:
        for v in vars(klass).values():
            code = getattr(v, "__code__", None)
            if code is not None:
                out.append(code)
    return out[:64]


def _accumulation_line(code, name: str, is_attr: bool):
    """The first line of ``code`` that grows the holder ``name`` (a local or global variable,
    or an attribute when ``is_attr``): ``name += x`` / ``name = name + x``, ``name.append(x)``
    and the like, ``name[k] = x``; None when the code has none."""
    import dis

    try:
        ins = list(dis.get_instructions(code))
    except (TypeError, ValueError):
        return None

    def holds(i) -> bool:
        return (ins[i].opname == "LOAD_ATTR") == is_attr and ins[i].argval == name and (
            is_attr or ins[i].opname in _LOADS)

    line = None
    for i, x in enumerate(ins):
        pos = getattr(x, "positions", None)  # 3.11+; before: the line starts only
        start = x.starts_line if type(x.starts_line) is int else None
        line = (pos.lineno if pos is not None else None) or start or line
        if not line:
            continue
        before = range(max(0, i - 6), i)
        if x.opname == ("STORE_ATTR" if is_attr else x.opname) and x.argval == name and (
                is_attr or x.opname in _STORES) and any(
                    ins[j].opname.startswith(("BINARY_OP", "INPLACE_", "BINARY_ADD"))
                    for j in before) and any(holds(j) for j in before):
            return line
        if x.opname in ("LOAD_ATTR", "LOAD_METHOD") and x.argval in _GROW_METHODS and i and holds(i - 1):
            return line
        if x.opname == "STORE_SUBSCR" and any(holds(j) for j in range(max(0, i - 3), i)):
            return line
    return None


class _GradFnHolder:
    """Stands for a tensor in :meth:`Recorder.reached_params` when only its grad_fn is kept."""

    requires_grad = True

    def __init__(self, grad_fn) -> None:
        self.grad_fn = grad_fn


def _frame_stats(torch, xf) -> "dict | None":
    """Point features, their layout read from the values: the column triples whose rows have
    unit length (median over the rows where they are not zero: masked rows are) are directions
    (tangents, normals), the other varying triples are points, in column order. With K points
    and m*K directions, each point's m directions either follow it or come in m blocks of K.
    Returns the directions' mean length, their worst and median deviation from 1, and the mean
    |cos| (over the rows; the worst segment's) between each step to the next point and the
    directions at its two ends, for the kind of direction that follows the points best (about 1
    when the frames match the points; far lower when the points were rotated alone). None when
    no triple is a direction."""
    n, d = xf.shape
    if d % 3 or d < 9:
        return None
    v = xf.reshape(n, d // 3, 3)
    norms = v.norm(dim=-1)
    live = norms > 1e-6
    dev = (norms - 1).abs().masked_fill(~live, float("nan"))
    typical = torch.nanmedian(dev, dim=0).values
    is_dir = typical < DIRECTION_DEV  # nan (never live) compares False
    is_pt = ~is_dir & (norms.std(0) > 1e-6)
    dirs = is_dir.nonzero().flatten().tolist()
    pts = is_pt.nonzero().flatten().tolist()
    if not dirs:
        return None
    live_dirs = live[:, dirs]
    facts = {"directions": len(dirs), "points": len(pts),
             "direction_norm": float(norms[:, dirs][live_dirs].mean()),
             "direction_norm_dev": float(dev[:, dirs][live_dirs].max()),
             "direction_norm_typical_dev": float(typical[dirs].max())}
    k = len(pts)
    if k < 2 or len(dirs) % k:
        return facts
    m = len(dirs) // k
    follows = all(pts[j] < dirs[j * m] and (j + 1 == k or dirs[j * m + m - 1] < pts[j + 1])
                  for j in range(k))
    kinds = [[dirs[j * m + b] if follows else dirs[b * k + j] for j in range(k)]
             for b in range(m)]
    step = v[:, pts[1:]] - v[:, pts[:-1]]
    sl = step.norm(dim=-1)
    best = None
    for cols in kinds:
        # the mean of the tangents at both ends: parallel to the chord of an arc, whatever
        # the sampling step
        u = v[:, cols[:-1]] + v[:, cols[1:]]
        ul = u.norm(dim=-1)
        valid = (sl > 1e-6 * sl.max()) & (ul > 1e-6)
        if not bool(valid.any()):
            continue
        cos = (step * u).sum(-1).abs() / (sl * ul).clamp_min(1e-12)
        # per segment (mean over the rows), the worst: one point rotated alone shows at its
        # own segments, where a mean over all of them would hide it
        counts = valid.sum(0)
        per_segment = (cos * valid).sum(0)[counts > 0] / counts[counts > 0]
        a = float(per_segment.min())
        best = a if best is None or a > best else best
    if best is not None and math.isfinite(best):
        facts["tangent_alignment"] = best
    return facts


def _fingerprints(torch, items) -> list:
    """A cheap content fingerprint of each dataset sample (a tensor, a DGL graph's node and edge
    features, or the tensors of a tuple/list/dict: the sum and the absolute sum of their float
    values); None for one that holds no float tensor. A batch's samples are summed together, in
    a few tensor operations: fetching runs at every step, and a few per sample cost more than
    a tenth of a small model's step."""
    held = [_float_tensors(torch, item) for item in items]
    flat = [t.detach().reshape(-1) for ts in held for t in ts]
    if not flat:
        return [None] * len(held)
    if len({t.device for t in flat}) > 1:
        flat = [t.cpu() for t in flat]
    values = torch.cat(flat).double()
    sizes = torch.tensor([sum(t.numel() for t in ts) for ts in held], device=values.device)
    owner = torch.repeat_interleave(torch.arange(len(held), device=values.device), sizes)
    sums = torch.zeros(2, len(held), dtype=torch.float64, device=values.device)
    sums[0].index_add_(0, owner, values)
    sums[1].index_add_(0, owner, values.abs())
    return [a + 1.618 * b if ts else None for a, b, ts in zip(*sums.tolist(), held)]


def _float_tensors(torch, item) -> list:
    if isinstance(item, torch.Tensor):
        tensors = [item]
    elif _is_graph(item):
        tensors = [*(item.ndata[k] for k in item.ndata.keys()),
                   *(item.edata[k] for k in item.edata.keys())]
    elif isinstance(item, (tuple, list)):
        tensors = list(item[:8])
    elif isinstance(item, dict):
        tensors = list(item.values())[:8]
    else:
        return []
    return [t for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _is_graph(x) -> bool:
    t = type(x)
    return t.__name__ == "DGLGraph" and t.__module__.startswith("dgl")


def _jsonable(x):
    if isinstance(x, (set, tuple)):
        return list(x)
    return str(x)


def _env_int(name: str):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _parse_budget(text: str):
    """``"12"`` -> (12, False); ``"auto:20"`` -> (20, True); ``""`` -> (None, False)."""
    text = (text or "").strip()
    if text.startswith("auto"):
        _, _, cap = text.partition(":")
        return (int(cap) if cap.isdigit() else 20), True
    return (int(text) if text.isdigit() else None), False


def _library_dirs() -> tuple:
    dirs = {_AUDITOR_DIR, os.environ.get("GM_AUDIT_PROBE_SITE", "") or _AUDITOR_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            dirs.add(p)
    dirs.add(os.path.dirname(os.__file__))
    return tuple(sorted({os.path.realpath(d) + os.sep for d in dirs if d}))


def _short(t) -> str:
    return str(t).replace("torch.", "")


# ------------------------------------------------------------------------------------------------
# torch
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# installation
# ------------------------------------------------------------------------------------------------

# library -> the hook modules (auditor/probe/hooks/<name>.py) and their function patching it
_HOOKS = {
    "torch": [(m, "install") for m in ("forwards", "autograd", "optimizers", "data", "modes",
                                         "contexts", "losses", "parallel", "loading", "rng")],
    "numpy": [("rng", "install_numpy")],
    "dgl": [("graphs", "install"), ("rng", "install_dgl")],
    "dgl.geometry": [("rng", "install_dgl_geometry")],
}
_hook_modules: dict = {}


def _hook(name: str):
    """``auditor/probe/hooks/<name>.py``, loaded by file path once per process."""
    module = _hook_modules.get(name)
    if module is None:
        import importlib.util

        path = os.path.join(_HERE, "hooks", f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_gm_audit_hooks_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _hook_modules[name] = module
    return module


def _patch_torch_first(rec: Recorder, torch) -> None:
    rec.torch = torch
    rec.run["torch_imported"] = True
    rec.rng_state.update({k: v for k, v in rec.rng_states().items() if k not in rec.rng_state})


def _patch(rec: Recorder, name: str, module) -> None:
    if rec.snapshot is not None:
        # first: start-up seeding, and snapshot hooks that run before the recorder's own
        rec.snapshot.imported(name, module)
    if name == "torch":
        _patch_torch_first(rec, module)
    for hook, fn in _HOOKS[name]:
        getattr(_hook(hook), fn)(rec, module)


def _snapshot_mode(rec: Recorder):
    """``gm-audit diff`` sets GM_AUDIT_DIFF_DIR: load ``auditor/diff/snapshot.py`` by file path."""
    if not os.environ.get("GM_AUDIT_DIFF_DIR"):
        return None
    try:
        import importlib.util

        path = os.path.join(_AUDITOR_DIR, "diff", "snapshot.py")
        spec = importlib.util.spec_from_file_location("_gm_audit_snapshot", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load(rec)
    except Exception as exc:  # the user's program runs regardless
        sys.stderr.write("gm-audit diff: snapshot mode not installed: %r\n" % (exc,))
        return None


class _PostImportFinder:
    """A meta-path finder that lets the real finders find a module and patches it once its own
    code has run: torch is never imported by the recorder itself."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.pending = set(_HOOKS)
        self.active = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.pending or getattr(self.active, "on", False):
            return None
        self.active.on = True
        try:
            import importlib.util

            spec = importlib.util.find_spec(fullname)
        except Exception:
            return None
        finally:
            self.active.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        self.pending.discard(fullname)
        loader, rec = spec.loader, self.rec

        class Loader:
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                rec.guarded(_patch)(rec, fullname, module)

            def __getattr__(self, name):
                return getattr(loader, name)

        spec.loader = Loader()
        return spec

    # importlib.invalidate_caches() calls this on every meta-path finder
    def invalidate_caches(self) -> None:
        return None


_recorder = None


def install() -> "Recorder | None":
    """Install the recorder in this process (from the generated sitecustomize)."""
    global _recorder
    run_dir = os.environ.get("GM_AUDIT_PROBE_DIR")
    if not run_dir or _recorder is not None:
        return _recorder
    watch = []
    watch_file = os.environ.get("GM_AUDIT_PROBE_WATCH")
    if watch_file:
        try:
            with open(watch_file, encoding="utf-8") as fh:
                watch = json.load(fh).get("spans", [])
        except (OSError, ValueError):
            watch = []
    rec = Recorder(run_dir, os.environ.get("GM_AUDIT_PROBE_CWD") or os.getcwd(),
                   os.environ.get("GM_AUDIT_PROBE_STEPS", ""), watch)
    _recorder = rec
    import random

    _hook("rng").install_random(rec, random)
    for name in _HOOKS:
        if name in sys.modules:
            rec.guarded(_patch)(rec, name, sys.modules[name])
    finder = _PostImportFinder(rec)
    finder.pending -= {n for n in _HOOKS if n in sys.modules}
    sys.meta_path.insert(0, finder)
    atexit.register(rec.guarded(rec.at_exit))
    previous_hook = sys.excepthook

    def excepthook(kind, value, tb):
        rec.run["status"] = "exception"
        rec.run["error"] = f"{kind.__name__}: {value}"[:500]
        return previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                def on_term(signum, frame):
                    # gm-audit may send a second SIGTERM (its signal handler and the run's wait
                    # loop both stop the group): it must not re-enter and end the write early;
                    # a hook the signal interrupted must not skip it either
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    rec.tls.busy = 0
                    rec.run["status"] = "signal"
                    rec.guarded(rec.at_exit)()  # the diff's snapshot too: what was gathered
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.kill(os.getpid(), signal.SIGTERM)

                signal.signal(signal.SIGTERM, on_term)
        except (ValueError, OSError):
            pass

    def in_child():
        # a fork (DataLoader worker): it keeps the patches but writes no evidence of its own
        rec.pid = -1

    os.register_at_fork(after_in_child=in_child)
    rec.start_tracing()
    return rec
