"""The probe's evidence: what happened when the user's command ran, merged over its processes.

This is the API that ``Rule.confirm(finding, evidence)`` reads. It never imports torch: the
recorder (``auditor/probe/recorder.py``) writes one JSON file per Python process into the run
directory, and :meth:`Evidence.load` reads them all back.

Paths are relative to the directory ``gm-audit probe`` ran in, POSIX separators, exactly like the
``path`` of static findings, so ``evidence.calls_at(finding.path, finding.line)`` just works.
Lines are 1-based. Steps are numbered from 1 per process; a *step* is one backward of a loss
(``Tensor.backward`` / ``torch.autograd.backward``), or an ``optimizer.step()`` that had no
backward since the previous one.

Quick tour (``ev`` is an :class:`Evidence`)::

    ev.ran(path, line, end_line)        # did any line of this span execute? (watched lines only,
                                        #   i.e. the lines of the static findings, plus any line
                                        #   where a recorded call happened)
    ev.hits(path, line, end_line)       # how many times
    ev.calls_at(path, line, kind=None)  # recorded calls at that line: CallRecord(kind, count, args)
    ev.calls(kind)                      # every recorded call of a kind, anywhere
    ev.steps                            # StepFacts per training step (all processes)
    ev.param_reachability(step)         # used-in-forward vs reached-from-loss, per parameter
    ev.modes_at_backward                # [(step, {"": model.training, "encoder.dropout": False})]
    ev.ddp, ev.world_size               # DDP constructions; largest world size seen
    ev.losses                           # loss function calls: reduction, dtype, value, numel
    ev.graphs                           # DGL graphs entering modules and self-loop ops
    ev.loads                            # torch.load and load_state_dict calls
    ev.seeds, ev.seeded_rngs, ev.rng_draws
    ev.batchnorm                        # BatchNorm buffer events outside the forward
    ev.optimizers                       # optimizer params vs the trained model's, per step
    ev.processes                        # one Evidence per process (DDP / torchrun ranks)

Call kinds recorded by :meth:`calls_at` (``args`` keys in brackets):

* ``forward``        a root module's forward (not nested in another module's forward)
                     [module, training, grad_enabled, inference_mode, autocast, eval_submodules]
* ``backward``       [step, loss_dtype, loss_value]
* ``detach``, ``data``   a user ``.detach()`` / ``.data`` [requires_grad, grad_fn, shape]
* ``train``, ``eval`` Module.train(mode) / Module.eval() at user level [module, mode, is_root]
* ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``   [mode]
* ``requires_grad_``  Tensor.requires_grad_(flag) on a parameter [flag, param]
* ``autocast``       entering torch.autocast [device, dtype, enabled]
* ``scaler.scale``, ``scaler.step``, ``scaler.update``   GradScaler use [enabled]
* ``loss``           a torch.nn.functional loss [fn, reduction, dtype, value, numel]
* ``zero_grad``      Optimizer.zero_grad / Module.zero_grad [set_to_none, step, after_backward]
* ``optimizer.step`` [step, n_params, missing_model_params, foreign_params]
* ``ddp``            DistributedDataParallel(...) [pg_initialized, world_size, backend]
* ``add_self_loop``, ``remove_self_loop``   [before, after]: GraphFacts dicts
* ``torch.load``     [weights_only]
* ``load_state_dict`` [strict, missing, unexpected, module, trained]
* ``seed``           [fn, rng, value]
* ``bn.reset``       BatchNorm reset_running_stats / reset_parameters [module]
* ``normalize``      torch.nn.functional.normalize on a prediction [mean_norm, dim_size]

Everything is tolerant of missing keys: a process that crashed early leaves a partial file, and
this module never raises on a malformed one (it is skipped and noted in :attr:`Evidence.notes`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

SCHEMA_VERSION = 1
FILE_PREFIX = "evidence-"


def _build(cls, data: dict[str, Any], **extra: Any):
    """A dataclass from a JSON dict, ignoring unknown keys (newer recorders add some)."""
    names = {f.name for f in fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in names}
    kwargs.update({k: v for k, v in extra.items() if k in names})
    return cls(**kwargs)


@dataclass
class CallRecord:
    """One call site of one recorded API, aggregated: how often it ran and a few samples.

    ``args`` holds up to a few recorded argument dicts (the first calls, plus the last one).
    ``steps``: for each distinct moment it ran, how many steps had *completed* then (``0``: before
    the first backward; ``k``: after backward ``k``, i.e. while preparing step ``k + 1``); the
    ``step`` key of ``args`` samples follows the same convention, while StepFacts.index is
    1-based (the backward that completes step ``k`` has index ``k``)."""

    kind: str
    path: str
    line: int
    count: int = 0
    args: list[dict[str, Any]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    pid: int = 0
    rank: Optional[int] = None

    def arg(self, key: str, default: Any = None) -> Any:
        """``key`` of the first recorded sample that has it."""
        for a in self.args:
            if key in a:
                return a[key]
        return default

    def values(self, key: str) -> list[Any]:
        """``key`` across every recorded sample."""
        return [a[key] for a in self.args if key in a]


@dataclass
class GradFacts:
    """A parameter's gradient after a backward: ``state`` is none | zero | finite | nonfinite."""

    state: str
    norm: Optional[float] = None


