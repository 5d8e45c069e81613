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
    ev.inputs, ev.pinned_inputs()       # feature statistics of training inputs; columns whose
                                        #   batch statistics never move (per-batch normalising)
    ev.frames                           # xyz/tangent/normal consistency of point features
    ev.samples                          # dataset samples drawn again: changed? same object?
    s.components                        # loss components of a step: value, d loss/d component
    s.sums, ev.sum_sites(), ev.sums_at(path, line)   # summing reductions in the loss (GM401):
                                        #   rows summed, weight per row, does the loss grow?
    ev.retained, ev.growing_holders()   # graphs held across steps outside the loss graph
    ev.processes                        # one Evidence per process (DDP / torchrun ranks)

Call kinds recorded by :meth:`calls_at` (``args`` keys in brackets):

* ``forward``        a root module's forward (not nested in another module's forward)
                     [module, training, grad_enabled, inference_mode, autocast, eval_submodules]
* ``backward``       [step, loss_dtype, loss_value]
* ``detach``, ``data``   a user ``.detach()`` / ``.data`` [requires_grad, grad_fn, shape]
* ``train``, ``eval`` Module.train(mode) / Module.eval() at user level [module, mode, is_root]
* ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``   [mode]
* ``requires_grad_``, ``requires_grad``  ``p.requires_grad_(flag)`` / ``p.requires_grad = flag``
                     on a parameter [flag, param]
* ``cast``           ``Module.half()`` / ``.bfloat16()`` / ``.to(dtype)`` to low precision [dtype]

Calls recorded at a cause site (eval/train, requires_grad, cast, the self-loop ops) also carry
``stack``: the user frames that led there, innermost first.
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
* ``collate``        a user-defined collate function making a batch, at its definition [fn, step]
* ``bn.reset``       BatchNorm reset_running_stats / reset_parameters [module]
* ``bn.forward``     a root forward in train mode with gradients off that moved BatchNorm running
                     statistics (outside any training step) [modules]; with ``stack``
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
    stack: list[list] = field(default_factory=list)  # cause sites: [[path, line], ...] innermost first

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
    stack: list[list] = field(default_factory=list)  # self-loop ops: user frames, innermost first
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
    param_dtypes: list[str] = field(default_factory=list)  # of the trained model's parameters
    loss_finite: Optional[bool] = None
    loss_grad_fn: str = ""
    params_used: list[str] = field(default_factory=list)  # in a forward that ran this step
    params_reached: list[str] = field(default_factory=list)  # from loss.grad_fn
    params_frozen: list[str] = field(default_factory=list)  # requires_grad False
    # per parameter at the detailed steps (the first six, then every tenth) and at any step with
    # a non-finite gradient; between them only ``grads_finite`` (every gradient finite)
    grads: dict[str, GradFacts] = field(default_factory=dict)
    grads_finite: bool = False
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
    # scalar tensors of the root forward's output and loss-function outputs, at the backward
    components: list["LossComponent"] = field(default_factory=list)
    # cause sites ({"path", "line", "stack": [[path, line], ...] innermost first}) of the state
    # this step showed: the eval() that left modules in eval mode, the no_grad/inference_mode
    # around the forward, the requires_grad(_)(False) per frozen unreached parameter, the
    # .detach()/.data ("kind") whose input reaches the unreached parameters ("params")
    mode_cause: Optional[dict[str, Any]] = None
    grad_off_cause: Optional[dict[str, Any]] = None
    frozen_cause: dict[str, dict[str, Any]] = field(default_factory=dict)
    cut_cause: Optional[dict[str, Any]] = None
    # root forwards run wholly with gradients off that this step's loss used (the grad_off_cause):
    # the step's own forward, swallowed by no_grad; ids as BatchNormEvent.forward
    training_forwards: list[int] = field(default_factory=list)
    cast_cause: Optional[dict[str, Any]] = None  # the model cast to float16/bfloat16
    params_in_containers: list[str] = field(default_factory=list)  # unreached, see recorder
    frozen_sums: dict[str, float] = field(default_factory=dict)  # value sum per frozen param
    sums: list["SumReduction"] = field(default_factory=list)  # summing reductions in the loss
    # parameters whose gradient was still set when this backward started although an optimizer
    # stepped since the previous backward and nothing reset it (gradients accumulating: GM104)
    stale_grads: int = 0
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
class LossComponent:
    """A candidate loss component of one step: a scalar tensor with a graph returned by the
    model's forward (``name`` its dict key, or ``output[i]``) or produced by a loss function
    (``fn@path:line``). ``coef`` is d loss / d component for the backpropagated loss (the
    component's effective weight: 0 when weighted by zero or left out of the total, negative when
    maximised; ``in_graph`` False when the loss does not depend on it at all); ``share`` is
    ``coef * value / loss``."""

    name: str
    value: Optional[float] = None
    coef: Optional[float] = None
    share: Optional[float] = None
    in_graph: bool = True

    @property
    def dropped(self) -> bool:
        """Computed, but contributing nothing to the gradient of the loss."""
        return self.coef == 0.0 and bool(self.value)


