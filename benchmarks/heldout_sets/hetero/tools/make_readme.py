"""Write README.md from cases.py, effects.py and tools/results/summary.json."""
import collections, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES
from effects import EFFECTS, NOTES

summary = json.load(open(os.path.join(HERE, "results", "summary.json")))

HEAD = """# hetero: heterogeneous-graph masked autoencoder (HGMAE-style) as a plugin package, with known bugs

An independent benchmark of realistic, silent mistakes in a heterogeneous-graph GraphMAE pretraining pipeline
written the way HGMAE / HeCo-style research code looks: a small multi-module package with a plugin layout
(models and losses found by name with `importlib`), a hand-written Hydra-like `instantiate` that builds objects
from `{"_target_": ...}` dictionaries, a hand-written Accelerate-like `Runner` through which the training loop
does its work (prepare / accumulate / autocast / backward / clipping, DistributedDataParallel over gloo when
`world_size > 1`), configuration as a nested dict plus a YAML override file plus dotted command-line
overrides, and node-type loops / dict comprehensions everywhere. Each case is `base/src` with ONE edit in one
file, delivered as a unified diff; whether the edit is a bug was decided by running it under instrumentation
(`tools/observe.py`) and comparing with base, never by a static analyser.

## The pipeline (`base/src`)

Run from `base/` (or from a case folder after applying its patch), CPU only, `OMP_NUM_THREADS=1`:

```
python src/train.py                              # ~6-8 s, prints one JSON line of metrics
python src/train.py trainer.epochs=20 optim.lr=0.01   # dotted overrides (values parsed with yaml.safe_load)
python src/train.py --config configs/pretrain.yaml    # the default YAML override file
python src/train.py runner.world_size=2          # DDP: 2 gloo processes (fork), ~8-10 s
python src/minimal.py                            # ~65-line plain loop, same numbers as the default run
```

- `train.py` - parses `--config` and `key.sub=value` overrides, loads the config, and either runs
  `hgmae.trainer.run_worker(0, 1, cfg)` or starts `world_size` processes with
  `torch.multiprocessing.start_processes(..., start_method="fork")` (process group initialised from a
  `file://` store in a fresh temp folder).
- `configs/pretrain.yaml` - the YAML override file (model hidden / dropout / `freeze` list, loss alpha and
  per-type `weights`, `aug.feat_noise`, `runner.mixed_precision` / `grad_accum_steps`, trainer epochs /
  `eval_every` / `freeze_bn`).
- `hgmae/config.py` - `DEFAULTS` (nested dict: data sizes, model with `_target_` dicts for the encoder,
  decoder, GraphConv (`_partial_`) and BatchNorm1d (`_partial_`), loss, aug, optim (`torch.optim.AdamW`),
  sched (`CosineAnnealingLR`), runner, trainer, probe), recursive `merge`, `set_dotted`, `load_config`.
- `hgmae/registry.py` - `locate`, recursive `instantiate(cfg, **kwargs)` with `_partial_`, `load_plugin`
  (`importlib.import_module(f"{package}.{name}")` + `getattr`).
- `hgmae/data.py` - the synthetic ACM-like heterograph built with `dgl.heterograph` from a seeded numpy
  generator: 360 papers (24 features), 200 authors (12), 20 subjects (6); relations writes / written_by,
  cites (both directions, self-citations dropped, then `dgl.add_self_loop(graph, etype="cites")` once),
  has_subject / subject_of; badly scaled per-type features from a class-dependent latent, standardised with
  training-node statistics; 60/20/20 split per node type from numpy's global RNG; 4 paper classes for the
  probe; fixed held-out masks (50 % of the val / test nodes of every type) from seeded torch generators.
- `hgmae/models/__init__.py` - `build_model` (plugin `hgmae.models.<name>`, class `cfg["cls"]`) and
  `freeze` (requires_grad off by name prefix). `hgmae/models/hgmae.py` - `HGMAE`: encoder and decoder built
  with `instantiate`, per-type learnable mask tokens (`nn.ParameterDict`), per-type `encoder_to_decoder`
  (`nn.ModuleDict`), `sample_masks` (50 % of the training nodes of each type), `encoding_mask_noise`,
  `forward` with re-mask, `embed`. `hgmae/models/layers.py` - `HeteroEncoder` (per-type input projections,
  2 x `dglnn.HeteroGraphConv` over one GraphConv per relation, per-type BatchNorm1d + PReLU, dropout 0.1) and
  `HeteroDecoder` (one HeteroGraphConv to each type's feature width plus a per-type linear skip).
- `hgmae/losses/__init__.py` - `build_loss` (plugin `hgmae.losses.<name>`, attribute `LOSS`);
  `hgmae/losses/sce.py` - `sce_loss` (alpha 2, reduction) and `SCELoss`, the per-type SCE on the masked
  nodes, summed over node types with per-type weights (paper 1.0, author 0.5, subject default 1.0).
- `hgmae/runner.py` - `Runner`: process group (gloo) when `world_size > 1`, `prepare(model, optimizer)`
  (device, DDP wrap), `unwrap_model`, `accumulate(model)` context (micro-step counter, `sync_gradients`,
  `no_sync()` on non-final micro-steps under DDP), `autocast()` (CPU bf16 when `mixed_precision == "bf16"`),
  `backward(loss)` (logs the detached loss, divides by `grad_accum_steps`), `clip_grad_norm_`,
  `wait_for_everyone`, `close`.
- `hgmae/trainer.py` - `Trainer`: builds model / freeze / optimizer (`instantiate(cfg["optim"],
  params=...)`) / `runner.prepare` / scheduler / loss plugin; `training_step` (masks, feature-noise
  augmentation, forward + loss under `runner.autocast()`, `runner.backward`); `train_epoch` (`model.train()`,
  optional `freeze_bn`, 2 accumulated micro-steps, clip 1.0, `optimizer.step()`, `optimizer.zero_grad()`,
  scheduler); `validate` every 15 epochs (held-out reconstruction cos on the val masks; leaves the model in
  eval mode; keeps a cloned best state); `fit` (80 epochs, restores the best state, epoch 75);
  `finish` (torch.save of model / optimizer state / epoch, fresh model from the plugin, `torch.load(...,
  weights_only=True)` + strict `load_state_dict`, held-out reconstruction on the test masks, linear probe on
  the reloaded encoder's paper embeddings); `run_worker` (seeding, data, runner, trainer; rank 0 reports).
- `hgmae/probe.py` - logistic-regression probe (embeddings standardised with training-paper statistics,
  minibatches of 64, re-seeded). `hgmae/utils.py` - `seed_everything` (random, numpy, torch, dgl, cudnn
  flags), `count_parameters`, `log_metrics`.
- `minimal.py` - the same data, model, masks, augmentation, accumulation, clipping, schedule, best-state
  restore, reload and probe in a plain ~65-line loop (no runner, no plugins, no config files).

Metrics (one JSON line): `final_loss` (mean epoch loss over the last 5 epochs), `heldout_cos` /
`heldout_mse` (reconstruction of the fixed test masks, mean over node types, model reloaded from the
checkpoint, eval mode), `heldout_cos_by_type`, `probe_acc` (test papers), `steps` (optimizer steps),
`trainable_params`, `best_epoch`, `val_cos_curve` (validation cos every 15 epochs).

### Base numbers (seed 0, deterministic: two runs identical)

```
BASELINE
```

`python src/minimal.py` prints the same `final_loss`, `heldout_cos`, `heldout_mse`, `heldout_cos_by_type`,
`probe_acc`, `best_epoch` and `val_cos_curve` bit for bit. The DDP base (`python src/train.py
runner.world_size=2`, rank 0 reports; each rank draws its masks / noise / dropout from `seed + rank`):

```
DDPBASE
```

## Tools

- `tools/cases.py` - the one-edit specification of every case (file, exact `find` / `replace`, truth
  entries as marker strings, description, expected first divergence, `run` where it is the DDP command).
- `tools/make_cases.py` - writes `cases/cNN/src/<file>.patch` (difflib unified diff, headers
  `--- base/src/<file>` / `+++ cNN/src/<file>`, `<file>` relative to `src/`, e.g.
  `src/hgmae/runner.py.patch`) and `cases/cNN/spec.json` (truth lines resolved in the case's file), and
  materialises every full case tree under `/tmp/heteroset/cases/cNN` (`$HETSET_SCRATCH`) for running.
- `tools/observe.py CASE_DIR OUT.json [ARGS]` - runs the case's `src/train.py` in-process with the case's
  arguments. `Trainer.train_epoch / validate / fit / finish` and the probe are wrapped only to know the phase;
  the measurements are generic hooks: global module forward hooks (module mode, grad mode, autocast state and
  output dtypes in training forwards, epochs with a module in eval mode, self loops per node seen by the
  GraphConv of the same-type relation, BatchNorm train-mode forwards outside training, probe minibatch
  statistics); `clip_grad_norm_` (gradient norm before clipping); a global optimizer step pre-hook
  (parameters with grad None, gradient norm, zero_grad calls per step, model parameters missing from the
  optimizer, cudnn / deterministic flags); the loss call (first loss and per-type terms, dtype, weights,
  reduction, targets compared with the clean dataset features); DDP construction (world size) and forwards
  through the wrapper; parameters unchanged by training; frozen parameters; BatchNorm running statistics;
  autograd nodes reachable from live tensors after training (gc scan); whether the kept best state aliases the
  live parameters; `load_state_dict` (strict / missing / unexpected / loaded / tensors changed);
  `torch.load` arguments; the training split hash. Under DDP each forked rank dumps its observations and the
  parent merges them (rank 0's, plus per-rank parameter checksums and `ranks_params_identical`).
- `tools/run_cases.py` - runs base twice per command (`base`: `python src/train.py`; `base_ddp`:
  `... runner.world_size=2`) and every case twice with its own command (`--jobs 2`, `nice -n 19`), compares
  each case with the base of the same command, writes `tools/results/*.json`, `tools/results/summary.json`
  and each `cases/cNN/truth.json`.
- `tools/effects.py` - the measured effect of every case (written after reading summary.json).
- `tools/show.py` - prints summary.json compactly.  `tools/check.py` - consistency checks (each patch applies
  strictly to base and reproduces the case file; truth lines on the edited lines; both bases deterministic;
  benign cases metric-identical; every bug with a measured difference).  `tools/make_readme.py` - writes
  this file.

Regenerate everything (from this folder, with `PY=/work/main/.venv/bin/python`): `$PY tools/make_cases.py &&
$PY tools/run_cases.py` (about 20 min on two shared cores), then `$PY tools/check.py && $PY
tools/make_readme.py`. To run one case by hand: copy `base/` to a scratch folder, apply the case's patch
inside it (`cd scratch && patch -p1 < .../cases/cNN/src/<file>.patch`; the headers are `base/src/<file>` and
`cNN/src/<file>`), or use the tree materialised by make_cases.py under `/tmp/heteroset/cases/cNN`, then run
the case's `run` command from truth.json.

Environment: `/work/main/.venv` (torch 2.2.1 CPU, dgl 2.1.0, numpy 1.26, PyYAML 6.0), `OMP_NUM_THREADS=1`,
`DGLBACKEND=pytorch`. DDP: a 2-process gloo run on CPU works in this sandbox (fork start method, `file://`
rendezvous, no network port).

## Cases

"""