@dataclass
class GraphFacts:
    """A DGL graph seen by the probe: entering a module's forward (``where='forward'``) or
    before/after ``dgl.add_self_loop`` / ``remove_self_loop``."""

    path: str = ""
    line: int = 0
    where: str = "forward"
    module: str = ""
    step: int = 0
    num_nodes: int = 0
    num_edges: int = 0
    self_loops: int = 0  # total self-loop edges
    multi_loop_nodes: int = 0  # nodes with more than one self loop
    zero_in_degree: int = 0  # nodes with no incoming edge
    pid: int = 0
    rank: Optional[int] = None

    @property
    def duplicate_self_loops(self) -> bool:
        return self.multi_loop_nodes > 0


@dataclass
class StepFacts:
    """Facts of one training step (one backward, plus the optimizer step that followed it).

    Parameter names are those of the trained model (``model.named_parameters()``; a DDP wrapper's
    ``module.`` prefix stripped). ``model`` is the class name of that model."""

    index: int
    path: str = ""  # the backward's user call site
    line: int = 0
    kind: str = "backward"  # backward | optimizer (an optimizer.step without backward)
    model: str = ""
    loss_value: Optional[float] = None
    loss_dtype: str = ""
    loss_finite: Optional[bool] = None
    loss_grad_fn: str = ""
    params_used: list[str] = field(default_factory=list)  # in a forward that ran this step
    params_reached: list[str] = field(default_factory=list)  # from loss.grad_fn
    params_frozen: list[str] = field(default_factory=list)  # requires_grad False
    grads: dict[str, GradFacts] = field(default_factory=dict)
    training_at_forward: dict[str, bool] = field(default_factory=dict)  # "" = the model itself
    training_at_backward: dict[str, bool] = field(default_factory=dict)
    grad_enabled_at_forward: Optional[bool] = None
    inference_mode_at_forward: Optional[bool] = None
    autocast_at_forward: Optional[dict[str, Any]] = None  # {"device", "dtype", "enabled"}
    autocast_at_backward: Optional[dict[str, Any]] = None
    scaler_used: bool = False  # GradScaler.scale during this step
    zero_grad_calls: int = 0
    optimizer_steps: int = 0
    param_change: dict[str, float] = field(default_factory=dict)  # max |after - before| per param
    nonfinite_module: Optional[str] = None  # first module whose output went non-finite
    nonfinite_grads: list[str] = field(default_factory=list)
    pid: int = 0
    rank: Optional[int] = None

    @property
    def params_unreached(self) -> list[str]:
        """Used in the forward but not reachable from the loss: gradients blocked on the way."""
        reached = set(self.params_reached)
        return [p for p in self.params_used if p not in reached]

    @property
    def params_without_grad(self) -> list[str]:
        return [n for n, g in self.grads.items() if g.state == "none"]

    @property
    def eval_modules_at_backward(self) -> list[str]:
        """Modules (``""`` = the model) whose ``training`` was False when backward ran."""
        return [m for m, t in self.training_at_backward.items() if not t]

    @property
    def eval_modules_at_forward(self) -> list[str]:
        return [m for m, t in self.training_at_forward.items() if not t]


