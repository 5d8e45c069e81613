"""What the oracle installs in the launched Python process at start-up (loaded by a generated
``sitecustomize.py``, the way coverage.py measures subprocesses): torch's global hooks record,
per optimizer step, the quantities each bug class changes, and the run is stopped after the step
budget. Self-contained on purpose: it imports nothing of this repository (nor of gm-audit), only
torch, and writes one JSON file named by ``GM_ORACLE_OUT``.

Environment: ``GM_ORACLE_OUT`` (evidence file), ``GM_ORACLE_STEPS`` (optimizer steps to run;
the run is stopped at the next step), ``GM_ORACLE_ROOT`` (the copy being run: the files imported
from under it are reported), ``GM_ORACLE_WATCH`` (JSON ``{path: [lines]}``: which of these lines
ran is reported), ``GM_ORACLE_COVER=1`` (every line run under the root is reported instead).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import threading
from typing import Any, Optional

import torch
from torch import nn

# popped: a Python process this one starts (a compiler, a sub-launch) records nothing over it
OUT = os.environ.pop("GM_ORACLE_OUT")
PID = os.getpid()  # a forked DataLoader worker inherits the hooks but writes nothing
STEPS = int(os.environ.get("GM_ORACLE_STEPS", "3"))
ROOT = os.path.realpath(os.environ.get("GM_ORACLE_ROOT", os.getcwd())) + os.sep
COVER = os.environ.get("GM_ORACLE_COVER") == "1"
WATCH: dict[str, set[int]] = {os.path.realpath(k): set(v) for k, v in
                              json.loads(os.environ.get("GM_ORACLE_WATCH", "{}")).items()}


def _number(x: Any) -> Optional[float]:
    try:
        return float(x)
    except (TypeError, ValueError, RuntimeError):
        return None


class Recorder:
    def __init__(self) -> None:
        self.steps_done = 0
        self.depth = 0  # module forwards active: a forward at depth 0 is a root module's
        self.roots: dict[int, nn.Module] = {}  # root modules with parameters seen this run
        self.step: dict[str, Any] = {}
        self.evidence: dict[str, Any] = {
            "steps": [], "init": {}, "inputs": [], "dtypes": {}, "loads": [], "state_loads": [],
            "flags": None, "stopped": False, "lines": {}, "imported": [], "ddp": False}
        self.written = False
        self._new_step()

    # -- per step -------------------------------------------------------------------------
    def _new_step(self) -> None:
        self.step = {"index": self.steps_done, "losses": [], "loss_dtype": None, "criteria": [],
                     "training": None, "carried": None, "no_grad_forwards": 0, "self_loops": [],
                     "graphs": set(), "alive": None}
        if self.steps_done and self.steps_done <= STEPS:
            self.step["alive"] = _alive_with_history()

    def _params(self) -> dict[str, nn.Parameter]:
        out: dict[str, nn.Parameter] = {}
        for root in self.roots.values():
            for name, p in root.named_parameters():
                out.setdefault(f"{type(root).__name__}.{name}", p)
        return out

    # -- module hooks ---------------------------------------------------------------------
    def forward_pre(self, module: nn.Module, args: tuple) -> None:
        self.depth += 1
        if self.depth != 1 or self.steps_done >= STEPS:
            return
        has_params = next(module.parameters(), None) is not None
        if type(module).__name__ == "DistributedDataParallel":
            self.evidence["ddp"] = True
        if has_params and id(module) not in self.roots:
            self.roots[id(module)] = module
            prefix = type(module).__name__
            for name, p in module.named_parameters():
                self.evidence["init"].setdefault(f"{prefix}.{name}", _checksum(p))
            for name, b in module.named_buffers():
                self.evidence["init"].setdefault(f"{prefix}.{name}", _checksum(b))
        if not has_params:
            return
        if not torch.is_grad_enabled():
            self.step["no_grad_forwards"] += 1
        self.evidence["dtypes"].setdefault("parameters", sorted(
            {str(p.dtype) for p in module.parameters()}))
        for i, arg in enumerate(args):
            if _is_graph(arg) and id(arg) not in self.step["graphs"]:
                self.step["graphs"].add(id(arg))
                self.step["self_loops"].append(_self_loops(arg))
            if self.steps_done == 0 and len(self.evidence["inputs"]) < 16:
                for key, t in _float_tensors(arg, f"{type(module).__name__}[{i}]"):
                    self.evidence["inputs"].append([key, *_stats(t)])

    def forward_post(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.depth -= 1
        if self.depth or self.steps_done >= STEPS:
            return
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            if next(module.parameters(), None) is not None:
                self.evidence["dtypes"].setdefault("outputs", str(output.dtype))
            elif output.dim() == 0:  # a loss module's value: a component of the loss
                self.step["criteria"].append(_number(output.detach()))

    # -- backward and step ----------------------------------------------------------------
    def backward(self, tensor: torch.Tensor) -> None:
        if self.steps_done >= STEPS or self.step["training"] is not None:
            return
        if self.evidence["flags"] is None:
            self.evidence["flags"] = _flags()
        if tensor.dim() == 0:
            self.step["losses"].append(_number(tensor.detach()))
            self.step["loss_dtype"] = str(tensor.dtype)
        modules = [m for root in self.roots.values() for m in root.modules()]
        self.step["training"] = [sum(m.training for m in modules), len(modules)]
        params = self._params()
        self.step["carried"] = [sum(p.grad is not None and bool(p.grad.any()) for p in params.values()),
                                len(params)]

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.steps_done >= STEPS:
            return
        params = self._params()
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        grads = {}
        for name, p in params.items():
            grads[name] = "none" if p.grad is None else "zero" if not p.grad.any() else "nonzero"
        trained = {n for n, p in params.items() if p.grad is not None}
        self.step["grads"] = grads
        self.step["requires_grad_off"] = sum(not p.requires_grad for p in params.values())
        self.step["optimizer_holds"] = [sum(id(params[n]) in held for n in trained), len(trained)]
        self.step["batchnorm"] = _batchnorm(self.roots.values())
        self.step["graphs"] = len(self.step["graphs"])
        self.evidence["steps"].append(self.step)
        self.steps_done += 1
        self._new_step()

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.steps_done >= STEPS:
            self.stop()

    # -- the end ----------------------------------------------------------------------------
    def stop(self) -> None:
        self.evidence["stopped"] = True
        self.write()
        raise SystemExit(0)

    def write(self) -> None:
        if self.written or os.getpid() != PID:
            return
        self.written = True
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        if isinstance(self.step.get("graphs"), set):
            self.step["graphs"] = len(self.step["graphs"])
        files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
        self.evidence["imported"] = sorted(
            os.path.relpath(os.path.realpath(f), ROOT) for f in files
            if f and os.path.realpath(f).startswith(ROOT) and f.endswith(".py"))
        self.evidence["lines"] = {path: sorted(lines) for path, lines in _RAN.items()}
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump(self.evidence, fh)


# -- what is measured ----------------------------------------------------------------------
def _checksum(t: torch.Tensor) -> list:
    d = t.detach().double()
    return [round(float(d.sum()), 6), round(float(d.abs().sum()), 6)] if d.numel() else [0.0, 0.0]


def _stats(t: torch.Tensor) -> list:
    d = t.detach().double()
    return [list(t.shape), round(float(d.mean()), 6), round(float(d.std()), 6) if d.numel() > 1 else 0.0]


def _is_graph(x: Any) -> bool:
    return type(x).__name__ == "DGLGraph" and hasattr(x, "edges")


def _self_loops(g: Any) -> float:
    """Self loops per node of a DGL graph."""
    try:
        u, v = g.edges()
        return round(float((u == v).sum()) / max(1, g.num_nodes()), 4)
    except Exception:  # a block or a heterograph: not measured
        return -1.0


def _float_tensors(x: Any, key: str):
    """The floating tensors an argument carries: itself, or a DGL graph's node features."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        yield key, x
    elif _is_graph(x):
        try:
            for name, t in sorted(x.ndata.items()):
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    yield f"{key}.ndata[{name}]", t
        except Exception:  # a heterograph's ndata is per type
            return