@dataclass
class SumReduction:
    """A full sum (``err.sum()``, ``torch.sum(err)``) or a ``reduction='sum'`` loss that the
    backpropagated loss of a step contains, at its cause site (the sum's call; an ``nn`` loss
    module's construction). ``rows``: first dimension of the summed input; ``coef``: the loss's
    weight per summed row (d loss / d sum, times a scalar applied to the rows just before the
    sum); ``node_rows``: node counts of the step (rows of the feature matrices entering the
    training forward, and the masked count)."""

    path: str
    line: int
    fn: str = ".sum()"
    stack: list[list[Any]] = field(default_factory=list)
    rows: int = 0
    numel: int = 0
    coef: Optional[float] = None
    value: Optional[float] = None
    node_rows: list[int] = field(default_factory=list)


@dataclass
class SumSite:
    """What the sums recorded at one site show (:meth:`Evidence.sum_sites`): ``grows`` True when
    the backpropagated loss grows with the number of summed rows (the weight per row does not
    shrink as they grow, or, at one row count, no division by more than a small constant),
    False when the loss divides the sum by its count."""

    path: str
    line: int
    fn: str
    stack: list[list[Any]]
    records: list[tuple[int, SumReduction]]  # (step, record)
    grows: bool
    why: str


MIN_SUM_ROWS = 8  # fewer summed rows: a sum of a few loss terms, not of nodes
MAX_CONSTANT_DIVISOR = 8.0  # `err.sum() / 2` still grows with the rows; `/ n_masked` does not
FEWER_THAN_ROWS = 4.0  # a divisor under a quarter of the rows summed is no count of them