@dataclass
class Reachability:
    """Answer of :meth:`Evidence.param_reachability`."""

    step: int
    used: list[str]
    reached: list[str]
    unreached: list[str]  # used but not reached: the GM101 signal
    frozen: list[str]  # requires_grad False
    without_grad: list[str]  # grad None after the backward

    def summary(self, limit: int = 4) -> str:
        names = ", ".join(self.unreached[:limit]) + (" ..." if len(self.unreached) > limit else "")
        return (f"{len(self.unreached)} of {len(self.used)} parameters used in the forward were "
                f"not reachable from the loss at step {self.step}" + (f" ({names})" if names else ""))


@dataclass
class LossCall:
    """One call of a loss function (``torch.nn.functional.*_loss`` and the nn loss modules)."""

    path: str
    line: int
    fn: str
    reduction: str = "mean"
    dtype: str = ""
    value: Optional[float] = None
    numel: int = 0  # elements of the input (the prediction)
    batch: int = 0  # first dimension of the input
    step: int = 0
    autocast: Optional[dict[str, Any]] = None
    pred_std: Optional[float] = None  # std over the first dimension, averaged over features
    target_std: Optional[float] = None
    pred_rms: Optional[float] = None
    target_rms: Optional[float] = None
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class DDPFacts:
    path: str
    line: int
    pg_initialized: bool = False
    world_size: int = 1
    backend: str = ""
    module: str = ""
    pid: int = 0
    rank: Optional[int] = None

    @property
    def single_process(self) -> bool:
        return not self.pg_initialized or self.world_size <= 1


@dataclass
class LoadFacts:
    """``kind`` torch.load: ``weights_only`` (None: not passed). ``kind`` load_state_dict:
    ``strict``, ``missing``/``unexpected`` keys, ``module`` (class), ``trained`` (the module is,
    or is inside, the model that was later trained), ``changed`` (parameters whose values the
    load replaced)."""

    kind: str
    path: str
    line: int
    weights_only: Optional[bool] = None
    strict: Optional[bool] = None
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    module: str = ""
    trained: Optional[bool] = None
    changed: int = 0
    step: int = 0
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class SeedCall:
    """``rng``: random | numpy | torch | cuda | dgl."""

    fn: str
    rng: str
    path: str
    line: int
    value: Any = None
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class DrawFacts:
    """Draws from one RNG: how many calls (sampled: the probe counts user-level draws) and the
    first user site; ``before_seed`` is True when a draw happened before that RNG was seeded."""

    rng: str
    count: int = 0
    path: str = ""
    line: int = 0
    before_seed: bool = False


@dataclass
class BatchNormEvent:
    """``kind``: reset (reset_running_stats/reset_parameters called), modified (buffers changed
    outside the module's own forward, detected at ``step``), frozen (forward ran in eval mode
    during a training step, so the running stats did not update)."""

    kind: str
    module: str
    path: str = ""
    line: int = 0
    step: int = 0
    buffers: list[str] = field(default_factory=list)
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class OptimizerFacts:
    """An optimizer as seen at its first ``step()`` (site of that call)."""

    path: str
    line: int
    cls: str = ""
    n_params: int = 0
    model: str = ""
    missing_model_params: list[str] = field(default_factory=list)  # trained, not optimised
    foreign_params: int = 0  # optimised, not in the trained model
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class OutputFacts:
    """Prediction-side statistics: ``normalize`` calls on predictions (``mean_norm`` of the
    vectors before normalising), per step."""

    path: str
    line: int
    kind: str
    step: int = 0
    mean_norm: Optional[float] = None
    dim_size: int = 0
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class RunFacts:
    """How the process ended: ``status`` running (no end written: killed or crashed hard) | exit
    | budget (the probe stopped it after its step budget) | exception | signal."""

    pid: int = 0
    rank: Optional[int] = None
    world_size: Optional[int] = None
    argv: list[str] = field(default_factory=list)
    status: str = "running"
    exit_code: Optional[int] = None
    steps: int = 0
    devices: list[str] = field(default_factory=list)  # devices of the tensors of the model
    torch_imported: bool = False
    error: str = ""  # exception type and message when status == exception


def _num(x: Any) -> Optional[float]:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


