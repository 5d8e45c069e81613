"""Write README.md from cases.py, effects.py and tools/results/summary.json."""
import collections, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cases import CASES
from effects import EFFECTS, NOTES

summary = json.load(open(os.path.join(HERE, "results", "summary.json")))
base = summary["base"]["metrics"]

HEAD = """# notebook: node-level GraphMAE written as a Jupyter notebook exported to a script, with known bugs

An independent benchmark of realistic, silent mistakes in a node-level GraphMAE pretraining pipeline written
the way a researcher's notebook looks after `jupytext --to py:percent`: one flat script whose work happens at
module level in `# %%` cells (no `main()`; the training loops are module-level `for` loops), a small helper
module, and a plain reference loop. Each case is `base/src` with ONE edit in one file, delivered as a unified
diff; whether the edit is a bug was decided by running it under instrumentation (`tools/observe.py`) and
comparing with base, never by a static analyser.

## The pipeline (`base/src`)

Run from `base/` (or from a case folder after applying its patch), CPU only, ~5 s with `OMP_NUM_THREADS=1`:

```
python src/notebook.py                       # full notebook, prints one JSON line of metrics at the end
python src/notebook.py epochs=20 lr=0.005    # papermill-style key=value overrides (ast.literal_eval)
python src/minimal.py                        # ~60-line plain loop, same numbers
```

- `notebook.py` (jupytext percent format, ~365 lines), cell by cell:
  imports; a papermill `# %% tags=["parameters"]` cell of plain globals (seed, sizes, `norm`,
  `use_self_loop`, `lr`, `epochs`, `eval_every`, `mask_rate`, `feat_noise`, `alpha`, loss weights `w_sce` /
  `w_mse`, `reduction`, `precision`, `ema_decay`, `finetune_epochs`, `finetune_modules`, `probe_epochs`,
  `resume`, `ckpt_path`); an override cell that applies `SWEEP_DEFAULTS` (values of the last sweep,
  `epochs=140`, `eval_every=30`) and then `sys.argv[1:]` as `key=value` into `globals()` and builds a frozen
  dataclass `cfg` (later `dataclasses.replace`d for stage 2); a seeding cell (random, numpy, torch, dgl, cudnn
  flags); the data cell (2000-point noisy swiss roll, kNN graph k=8 with `dgl.graph` -> `dgl.to_bidirected`
  -> `dgl.add_self_loop` once, 60/20/20 node split from numpy's global RNG, 16 badly scaled continuous
  attributes standardised with training-node statistics, 5 position classes for the probe, fixed held-out
  masks for val/test from seeded generators); a data-inspection cell; the model cell (`build_model`:
  `nn.ModuleDict` of a 2-layer GraphConv encoder with norm chosen by name from `nbutils.NORMS` + PReLU +
  dropout 0.1, `enc2dec` linear, a 1-layer GraphConv decoder, and a registered `mask_token` parameter);
  a functions cell (`mask_input`, `forward_mae` with re-mask, the SCE loss as `functools.partial`, the MSE as
  a lambda, `amp_ctx` = `nullcontext()` or CPU bf16 autocast, `mae_loss`, `@torch.no_grad() evaluate`
  which leaves the model in eval mode); an optimizer cell (AdamW decay/no-decay groups, cosine schedule,
  hand-written EMA copy); a resume cell (`model.to(device)`, parameter count); the pretraining cell
  (`log_step` mutating `global_step` and a `running` stats dict, `train_step`: zero_grad, mask 50 % of the
  training nodes, input jitter, loss, backward, step; the module-level loop calls `model.train()` each epoch,
  updates the EMA, evaluates every 30 epochs and keeps a cloned copy of the best state); a restore cell
  (loads the best state, epoch 120, and evaluates); stage 2, "fine-tune the decoder head" (requires_grad set
  from `finetune_modules`, a new Adam over the trainable parameters, `model.train()`, 30 iterations with a
  hand-written forward); a summary cell; a checkpoint cell (`torch.save` of model / EMA state dicts + cfg to a
  temp file); a reload cell (`torch.load(..., weights_only=True)`, fresh models, strict `load_state_dict`,
  eval mode, held-out reconstruction of both); a linear-probe cell on the frozen EMA encoder's embeddings
  (standardised with training-node statistics, minibatches of 64); the metrics cell.
- `nbutils.py` - point cloud, kNN edges, split, standardisation, `NORMS`, `GCNStack`, `remask`,
  `sample_mask`, `jitter`, `sce_loss`, `make_ema` / `ema_update` (parameters lerped, buffers copied).
- `minimal.py` - the same data, model, masks, optimiser, best-state restore and fine-tuning in a plain
  ~60-line loop.

Metrics (one JSON line): `final_loss` (mean of the last 10 losses, stage 2), `heldout_cos` / `heldout_mse`
(reconstruction of 50 % of the test nodes, fixed mask, model reloaded from the checkpoint, eval mode),
`ema_heldout_cos` (same with the reloaded EMA model), `probe_acc` (linear probe on the EMA encoder's test-node
embeddings), `iterations` (170 = 140 + 30), `trainable_params` (stage 1), `ft_trainable_params` (stage 2),
`best_epoch`, `val_cos_curve` (validation reconstruction cos every 30 epochs).

### Base numbers (seed 0, deterministic: two runs identical)

```
BASELINE
```

`python src/minimal.py` prints the same `final_loss`, `heldout_cos`, `heldout_mse`, `best_epoch` and
`val_cos_curve` bit for bit.

## Tools

- `tools/cases.py` - the one-edit specification of every case (file, exact `find` / `replace`, truth
  entries as marker strings, description, expected first divergence).
- `tools/make_cases.py` - writes `cases/cNN/src/<file>.patch` (difflib unified diff, headers
  `--- base/src/<file>` / `+++ cNN/src/<file>`) and `cases/cNN/spec.json` (truth lines resolved in the case's
  file), and materialises every full case tree under `/tmp/nbset/cases/cNN` (`$NBSET_SCRATCH`) for running.
- `tools/observe.py CASE_DIR OUT.json` - runs `src/notebook.py` in-process cell by cell (split at `# %%`,
  compiled with the real line numbers, one shared namespace, like a kernel) with instrumentation: the role of
  each cell (stage-1 loop, restore, stage-2, reload, probe) from its text; `evaluate` wrapped to tell
  evaluation forwards from training forwards; global forward hooks (module mode, grad mode and output dtype in
  training forwards, iterations with a module in eval mode, self loops per node seen by GraphConv, BatchNorm
  train-mode forwards outside training, probe minibatch statistics); an optimizer step pre-hook (parameters
  with grad None, grad norm, zero_grad calls per step, `model` parameters missing from the optimizer, cudnn /
  deterministic flags); loss dtype and first loss per stage; the SCE target compared with the clean
  standardised features; parameters unchanged per stage; tensors with a live autograd graph left in the
  notebook's globals and the number of autograd nodes they reach; BatchNorm running statistics of the model
  and of the EMA; whether the kept best state aliases the live parameters; `torch.load` arguments;
  `load_state_dict` strict / missing / unexpected / loaded / tensors changed; the train split hash.
- `tools/run_cases.py` - runs base twice and every case twice (`--jobs 2`, `nice -n 19`), compares with base,
  writes `tools/results/*.json`, `tools/results/summary.json` and each `cases/cNN/truth.json`.
- `tools/effects.py` - the measured effect of every case (written after reading summary.json).
- `tools/show.py` - prints summary.json compactly.  `tools/check.py` - consistency checks (each patch applies
  strictly to base and reproduces the case file; truth lines on the edited lines; base deterministic; benign
  cases metric-identical; every bug with a measured difference).  `tools/make_readme.py` - writes this file.

Regenerate everything (from this folder, with `PY=/work/main/.venv/bin/python`): `$PY tools/make_cases.py &&
$PY tools/run_cases.py` (about 6 min on two cores), then `$PY tools/check.py && $PY tools/make_readme.py`.
To run one case by hand: copy `base/` to a scratch folder, apply the case's patch inside it
(`cd scratch && patch -p1 < .../cases/cNN/src/<file>.patch`; the headers are `base/src/<file>` and
`cNN/src/<file>`), or use the tree materialised by make_cases.py under `/tmp/nbset/cases/cNN`, then
`python src/notebook.py`.

Environment: `/work/main/.venv` (torch 2.2.1 CPU, dgl 2.1.0 as pinned in `requirements/constraints.txt`,
numpy 1.26), `OMP_NUM_THREADS=1`, `DGLBACKEND=pytorch`.

## Cases

"""