def _judge_sums(records: list[SumReduction]) -> tuple[bool, str]:
    """Whether the loss grows with the rows a sum adds up (see :class:`SumSite`)."""
    by_rows: dict[int, float] = {}
    for r in records:
        by_rows.setdefault(r.rows, abs(r.coef or 0.0))
    lo, hi = min(by_rows), max(by_rows)
    if hi >= 1.25 * lo and by_rows[lo] and by_rows[hi]:
        # the weight per row shrinks like 1/rows when the sum is divided by its count
        shrink = math.log(by_rows[lo] / by_rows[hi]) / math.log(hi / lo)
        what = (f"summed rows {lo} -> {hi} across steps, weight per row "
                f"{by_rows[lo]:.3g} -> {by_rows[hi]:.3g}")
        return shrink < 0.5, what
    coef = by_rows[hi]
    # one row count: a count divides by at least the rows (by the elements, for a mean over
    # them); a small constant, or a number far below the rows (a configured batch size of
    # graphs dividing a sum over their nodes), leaves the loss growing with them
    return coef * MAX_CONSTANT_DIVISOR >= 1.0 or coef * hi >= FEWER_THAN_ROWS, \
        f"{hi} summed rows, weight per row {coef:.3g}"


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
    input_dtype: str = ""  # the prediction's dtype (float16/bfloat16: cast to low precision)
    # computed with an autograd graph (a training loss), not a metric of fixed tensors (an
    # evaluation's mean-predictor baseline, a loss under no_grad)
    graded: bool = True
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
    ``strict``, ``missing``/``unexpected`` keys, ``partial`` (the missing keys of modules whose
    other keys were loaded), ``module`` (class), ``trained`` (the module is,
    or is inside, the model that was later trained), ``changed`` (parameters whose values the
    load replaced), ``before_training`` (no backward had trained that model yet: a warm start,
    not a restore)."""

    kind: str
    path: str
    line: int
    weights_only: Optional[bool] = None
    strict: Optional[bool] = None
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)  # missing keys of modules partly loaded
    module: str = ""
    trained: Optional[bool] = None
    changed: int = 0
    step: int = 0
    before_training: bool = False  # the load came before the first backward of that model
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
    during a training step, so the running stats did not update), stalled (a training-mode
    forward that cannot update them: ``momentum`` 0 or ``track_running_stats`` off),
    cumulative (a training-mode forward with ``momentum`` None: the running statistics are the
    average over every batch since the start),
    outside_step (a train-mode forward with gradients off moved them: ``path``/``line``/``stack``
    the call that made it, ``forward`` its id when a no_grad site was seen: a step's
    ``training_forwards`` names those that were the step's own forward)."""

    kind: str
    module: str
    path: str = ""
    line: int = 0
    step: int = 0
    buffers: list[str] = field(default_factory=list)
    detail: str = ""  # stalled: momentum=0 | track_running_stats=False; cumulative: momentum=None
    stack: list[list[Any]] = field(default_factory=list)
    forward: int = 0
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
    frozen_in_groups: list[str] = field(default_factory=list)  # requires_grad False, optimised
    # construction calls ({"path", "line", "stack", "seq"}: seq orders them in the run)
    optimizer_built_at: Optional[dict[str, Any]] = None
    model_built_at: Optional[dict[str, Any]] = None
    # the latest construction of the model's class before the optimizer's: the instance whose
    # parameters it holds when the model was rebuilt after it
    replaced_built_at: Optional[dict[str, Any]] = None
    # dtypes of the parameters it steps and of its state tensors (Adam's moments), after its
    # first step: float16/bfloat16 here means updates rounded with no float32 master copy
    param_dtypes: list[str] = field(default_factory=list)
    state_dtypes: list[str] = field(default_factory=list)
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
class InputStats:
    """Statistics of one float feature matrix (rows = nodes) entering a training forward of the
    model (first batches only): per column ``mean``, ``std``, ``min``, ``max`` and whether every
    value is integral. ``input``: ``argN`` or ``argN.ndata.KEY`` of a DGL graph argument.
    ``frame``: for point features (unit-length column triples beside point triples), see
    :attr:`Evidence.frames`."""

    path: str = ""
    line: int = 0
    module: str = ""
    input: str = ""
    step: int = 0
    rows: int = 0
    cols: int = 0
    mean: list[float] = field(default_factory=list)
    std: list[float] = field(default_factory=list)
    min: list[float] = field(default_factory=list)
    max: list[float] = field(default_factory=list)
    integral: list[bool] = field(default_factory=list)
    frame: Optional[dict[str, float]] = None
    pid: int = 0
    rank: Optional[int] = None


@dataclass
class PinnedInput:
    """Columns of one model input whose batch statistic is the same in every batch while the
    values vary within each batch: the signature of normalising with each batch's own
    statistics (``x - x.mean(0)`` pins the mean, ``/ x.std(0)`` the std, min-max scaling the
    min and max). ``pinned`` maps mean/std/min/max to column indices."""

    input: str
    module: str
    batches: int
    cols: int
    pinned: dict[str, list[int]]
    values: dict[str, float]  # the pinned value of the first pinned column, per statistic

    @property
    def columns(self) -> list[int]:
        return sorted({c for cols in self.pinned.values() for c in cols})

    def summary(self) -> str:
        stats = ", ".join(f"{k} {self.values[k]:.3g}" for k in self.pinned)
        return (f"{len(self.columns)} of {self.cols} columns of {self.module} input "
                f"`{self.input}` have the same batch statistic ({stats}) in all {self.batches} "
                f"batches while varying within each batch")


@dataclass
class FrameFacts:
    """Point features of the training inputs (layout read from the values: unit-length column
    triples are directions, see the recorder's ``_frame_stats``), over the recorded batches:
    ``direction_norm`` their mean length, ``direction_norm_dev`` the worst deviation from 1 and
    ``direction_typical_dev`` the worst of the median deviations (noise on every row, not a few
    masked rows); ``tangent_alignment`` mean |cos| between the step to the next point and that
    point's direction (about 1 when frames match points; far lower when xyz was rotated alone)."""

    input: str
    batches: int
    direction_norm: float
    direction_norm_dev: float
    direction_typical_dev: float
    tangent_alignment: Optional[float] = None

    @property
    def unit_directions(self) -> bool:
        return self.direction_norm_dev < UNIT_DEV

    @property
    def noisy_directions(self) -> bool:
        """Off unit length in most rows (noise reached the directions), not in a few."""
        return self.direction_typical_dev > UNIT_DEV