class Evidence:
    """Evidence of one run: every process merged; :attr:`processes` for one process at a time."""

    def __init__(self, docs: Iterable[dict[str, Any]] = (), notes: Iterable[str] = ()) -> None:
        self.docs: list[dict[str, Any]] = [d for d in docs if isinstance(d, dict)]
        self.notes: list[str] = list(notes)
        self._calls: Optional[list[CallRecord]] = None
        self._by_line: Optional[dict[tuple[str, int], list[CallRecord]]] = None
        self._lines: Optional[dict[tuple[str, int], int]] = None

    # -- loading -----------------------------------------------------------------------------------
    @classmethod
    def load(cls, run_dir: Union[str, Path]) -> "Evidence":
        docs, notes = [], []
        for p in sorted(Path(run_dir).glob(f"{FILE_PREFIX}*.json")):
            try:
                docs.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                notes.append(f"unreadable evidence file {p.name}: {exc}")
        docs.sort(key=lambda d: (d.get("rank") if isinstance(d.get("rank"), int) else 1 << 30,
                                 d.get("start", 0)))
        return cls(docs, notes)

    @property
    def processes(self) -> list["Evidence"]:
        """One :class:`Evidence` per process (ordered by rank, then start time)."""
        return [Evidence([d]) for d in self.docs]

    def _each(self, key: str) -> Iterator[tuple[dict[str, Any], Any]]:
        for d in self.docs:
            for item in d.get(key) or []:
                if isinstance(item, dict):
                    yield d, item

    @staticmethod
    def _who(d: dict[str, Any]) -> dict[str, Any]:
        return {"pid": d.get("pid", 0), "rank": d.get("rank")}

    # -- lines and calls ---------------------------------------------------------------------------
    def _index(self) -> None:
        if self._calls is not None:
            return
        self._calls, self._by_line, self._lines = [], {}, {}
        for d, c in self._each("calls"):
            try:
                rec = _build(CallRecord, c, **self._who(d))
            except TypeError:
                continue
            self._calls.append(rec)
            self._by_line.setdefault((rec.path, rec.line), []).append(rec)
            key = (rec.path, rec.line)
            self._lines[key] = self._lines.get(key, 0) + rec.count
        for d in self.docs:
            for entry in d.get("lines") or []:
                if isinstance(entry, list) and len(entry) == 3:
                    key = (entry[0], int(entry[1]))
                    self._lines[key] = max(self._lines.get(key, 0), 0) + int(entry[2])

    def hits(self, path: str, line: int, end_line: Optional[int] = None) -> int:
        """How many times any line of ``line..end_line`` executed (watched lines and lines with
        recorded calls; lines the probe did not watch count 0)."""
        self._index()
        assert self._lines is not None
        return sum(self._lines.get((path, n), 0) for n in range(line, (end_line or line) + 1))

    def ran(self, path: str, line: int, end_line: Optional[int] = None) -> bool:
        return self.hits(path, line, end_line) > 0

    def calls_at(self, path: str, line: int, kind: Optional[str] = None,
                 end_line: Optional[int] = None) -> list[CallRecord]:
        """Recorded calls at a line (or a span of lines), optionally of one kind."""
        self._index()
        assert self._by_line is not None
        out = []
        for n in range(line, (end_line or line) + 1):
            out.extend(r for r in self._by_line.get((path, n), []) if kind is None or r.kind == kind)
        return out

    def calls(self, kind: Optional[str] = None) -> list[CallRecord]:
        self._index()
        assert self._calls is not None
        return [c for c in self._calls if kind is None or c.kind == kind]

    # -- steps -------------------------------------------------------------------------------------
    @property
    def steps(self) -> list[StepFacts]:
        out = []
        for d, s in self._each("steps"):
            s = dict(s)
            s["grads"] = {k: _build(GradFacts, v) for k, v in (s.get("grads") or {}).items()
                          if isinstance(v, dict)}
            out.append(_build(StepFacts, s, **self._who(d)))
        return out

    def step(self, index: int, rank: Optional[int] = None) -> Optional[StepFacts]:
        """Step ``index`` (1-based) of the first process (or of ``rank``)."""
        for s in self.steps:
            if s.index == index and (rank is None or s.rank == rank):
                return s
        return None

    def param_reachability(self, step: Union[int, StepFacts] = 1) -> Optional[Reachability]:
        s = step if isinstance(step, StepFacts) else self.step(step)
        if s is None:
            return None
        return Reachability(s.index, s.params_used, s.params_reached, s.params_unreached,
                            s.params_frozen, s.params_without_grad)

    @property
    def modes_at_backward(self) -> list[tuple[StepFacts, dict[str, bool]]]:
        return [(s, s.training_at_backward) for s in self.steps if s.kind == "backward"]

    @property
    def modes_at_forward(self) -> list[tuple[StepFacts, dict[str, bool]]]:
        return [(s, s.training_at_forward) for s in self.steps]

    @property
    def trained_params(self) -> list[str]:
        """Names of the trained model's parameters used in any forward."""
        seen: dict[str, None] = {}
        for s in self.steps:
            seen.update(dict.fromkeys(s.params_used))
        return list(seen)

    # -- typed views -------------------------------------------------------------------------------
    def _typed(self, key: str, cls) -> list:
        out = []
        for d, item in self._each(key):
            try:
                out.append(_build(cls, item, **self._who(d)))
            except TypeError:
                continue
        return out

    @property
    def ddp(self) -> list[DDPFacts]:
        return self._typed("ddp", DDPFacts)

    @property
    def world_size(self) -> int:
        """Largest world size any process saw (initialised process group or WORLD_SIZE), else
        the number of processes that ran training steps (at least 1)."""
        sizes = [d.get("world_size") for d in self.docs if isinstance(d.get("world_size"), int)]
        sizes += [f.world_size for f in self.ddp if f.pg_initialized]
        trainers = sum(1 for d in self.docs if d.get("steps"))
        return max([*sizes, trainers, 1])

    @property
    def losses(self) -> list[LossCall]:
        return self._typed("losses", LossCall)

    @property
    def graphs(self) -> list[GraphFacts]:
        return self._typed("graphs", GraphFacts)

    @property
    def loads(self) -> list[LoadFacts]:
        return self._typed("loads", LoadFacts)

    def loads_at(self, path: str, line: int, end_line: Optional[int] = None) -> list[LoadFacts]:
        return [f for f in self.loads if f.path == path and line <= f.line <= (end_line or line)]

    @property
    def seeds(self) -> list[SeedCall]:
        return self._typed("seeds", SeedCall)

    @property
    def seeded_rngs(self) -> set[str]:
        return {s.rng for s in self.seeds}

    @property
    def rng_draws(self) -> dict[str, DrawFacts]:
        """RNG -> draws, merged over processes (counts added, first site of the first process)."""
        out: dict[str, DrawFacts] = {}
        for d in self.docs:
            for rng, v in (d.get("rng_draws") or {}).items():
                if not isinstance(v, dict):
                    continue
                f = _build(DrawFacts, v, rng=rng)
                if rng in out:
                    out[rng].count += f.count
                    out[rng].before_seed = out[rng].before_seed or f.before_seed
                else:
                    out[rng] = f
        return out

    @property
    def batchnorm(self) -> list[BatchNormEvent]:
        return self._typed("batchnorm", BatchNormEvent)

    @property
    def optimizers(self) -> list[OptimizerFacts]:
        return self._typed("optimizers", OptimizerFacts)

    @property
    def outputs(self) -> list[OutputFacts]:
        return self._typed("outputs", OutputFacts)

    @property
    def runs(self) -> list[RunFacts]:
        return [_build(RunFacts, d.get("run") or {}, **self._who(d)) for d in self.docs]

    @property
    def trainer_runs(self) -> list[RunFacts]:
        """Processes that ran at least one training step (DataLoader workers etc. excluded)."""
        return [r for r in self.runs if r.steps > 0]

    @property
    def total_steps(self) -> int:
        """Steps of the process that ran the most (ranks run in lockstep)."""
        return max((r.steps for r in self.runs), default=0)

    @property
    def devices(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.runs:
            seen.update(dict.fromkeys(r.devices))
        return list(seen)

    def __bool__(self) -> bool:
        return bool(self.docs)


def finite(x: Any) -> bool:
    v = _num(x)
    return v is not None and math.isfinite(v)