def main():
    bugs = [c for c in CASES if c["kind"] == "bug"]
    benign = [c for c in CASES if c["kind"] == "benign"]
    cnt = collections.Counter(e["rule"] for c in bugs for e in c["entries"])
    bcnt = collections.Counter(e["rule"] for c in benign for e in c["entries"])
    fmt = lambda cn: ", ".join(f"{r} x{n}" if n > 1 else r for r, n in sorted(cn.items()))
    text = HEAD.replace("DDPBASE", json.dumps(summary["base_ddp"]["metrics"])).replace(
        "BASELINE", json.dumps(summary["base"]["metrics"]))
    text += f"{len(bugs)} bugs ({fmt(cnt)}) and {len(benign)} benign look-alikes\n({fmt(bcnt)}).\n\n"
    text += ("`truth.json` follows the notebook set's format (case / id, slug, kind, description, entries with rule /\n"
             "path / lines / is_bug / runtime_effect, expected_first_divergence, metrics, run) plus `metrics_rerun`\n"
             "(second run of base and case), `observed_differences` (every instrumented observation that differs\n"
             "from base) and `runtime_observations`. Lines are 1-based in the case's file (base + patch); `path` is\n"
             "relative to the case folder. `run` is the case's command from the case folder: `python src/train.py`,\n"
             "or `python src/train.py runner.world_size=2` for the DDP cases (compared with the DDP base). Each case\n"
             "folder holds `spec.json`, `truth.json` and `src/<file>.patch` only.\n\n")
    text += "| case | kind | rule | path:line | run | description | measured effect |\n|---|---|---|---|---|---|---|\n"
    for c in CASES:
        spec = json.load(open(os.path.join(ROOT, "cases", c["id"], "spec.json")))
        e = spec["entries"][0]
        where = f"`{e['path']}:{','.join(map(str, e['lines']))}`"
        run = "DDP x2" if "world_size" in c["run"] else "default"
        text += (f"| {c['id']} | {c['kind']} | {', '.join(x['rule'] for x in spec['entries'])} | {where} | {run} | "
                 f"{c['description']} | {EFFECTS[c['id']]} |\n")
    text += "\n## Notes and limits\n\n" + "\n".join(f"- {n}" for n in NOTES) + "\n"
    open(os.path.join(ROOT, "README.md"), "w").write(text)
    print("README.md written")


if __name__ == "__main__":
    main()