@dataclass
class SampleFacts:
    """Samples of a map-style dataset (``dataset`` class) drawn by a DataLoader in the training
    process: ``refetched`` drawn again (a later epoch), ``changed`` came back with other feature
    values (augmentation), ``inplace`` came back as the very same object with other values (a
    cached sample modified in place: the change compounds), ``max_change`` the largest relative
    change of the content fingerprint."""

    dataset: str
    fetched: int = 0
    refetched: int = 0
    changed: int = 0
    inplace: int = 0
    max_change: float = 0.0


@dataclass
class RetainedGraph:
    """Tensors with an autograd graph held by ``holder`` (``function.variable`` in the frames
    around the backward, or ``Class.attribute`` of their ``self``) at the backward of ``step``,
    outside that step's loss graph: ``nodes`` autograd nodes kept alive (counted up to four times
    ``loss_nodes``, the size of the step's own loss graph). ``path``/``line``: the backward;
    ``held_at``: ``[path, line]`` of the statement that grows the holder (``total += loss``,
    ``self.history.append(loss)``), found in the code of the function holding it (or of the
    holder's class), when there is one."""

    step: int
    holder: str
    nodes: int = 0
    loss_nodes: int = 0
    tensors: int = 0
    path: str = ""
    line: int = 0
    held_at: Optional[list[Any]] = None
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