def main():
    bugs = [c for c in CASES if c["kind"] == "bug"]
    benign = [c for c in CASES if c["kind"] == "benign"]
    cnt = collections.Counter(e["rule"] for c in bugs for e in c["entries"])
    bcnt = sorted({e["rule"] for c in benign for e in c["entries"]})
    rules = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in sorted(cnt.items()))
    text = HEAD.replace("BASELINE", json.dumps(base))
    text += (f"{len(bugs)} bugs ({rules}) and {len(benign)} benign look-alikes\n({', '.join(bcnt)}).\n\n")
    text += ("`truth.json` follows the events set's format (case / id, slug, kind, description, entries with rule /\n"
             "path / lines / is_bug / runtime_effect, expected_first_divergence, metrics, run) plus `metrics_rerun`\n"
             "(second run of base and case), `observed_differences` (every instrumented observation that differs\n"
             "from base) and `runtime_observations`. Lines are 1-based in the case's file (base + patch); `path` is\n"
             "relative to the case folder. Each case folder holds `spec.json`, `truth.json` and\n"
             "`src/<file>.patch` only.\n\n")
    text += "| case | kind | rule | path:line | description | measured effect |\n|---|---|---|---|---|---|\n"
    for c in CASES:
        spec = json.load(open(os.path.join(ROOT, "cases", c["id"], "spec.json")))
        e = spec["entries"][0]
        where = f"`{e['path']}:{','.join(map(str, e['lines']))}`"
        text += (f"| {c['id']} | {c['kind']} | {', '.join(x['rule'] for x in spec['entries'])} | {where} | "
                 f"{c['description']} | {EFFECTS[c['id']]} |\n")
    text += "\n## Notes and limits\n\n" + "\n".join(f"- {n}" for n in NOTES) + "\n"
    open(os.path.join(ROOT, "README.md"), "w").write(text)
    print("README.md written")


if __name__ == "__main__":
    main()