def _alive_with_history() -> int:
    """Tensors with autograd history alive now (at a step's start): a loss kept across steps
    with its graph is one more than a run that keeps numbers."""
    return sum(1 for o in gc.get_objects()
               if isinstance(o, torch.Tensor) and getattr(o, "grad_fn", None) is not None)


def _batchnorm(roots) -> list:
    out = []
    for root in roots:
        for name, m in root.named_modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
                out.append([f"{type(root).__name__}.{name}", m.momentum,
                            int(m.num_batches_tracked) if m.num_batches_tracked is not None else None,
                            _checksum(m.running_mean) if m.running_mean is not None else None])
    return out


def _flags() -> dict:
    cudnn = torch.backends.cudnn
    extra = sorted(k for k in vars(cudnn) if ("determ" in k or "bench" in k)
                   and k not in ("deterministic", "benchmark", "benchmark_limit"))
    return {"benchmark": bool(cudnn.benchmark), "deterministic": bool(cudnn.deterministic),
            "algorithms": torch.are_deterministic_algorithms_enabled(), "misspelled": extra}


# -- lines of the mutated file that ran ----------------------------------------------------
_RAN: dict[str, set[int]] = {}


_PATHS: dict[str, Optional[str]] = {}  # a code object's file name -> its watched path, or None