PINNED = 1e-3  # spread of a batch statistic across batches, relative to the within-batch std
UNIT_DEV = 1e-3  # |length - 1| above this: not unit vectors
LOW_DTYPES = frozenset({"float16", "bfloat16"})


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
        self._copied: Optional[set[str]] = None  # frozen parameters updated by copy: blocked()

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

    def outside(self, path: str) -> bool:
        """No process of the run imported or ran ``path`` at all (known for the files of the
        static findings only, which the recorder watches)."""
        watching = [d for d in self.docs if d.get("watching")]
        return bool(watching) and not any(path in (d.get("files_run") or []) for d in watching)

    def untaken(self, path: str, line: int) -> Optional[str]:
        """Why the run would not have reached the finding at ``path:line`` whatever its length
        (its callers' files never imported, or a branch decided false for the run:
        ``auditor/probe/hooks/branches.py``); None when no process decided so."""
        for d in self.docs:
            for entry in d.get("untaken") or []:
                if isinstance(entry, list) and len(entry) == 4 and entry[0] == path \
                        and entry[1] == line:
                    return str(entry[3])
        return None

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
            s["components"] = [_build(LossComponent, c) for c in s.get("components") or []
                               if isinstance(c, dict) and "name" in c]
            s["sums"] = [_build(SumReduction, c) for c in s.get("sums") or []
                         if isinstance(c, dict) and "path" in c]
            out.append(_build(StepFacts, s, **self._who(d)))
        return out

    def step(self, index: int, rank: Optional[int] = None) -> Optional[StepFacts]:
        """Step ``index`` (1-based) of the first process (or of ``rank``)."""
        for s in self.steps:
            if s.index == index and (rank is None or s.rank == rank):
                return s
        return None

    def param_reachability(self, step: Union[int, StepFacts] = 1) -> Optional[Reachability]:
        """What ``step``'s loss reached; ``unreached`` leaves out the parameters frozen on
        purpose (:meth:`blocked`)."""
        s = step if isinstance(step, StepFacts) else self.step(step)
        if s is None:
            return None
        return Reachability(s.index, s.params_used, s.params_reached, self.blocked(s),
                            s.params_frozen, s.params_without_grad)

    def blocked(self, s: StepFacts) -> list[str]:
        """The parameters used in ``s``'s forward that its loss does not reach and that were
        meant to get a gradient: not frozen, or frozen while an optimizer holds them. A frozen
        parameter no optimizer holds (a frozen encoder, a target), or whose value moves between
        steps without gradient (an EMA teacher, updated by copy), is frozen on purpose."""
        if self._copied is None:
            sums: dict[str, set] = {}
            for t in self.steps:
                for n, v in t.frozen_sums.items():
                    sums.setdefault(n, set()).add(v)
            self._copied = {n for n, vs in sums.items() if len(vs) > 1}
        optimized = {n for o in self.optimizers for n in o.frozen_in_groups} - self._copied
        frozen = set(s.params_frozen)
        earlier = self.trained_before(s)
        return [p for p in s.params_unreached if p not in self._copied and (
            p not in frozen or (p in optimized or not self.optimizers) and p not in earlier)]

    def trained_before(self, s: StepFacts) -> set[str]:
        """The parameters an earlier step's loss reached: a part an earlier stage trained and
        a later stage freezes is frozen on purpose."""
        out: set[str] = set()
        for t in self.steps:
            if t is s or t.index >= s.index:
                break
            out.update(t.params_reached)
        return out

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

    def seeding_site(self) -> Optional[SeedCall]:
        """The run's first seeding call in user code: where it seeds its RNGs, and where a seed
        it leaves out belongs."""
        return next((s for s in self.seeds if s.path), None)

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
    def inputs(self) -> list[InputStats]:
        return self._typed("inputs", InputStats)

    def _input_groups(self) -> dict[tuple, list[InputStats]]:
        groups: dict[tuple, list[InputStats]] = {}
        for x in self.inputs:
            groups.setdefault((x.pid, x.module, x.input, x.cols), []).append(x)
        return groups

    def pinned_inputs(self, min_batches: int = 3) -> list[PinnedInput]:
        """Model inputs with columns whose batch mean, std, min or max is the same in every
        recorded batch (spread below ``PINNED`` times the column's within-batch std) although
        the column varies within batches; integral columns (one-hot, indices) are left out of
        min/max. Empty when fewer than ``min_batches`` batches were recorded."""
        out = []
        for (_, module, name, cols), batches in self._input_groups().items():
            if len(batches) < min_batches:
                continue
            pinned: dict[str, list[int]] = {}
            values: dict[str, float] = {}
            for c in range(cols):
                try:
                    within = [b.std[c] for b in batches]
                    integral = all(b.integral[c] for b in batches)
                except (IndexError, TypeError):
                    continue
                if not all(finite(w) and w > 1e-6 for w in within):
                    continue
                scale = sum(within) / len(within)
                for stat in ("mean", "std", "min", "max"):
                    if integral and stat in ("min", "max"):
                        continue
                    vals = [getattr(b, stat)[c] for b in batches]
                    if all(finite(v) for v in vals) and max(vals) - min(vals) < PINNED * scale:
                        pinned.setdefault(stat, []).append(c)
                        values.setdefault(stat, vals[0])
            if pinned:
                out.append(PinnedInput(name, module, len(batches), cols, pinned, values))
        return out

    @property
    def frames(self) -> list[FrameFacts]:
        """Per model input with point features: the frame statistics averaged over batches."""
        out = []
        for (_, _, name, _), batches in self._input_groups().items():
            frames = [b.frame for b in batches if isinstance(b.frame, dict)]
            if not frames:
                continue

            def avg(key: str) -> Optional[float]:
                vals = [f[key] for f in frames if finite(f.get(key))]
                return sum(vals) / len(vals) if vals else None

            def worst(key: str) -> float:
                return max((f[key] for f in frames if finite(f.get(key))), default=0.0)

            out.append(FrameFacts(name, len(frames), avg("direction_norm") or 0.0,
                                  worst("direction_norm_dev"),
                                  worst("direction_norm_typical_dev"), avg("tangent_alignment")))
        return out

    @property
    def samples(self) -> list[SampleFacts]:
        out = []
        for d in self.docs:
            for name, v in (d.get("samples") or {}).items():
                if isinstance(v, dict):
                    out.append(_build(SampleFacts, v, dataset=name))
        return out

    @property
    def retained(self) -> list[RetainedGraph]:
        return self._typed("retained", RetainedGraph)

    def sum_sites(self) -> list[SumSite]:
        """The summing reductions of the backpropagated losses, per cause site, judged: does the
        loss grow with the number of rows they add up? Sums over fewer than MIN_SUM_ROWS rows,
        over more rows than any node count of their step, or that the loss does not depend on,
        are left out."""
        by: dict[tuple[str, int], list[tuple[int, SumReduction]]] = {}
        for s in self.steps:
            for r in s.sums:
                if r.rows >= MIN_SUM_ROWS and r.coef and finite(r.coef) and (
                        not r.node_rows or r.rows <= max(r.node_rows)):
                    by.setdefault((r.path, r.line), []).append((s.index, r))
        out = []
        for (path, line), records in by.items():
            grows, why = _judge_sums([r for _, r in records])
            first = records[0][1]
            out.append(SumSite(path, line, first.fn, first.stack, records, grows, why))
        return out

    def sums_at(self, path: str, line: int, end_line: Optional[int] = None) -> list[SumSite]:
        return [s for s in self.sum_sites() if s.path == path
                and line <= s.line <= (end_line or line)]

    def low_precision_updates(self, steps: list[StepFacts]) -> list[str]:
        """Parameters trained in float16/bfloat16 with no float32 master copy (a float32 loss
        does not help: every update is rounded to the parameters' precision): an optimizer
        stepping low-precision parameters, or, with no optimizer seen, low-precision parameters
        at a backward of ``steps``. Empty when the run shows none."""
        held = [o for o in self.optimizers if set(o.param_dtypes) & LOW_DTYPES]
        if held:
            o = held[0]
            state = f", its state {'/'.join(o.state_dtypes)}" if o.state_dtypes else ""
            return [f"the {o.cls} at {o.path}:{o.line} steps {'/'.join(o.param_dtypes)} "
                    f"parameters{state}: each update is rounded to that precision, with no "
                    f"float32 master copy"]
        trained = [s for s in steps if set(s.param_dtypes) & LOW_DTYPES]
        if trained and not self.optimizers:
            s = trained[0]
            return [f"the parameters of {s.model or 'the model'} were "
                    f"{'/'.join(s.param_dtypes)} at the backward of step {s.index}"]
        return []

    def zero_gradient_params(self) -> tuple[list[str], list[StepFacts]]:
        """Parameters that the loss reaches but whose gradient is exactly zero at every backward
        with recorded gradients (at least two), and those steps. A weight scales a module's
        output as a whole, so a parameter whose siblings in its module get gradient is left out:
        that zero is the module's own arithmetic (a GAT's destination attention, constant
        within each softmax group, has an exactly zero gradient). A module holding that
        parameter alone (a Linear without bias) is judged by its nearest enclosing module that
        holds others: a skip projection fed only zeros on the rows the loss reads (re-masked
        nodes) gets no gradient while the layer around it does."""
        graded = [s for s in self.steps if s.kind == "backward" and s.grads]
        if len(graded) < 2:
            return [], graded
        zero: Optional[set[str]] = None
        for s in graded:
            reached = set(s.params_reached)
            now = {n for n, g in s.grads.items() if g.state == "zero" and n in reached}
            zero = now if zero is None else zero & now
        names = list(graded[-1].grads)
        return sorted(n for n in zero or () if all(p in zero for p in _siblings(n, names))), graded

    def growing_holders(self) -> list[tuple[str, list[RetainedGraph]]]:
        """Holders whose retained graph grew from one recorded step to the next and ended
        larger than one step's loss graph: graphs accumulated across steps."""
        by: dict[tuple, list[RetainedGraph]] = {}
        for r in self.retained:
            by.setdefault((r.pid, r.holder), []).append(r)
        out = []
        for (_, holder), rs in by.items():
            rs.sort(key=lambda r: r.step)
            grew = any(b.nodes > a.nodes for a, b in zip(rs, rs[1:]))
            if len(rs) >= 2 and grew and rs[-1].nodes > rs[-1].loss_nodes:
                out.append((holder, rs))
        return out

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

    @property
    def reconstruction(self) -> Optional[dict[str, Any]]:
        """The recorder's reconstruction sample (target rows of a few masked nodes against the
        model's output for them; ``module`` None when no submodule output matched the input
        features), from the first process that has one."""
        for d in self.docs:
            if isinstance(d.get("reconstruction"), dict):
                return d["reconstruction"]
        return None

    def __bool__(self) -> bool:
        return bool(self.docs)


def finite(x: Any) -> bool:
    v = _num(x)
    return v is not None and math.isfinite(v)


def _siblings(name: str, names: list[str]) -> list[str]:
    """The other parameters of the nearest module enclosing ``name`` that holds any (its own
    module's, else its parent's, ...), else the model's top-level ones."""
    parts = name.split(".")[:-1]
    while parts:
        prefix = ".".join(parts) + "."
        others = [p for p in names if p != name and p.startswith(prefix)]
        if others:
            return others
        parts.pop()
    return [p for p in names if p != name and "." not in p]
