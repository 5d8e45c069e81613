"""Case definitions: one small change to base/ per case.

edits:   (path, old, new) exact substitutions applied in order to a copy of base/
entries: rule, path, marks (substrings locating the defect lines in the CHANGED file;
         for a removed line, the line now standing where it should be), is_bug
"""

LIT = "src/lit_module.py"
CB = "src/callbacks.py"
TRAIN = "src/train.py"
MAE = "src/graphmae.py"
DATA = "src/data.py"
SEED = "src/seeding.py"
CFG = "configs/graphmae.yaml"

CASES = [
    dict(
        case="c01", slug="detach_latent_before_decoder", kind="bug", divergence="grad",
        description=("training_step hands z.detach() to the decoder, so the reconstruction loss never "
                     "reaches the GAT encoder or the [MASK] token; only encoder_to_decoder and the "
                     "GIN decoder are trained on top of a random encoder."),
        edits=[(LIT, "        x_hat = self.model.decode(g, z, mask)\n",
                "        x_hat = self.model.decode(g, z.detach(), mask)\n")],
        entries=[dict(rule="GM101", path=LIT, marks=["z.detach()"])],
    ),
    dict(
        case="c02", slug="training_step_uses_no_grad_embed", kind="bug", divergence="grad",
        description=("training_step encodes the masked graph with the module's embed() helper, which is "
                     "decorated with @torch.no_grad() for inference/probing, so the encoder forward is "
                     "not recorded by autograd."),
        edits=[(LIT, "        z = self.model.encode(g, x_in)\n", "        z = self.embed(g, x_in)\n")],
        entries=[dict(rule="GM102", path=LIT, marks=["z = self.embed(g, x_in)", "@torch.no_grad()"])],
    ),
    dict(
        case="c03", slug="stage_name_mismatch_freezes_encoder", kind="bug", divergence="grad",
        description=("The freeze condition compares the config stage with 'pretraining' while the config "
                     "says 'pretrain', so the pretraining run freezes the whole encoder "
                     "(requires_grad_(False)) and only mask token, encoder_to_decoder and decoder learn."),
        edits=[(LIT, 'if cfg["stage"] != "pretrain":', 'if cfg["stage"] != "pretraining":')],
        entries=[dict(rule="GM103", path=LIT,
                      marks=['if cfg["stage"] != "pretraining":', "requires_grad_(False)"])],
    ),
    dict(
        case="c04", slug="zero_grad_hook_every_4th_batch", kind="bug", divergence="grad",
        description=("LitGraphMAE overrides optimizer_zero_grad to clear gradients only every 4th batch "
                     "('cheap 4x larger batch'), but Lightning still steps the optimizer every batch, so "
                     "3 of 4 steps apply gradients summed over up to 4 batches."),
        edits=[(LIT, "    def validation_step(self, batch, batch_idx):\n",
                "    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):\n"
                "        # keep the gradients of 4 consecutive batches: a cheap 4x larger batch\n"
                "        if batch_idx % 4 == 0:\n"
                "            optimizer.zero_grad(set_to_none=True)\n"
                "\n"
                "    def validation_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM104", path=LIT,
                      marks=["if batch_idx % 4 == 0:", "optimizer.zero_grad(set_to_none=True)"])],
    ),
    dict(
        case="c05", slug="rebuild_model_on_train_start", kind="bug", divergence="update",
        description=("on_train_start re-seeds and rebuilds self.model 'so the initial weights do not depend "
                     "on data generation'; Lightning has already built AdamW over the old model's "
                     "parameters in configure_optimizers, so the model that is trained, validated and "
                     "checkpointed is never updated."),
        edits=[(LIT, "    def training_step(self, batch, batch_idx):\n",
                "    def on_train_start(self):\n"
                "        # initial weights from the run seed, independent of how much RNG data generation used\n"
                "        torch.manual_seed(self.cfg[\"seed\"])\n"
                "        self.model = build_model(self.cfg)\n"
                "\n"
                "    def training_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM105", path=LIT, marks=["self.model = build_model(self.cfg)"])],
    ),
    dict(
        case="c06", slug="loss_history_keeps_graphs", kind="bug", divergence="loss",
        description=("training_step appends the loss tensor itself (not loss.item()) to self.loss_history, "
                     "which lives for the whole run, so every step's autograd graph is kept alive."),
        edits=[(LIT, "        self.loss_history.append(loss.item())\n", "        self.loss_history.append(loss)\n")],
        entries=[dict(rule="GM106", path=LIT, marks=["self.loss_history.append(loss)"])],
    ),
    dict(
        case="c07", slug="probe_callback_leaves_eval", kind="bug", divergence="mode",
        description=("The EmbeddingProbe callback switches the LightningModule to eval() for its collapse "
                     "check and no longer switches it back; Lightning 2.2 restores the mode it found "
                     "around validation, so every training step after step 25 runs in eval mode "
                     "(dropout off, BatchNorm on running statistics)."),
        edits=[(CB, "            spreads.append(z.std(dim=0).mean())\n        pl_module.train()\n",
                "            spreads.append(z.std(dim=0).mean())\n")],
        entries=[dict(rule="GM201", path=CB,
                      marks=["self.history.append((step", "pl_module.eval()"])],
    ),
    dict(
        case="c08", slug="probe_forward_in_train_mode", kind="bug", divergence="mode",
        description=("The EmbeddingProbe callback no longer calls eval() before its no_grad forward over the "
                     "validation graphs: the encoder's BatchNorm layers update their running statistics "
                     "with unmasked validation inputs (3 batches every 25 steps) outside the training "
                     "step, and dropout is applied in the probe."),
        edits=[(CB, "        pl_module.eval()\n        spreads = []\n", "        spreads = []\n")],
        entries=[dict(rule="GM202", path=CB, marks=["spreads = []", "z = pl_module.embed(g,"])],
    ),
    dict(
        case="c09", slug="bf16_true_precision", kind="bug", divergence="init",
        description=("The config asks Lightning for precision 'bf16-true': the LightningModule's parameters "
                     "and the input features are cast to bfloat16 (no float32 master weights), so the "
                     "forward, the loss and AdamW's updates all run in bf16."),
        edits=[(CFG, "  precision: 32-true\n", "  precision: bf16-true\n")],
        entries=[dict(rule="GM301", path=CFG, marks=["precision: bf16-true"])],
    ),
    dict(
        case="c10", slug="mse_reduction_sum", kind="bug", divergence="loss",
        description=("The MSE term uses F.mse_loss(..., reduction='sum') over masked nodes x feature dims "
                     "without dividing by their number: the loss scales with the number of masked nodes "
                     "in the batch and the SCE term (weight 0.25) becomes negligible."),
        edits=[(MAE, '        "mse": (pred - target).pow(2).mean(),\n',
                '        "mse": F.mse_loss(pred, target, reduction="sum"),\n')],
        entries=[dict(rule="GM401", path=MAE, marks=['reduction="sum"'])],
    ),
    dict(
        case="c11", slug="loss_part_renamed", kind="bug", divergence="loss",
        description=("The MSE part of reconstruction_loss is named 'rec' while the config weights are keyed "
                     "'mse'; weights.get(name, 0.0) silently gives it weight 0 and only the scale-free "
                     "SCE term is optimised."),
        edits=[(MAE, '        "mse": (pred - target).pow(2).mean(),\n', '        "rec": (pred - target).pow(2).mean(),\n')],
        entries=[dict(rule="GM402", path=MAE, marks=['"rec": (pred - target)'])],
    ),
    dict(
        case="c12", slug="self_loops_added_after_transfer", kind="bug", divergence="input",
        description=("LitGraphMAE.on_after_batch_transfer adds self loops to every batch, but make_graph "
                     "already built the graphs with dgl.add_self_loop, so each node carries two self "
                     "loops in the GAT encoder and the GIN decoder (train and Lightning validation "
                     "batches only; the final evaluation does not go through the hook)."),
        edits=[(LIT, "import pytorch_lightning as pl\n", "import dgl\nimport pytorch_lightning as pl\n"),
               (LIT, "    def training_step(self, batch, batch_idx):\n",
                "    def on_after_batch_transfer(self, batch, dataloader_idx):\n"
                "        g, x = batch\n"
                "        return dgl.add_self_loop(g), x  # attention needs every node to see itself\n"
                "\n"
                "    def training_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM501", path=LIT, marks=["return dgl.add_self_loop(g), x"])],
    ),
    dict(
        case="c13", slug="collate_standardises_per_batch", kind="bug", divergence="input",
        description=("The collate function standardises node features with the mean/std of the current "
                     "batch instead of the training-set statistics fitted in setup(), so inputs and "
                     "reconstruction targets depend on which graphs share the batch."),
        edits=[(DATA, '        x = (g.ndata["feat"] - self.mean) / self.std\n',
                '        feat = g.ndata["feat"]\n        x = (feat - feat.mean(0)) / feat.std(0)\n')],
        entries=[dict(rule="GM502", path=DATA, marks=["x = (feat - feat.mean(0)) / feat.std(0)"])],
    ),
    dict(
        case="c14", slug="best_ckpt_loaded_with_prefix_strict_false", kind="bug", divergence="init",
        description=("load_best passes the Lightning state_dict (keys prefixed 'model.') to the bare "
                     "GraphMAE with strict=False: no key matches, nothing is loaded, and the reported "
                     "metrics are those of a freshly initialised model."),
        edits=[(TRAIN, '    state = {k.removeprefix("model."): v for k, v in ckpt["state_dict"].items()}\n',
                '    state = ckpt["state_dict"]\n'),
               (TRAIN, "    model.load_state_dict(state)\n", "    model.load_state_dict(state, strict=False)\n")],
        entries=[dict(rule="GM601", path=TRAIN,
                      marks=["model.load_state_dict(state, strict=False)", 'state = ckpt["state_dict"]'])],
    ),
    dict(
        case="c15", slug="torch_load_without_weights_only", kind="bug", divergence="init",
        description=("load_best reads the checkpoint with torch.load(path, map_location='cpu') without "
                     "weights_only=True (torch 2.2 default False: the file is fully unpickled)."),
        edits=[(TRAIN, 'torch.load(path, map_location="cpu", weights_only=True)',
                'torch.load(path, map_location="cpu")')],
        entries=[dict(rule="GM602", path=TRAIN, marks=['torch.load(path, map_location="cpu")'])],
    ),
    dict(
        case="c16", slug="dgl_rng_not_seeded", kind="bug", divergence="input", repeat=True,
        description=("seed_everything relies on pl.seed_everything (python/numpy/torch) and no longer calls "
                     "dgl.seed, but make_graph draws the intra-block edges with dgl.rand_graph, so the "
                     "synthetic graph structure changes from run to run with the same --seed."),
        edits=[(SEED, "    dgl.seed(seed)\n", "")],
        entries=[dict(rule="GM603", path=SEED, marks=["pl.seed_everything(seed, workers=True)"])],
    ),
    # ---------------------------------------------------------------- benign look-alikes
    dict(
        case="c20", slug="log_detached_latent_std", kind="benign",
        description="training_step logs the spread of the latent codes from z.detach(); the loss path is untouched.",
        edits=[(LIT, '            self.log(f"train/{name}", value, batch_size=n)\n',
                '            self.log(f"train/{name}", value, batch_size=n)\n'
                '        self.log("train/z_std", z.detach().std(dim=0).mean(), batch_size=n)\n')],
        entries=[dict(rule="GM101", path=LIT, marks=["z.detach().std(dim=0)"])],
    ),
    dict(
        case="c21", slug="eval_recon_on_batch_restores_train", kind="benign",
        description=("LitGraphMAE.on_train_batch_end measures the eval-mode reconstruction error of the "
                     "current batch every 50 steps under no_grad and then calls self.train()."),
        edits=[(LIT, "    def validation_step(self, batch, batch_idx):\n",
                "    def on_train_batch_end(self, outputs, batch, batch_idx):\n"
                "        if self.global_step % 50 == 0:\n"
                "            g, x = batch\n"
                "            self.eval()\n"
                "            with torch.no_grad():\n"
                "                pred, target, _ = self.model(g, x, generator=torch.Generator().manual_seed(0))\n"
                "            self.train()\n"
                "            self.log(\"train/eval_mse\", (pred - target).pow(2).mean(), batch_size=target.shape[0])\n"
                "\n"
                "    def validation_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM201", path=LIT, marks=["            self.eval()"]),
                 dict(rule="GM102", path=LIT, marks=["            with torch.no_grad():"])],
    ),
    dict(
        case="c22", slug="sum_divided_by_numel", kind="benign",
        description="The MSE term is computed with reduction='sum' and divided by pred.numel(), i.e. the mean.",
        edits=[(MAE, '        "mse": (pred - target).pow(2).mean(),\n',
                '        "mse": F.mse_loss(pred, target, reduction="sum") / pred.numel(),\n')],
        entries=[dict(rule="GM401", path=MAE, marks=['reduction="sum"'])],
    ),
    dict(
        case="c23", slug="strict_false_on_stripped_keys", kind="benign",
        description=("load_best uses strict=False but loads the prefix-stripped state dict of the same "
                     "architecture: nothing is missing or unexpected."),
        edits=[(TRAIN, "    model.load_state_dict(state)\n", "    model.load_state_dict(state, strict=False)\n")],
        entries=[dict(rule="GM601", path=TRAIN, marks=["model.load_state_dict(state, strict=False)"])],
    ),
    dict(
        case="c24", slug="frozen_ema_teacher_callback", kind="benign",
        description=("A new EMATeacher callback keeps a deep copy of the GraphMAE in eval mode with "
                     "requires_grad_(False) and updates it in place under no_grad after every batch, "
                     "for downstream probing; the trained model is untouched."),
        edits=[(CB, "import pytorch_lightning as pl\n", "import copy\n\nimport pytorch_lightning as pl\n"),
               (CB, "        self.history.append((step, float(torch.stack(spreads).mean())))\n",
                "        self.history.append((step, float(torch.stack(spreads).mean())))\n"
                "\n\n"
                "class EMATeacher(pl.Callback):\n"
                "    \"\"\"Exponential moving average of the GraphMAE weights, kept for downstream probing.\"\"\"\n"
                "\n"
                "    def __init__(self, decay=0.99):\n"
                "        self.decay = decay\n"
                "        self.teacher = None\n"
                "\n"
                "    def on_fit_start(self, trainer, pl_module):\n"
                "        self.teacher = copy.deepcopy(pl_module.model).eval()\n"
                "        self.teacher.requires_grad_(False)\n"
                "\n"
                "    @torch.no_grad()\n"
                "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
                "        for t, s in zip(self.teacher.parameters(), pl_module.model.parameters()):\n"
                "            t.mul_(self.decay).add_(s.detach(), alpha=1 - self.decay)\n"),
               (TRAIN, "from callbacks import EmbeddingProbe\n", "from callbacks import EMATeacher, EmbeddingProbe\n"),
               (TRAIN, "            callbacks=[best, probe],\n", "            callbacks=[best, probe, EMATeacher(0.99)],\n")],
        entries=[dict(rule="GM103", path=CB, marks=["self.teacher.requires_grad_(False)"]),
                 dict(rule="GM105", path=CB, marks=["copy.deepcopy(pl_module.model)"]),
                 dict(rule="GM102", path=CB, marks=["    @torch.no_grad()"])],
    ),
    dict(
        case="c25", slug="self_loops_reset_after_transfer", kind="benign",
        description=("on_after_batch_transfer removes existing self loops before adding them, so every node "
                     "keeps exactly one self loop."),
        edits=[(LIT, "import pytorch_lightning as pl\n", "import dgl\nimport pytorch_lightning as pl\n"),
               (LIT, "    def training_step(self, batch, batch_idx):\n",
                "    def on_after_batch_transfer(self, batch, dataloader_idx):\n"
                "        g, x = batch\n"
                "        return dgl.add_self_loop(dgl.remove_self_loop(g)), x\n"
                "\n"
                "    def training_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM501", path=LIT, marks=["dgl.add_self_loop(dgl.remove_self_loop(g))"])],
    ),
    dict(
        case="c26", slug="loss_history_detached", kind="benign",
        description="training_step keeps loss.detach() in self.loss_history instead of loss.item().",
        edits=[(LIT, "        self.loss_history.append(loss.item())\n", "        self.loss_history.append(loss.detach())\n")],
        entries=[dict(rule="GM106", path=LIT, marks=["self.loss_history.append(loss.detach())"])],
    ),
    dict(
        case="c27", slug="zero_grad_hook_keeps_zeros", kind="benign",
        description=("LitGraphMAE overrides optimizer_zero_grad to zero gradients in place "
                     "(set_to_none=False) every batch; Lightning calls it before every backward."),
        edits=[(LIT, "    def validation_step(self, batch, batch_idx):\n",
                "    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):\n"
                "        optimizer.zero_grad(set_to_none=False)\n"
                "\n"
                "    def validation_step(self, batch, batch_idx):\n")],
        entries=[dict(rule="GM104", path=LIT, marks=["optimizer.zero_grad(set_to_none=False)"])],
    ),
]