def _trace(frame, event, arg):
    """The global trace function: runs on every call of the program, so it only looks up the
    file in a cache; the local one records the watched lines of watched files."""
    name = frame.f_code.co_filename
    path = _PATHS.get(name, "")
    if path == "":
        real = os.path.realpath(name)
        path = _PATHS[name] = real if real in WATCH else None
    if path is None:
        return None
    todo, ran = WATCH[path], _RAN.setdefault(path, set())

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in todo:
            ran.add(frame.f_lineno)
        return local

    if frame.f_lineno in todo:
        ran.add(frame.f_lineno)
    return local


_CODES: dict[Any, Optional[set[int]]] = {}  # code object -> its lines not yet run (None: not ours)


def _cover(frame, event, arg):
    """Line coverage of the files under the root; a code object is traced only until each of
    its lines has run once, so a step's loop soon runs untraced."""
    code = frame.f_code
    todo = _CODES.get(code, False)
    if todo is False:
        real = os.path.realpath(code.co_filename)
        ours = real.startswith(ROOT) and not code.co_filename.startswith("<")  # not <frozen abc>
        todo = _CODES[code] = {n for _, _, n in code.co_lines() if n} if ours else None
    if not todo:
        return None
    ran = _RAN.setdefault(os.path.realpath(code.co_filename), set())

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in todo:
            todo.discard(frame.f_lineno)
            ran.add(frame.f_lineno)
        return local if todo else None

    ran.add(frame.f_lineno)
    return local


# -- installation ----------------------------------------------------------------------------
RECORDER = Recorder()


def _install() -> None:
    from torch.nn.modules.module import (register_module_forward_hook,
                                         register_module_forward_pre_hook)
    from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                       register_optimizer_step_pre_hook)

    register_module_forward_pre_hook(RECORDER.forward_pre)
    register_module_forward_hook(RECORDER.forward_post)
    register_optimizer_step_pre_hook(lambda opt, args, kwargs: RECORDER.before_step(opt))
    register_optimizer_step_post_hook(lambda opt, args, kwargs: RECORDER.after_step(opt))

    backward = torch.Tensor.backward

    def recorded_backward(self, *args, **kwargs):
        RECORDER.backward(self)
        return backward(self, *args, **kwargs)

    torch.Tensor.backward = recorded_backward

    load = torch.load

    def recorded_load(*args, **kwargs):
        RECORDER.evidence["loads"].append(kwargs.get("weights_only"))
        return load(*args, **kwargs)

    torch.load = recorded_load

    load_state_dict = nn.Module.load_state_dict

    def recorded_load_state_dict(self, state_dict, strict=True, *args, **kwargs):
        result = load_state_dict(self, state_dict, strict, *args, **kwargs)
        RECORDER.evidence["state_loads"].append(
            [bool(strict), len(getattr(result, "missing_keys", ()) or ()),
             len(getattr(result, "unexpected_keys", ()) or ())])
        return result

    nn.Module.load_state_dict = recorded_load_state_dict
    atexit.register(RECORDER.write)
    tracer = _cover if COVER else _trace if WATCH else None
    if tracer is not None:
        sys.settrace(tracer)
        threading.settrace(tracer)


_install()
