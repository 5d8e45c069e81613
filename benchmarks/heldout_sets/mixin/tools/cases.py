"""One-edit specification of every case: a file under src/, an exact `find` string occurring once in
base/src/<file>, its `replace`, and truth entries (`marks`: substrings occurring once in the CASE's file;
"@edit" = the first changed line)."""

RUN = "python src/train.py"
TR, LP, MX, CF, TM = "gmx/trainer.py", "gmx/loop.py", "gmx/mixins.py", "gmx/config.py", "configs/overrides.toml"
DA, MD, LS, UT = "gmx/data.py", "gmx/model.py", "gmx/loss.py", "gmx/utils.py"


def E(rule, *marks):
    return [dict(rule=rule, marks=list(marks) or ["@edit"])]


_SPECS = [
    # ------------------------------------------------------------------ bugs
    dict(slug="rep_hook_detaches", kind="bug", file=MX, divergence="grad",
         find="        self.rep_norms.append(h.detach().norm(dim=-1).mean().item())\n        return super().on_representation(h)\n",
         replace="        h = h.detach()  # monitoring only: keep the stats out of the graph\n"
                 "        self.rep_norms.append(h.norm(dim=-1).mean().item())\n        return super().on_representation(h)\n",
         entries=E("GM101"),
         description="EvalMixin.on_representation (a monitoring hook) rebinds h to h.detach() and hands the detached "
                     "tensor on through super(); LoopBase returns it and the Trainer decodes from it, so the encoder "
                     "and the mask token get no gradient."),
    dict(slug="decode_from_detached_rep", kind="bug", file=MD, divergence="grad",
         find="        rep = self.encoder_to_decoder(h)\n",
         replace="        rep = self.encoder_to_decoder(h.detach())  # re-mask below is in-place\n",
         entries=E("GM101"),
         description="GraphMAE.decode detaches the encoder output before encoder_to_decoder (to protect it from the "
                     "in-place re-mask): only encoder_to_decoder and the decoder are trained."),
    dict(slug="toml_freeze_encoder_epochs", kind="bug", file=TM, divergence="grad",
         find="eval_every = 10\n",
         replace="eval_every = 10\nfreeze_encoder_epochs = 30\n",
         entries=E("GM102"),
         description="The TOML overrides keep `freeze_encoder_epochs = 30` from a decoder warm-up ablation: with 30 "
                     "epochs, Trainer.encode enters torch.no_grad() through its ExitStack in every epoch and the "
                     "encoder never trains."),
    dict(slug="toml_freezes_first_layer", kind="bug", file=TM, divergence="grad",
         find="reduction = \"mean\"\n",
         replace="reduction = \"mean\"\nfreeze = [\"encoder.layers.0\", \"enc_mask_token\"]\n",
         entries=E("GM103"),
         description="The TOML overrides freeze the first encoder layer and the mask token (a transfer-learning "
                     "setting left in): utils.freeze sets requires_grad=False before the optimizer is built."),
    dict(slug="zero_grad_in_before_backward", kind="bug", file=MX, divergence="grad",
         find="class AmpMixin:\n",
         replace="class AmpMixin:\n    def before_backward(self, loss):\n"
                 "        self.optimizer.zero_grad(set_to_none=True)  # no stale grads under autocast\n"
                 "        super().before_backward(loss)\n\n",
         entries=E("GM104", "self.optimizer.zero_grad(set_to_none=True)"),
         description="AmpMixin.before_backward clears the gradients before every backward: with accum_steps=2 the "
                     "first micro-batch's gradient is thrown away and each step uses half a batch / 2."),
    dict(slug="zero_grad_before_step", kind="bug", file=LP, divergence="grad",
         find="    def optimizer_step(self):\n        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.clip)\n"
              "        self.optimizer.step()\n        self.optimizer.zero_grad(set_to_none=True)\n",
         replace="    def optimizer_step(self):\n        self.optimizer.zero_grad(set_to_none=True)\n"
                 "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.clip)\n"
                 "        self.optimizer.step()\n",
         entries=E("GM104"),
         description="LoopBase.optimizer_step clears the gradients first, then clips and steps: every step sees no "
                     "gradient and AdamW applies weight decay only."),
    dict(slug="optimizer_before_configure_model", kind="bug", file=LP, divergence="weights",
         find="        self.model = self.build_model()\n        self.configure_model()\n        self.optimizer = self.build_optimizer()\n",
         replace="        self.model = self.build_model()\n        self.optimizer = self.build_optimizer()\n        self.configure_model()\n",
         entries=E("GM105", "        self.optimizer = self.build_optimizer()\n"),
         description="LoopBase builds the optimizer before the configure_model hooks; CheckpointMixin.configure_model "
                     "re-creates the model under init_seed, so the optimizer holds the first (discarded) model's "
                     "parameters and the trained model never changes."),
    dict(slug="track_keeps_loss_tensor", kind="bug", file=LP, divergence="memory",
         find="            self.history[key].append(loss.item())\n",
         replace="            self.history[key].append(loss)\n",
         entries=E("GM106"),
         description="The functools.wraps `track` decorator appends the loss tensor itself to history: every step's "
                     "autograd graph stays alive for the whole run (the final_loss average still works on tensors)."),
    dict(slug="rep_norm_tensor_kept", kind="bug", file=MX, divergence="memory",
         find="        self.rep_norms.append(h.detach().norm(dim=-1).mean().item())\n",
         replace="        self.rep_norms.append(h.norm(dim=-1).mean())\n",
         entries=E("GM106"),
         description="EvalMixin.on_representation keeps the representation norm as a tensor attached to the graph "
                     "(no detach, no item): every step's encoder graph stays alive."),
    dict(slug="eval_mode_not_restored", kind="bug", file=MX, divergence="mode",
         find="        model.train(was_training)\n        return cos\n",
         replace="        return cos\n",
         entries=E("GM201", "        model.eval()\n"),
         description="EvalMixin.reconstruction_cos lost its `model.train(was_training)`: the validation at epoch 10 "
                     "leaves the live model in eval mode, and LoopBase calls model.train() only once before the loop, "
                     "so epochs 11-30 train with dropout off and BatchNorm on running statistics."),
    dict(slug="was_training_read_after_eval", kind="bug", file=MX, divergence="mode",
         find="        was_training = model.training\n        model.eval()\n",
         replace="        model.eval()\n        was_training = model.training\n",
         entries=E("GM201", "        was_training = model.training\n"),
         description="EvalMixin.reconstruction_cos reads model.training after model.eval(): the 'restore' puts the "
                     "model back in eval mode, so training after the first validation runs in eval mode."),
    dict(slug="ema_without_buffers", kind="bug", file=MX, divergence="buffers",
         find="                                 use_buffers=True)\n",
         replace="                                 use_buffers=False)\n",
         entries=E("GM202"),
         description="EmaMixin builds AveragedModel with use_buffers=False: the EMA copy's BatchNorm buffers are no "
                     "longer averaged; AveragedModel.update_parameters copies the live model's running statistics into "
                     "the EMA copy at every update, so the checkpointed EMA weights are evaluated and probed with "
                     "statistics collected under different (live) weights."),
    dict(slug="toml_bf16", kind="bug", file=TM, divergence="forward",
         find="precision = \"fp32\"\n",
         replace="precision = \"bf16\"\n",
         entries=E("GM301"),
         description="The TOML overrides switch to bf16: AmpMixin's autocast runs the encoder, decoder and "
                     "projections in bfloat16 (no GradScaler needed, but bf16 outputs feed the loss)."),
    dict(slug="toml_sum_reduction", kind="bug", file=TM, divergence="loss",
         find="reduction = \"mean\"\n",
         replace="reduction = \"sum\"\n",
         entries=E("GM401"),
         description="The TOML overrides set reduction = \"sum\": the SCE is summed over the ~320 masked nodes of each "
                     "batch, so loss and gradient scale with the batch's node count (clipped to 1.0 every step)."),
    dict(slug="loss_on_all_nodes", kind="bug", file=TR, divergence="loss",
         find="        return sce_loss(recon[mask].float(), x[mask], self.cfg.model.alpha, self.cfg.train.reduction)\n",
         replace="        return sce_loss(recon.float(), x, self.cfg.model.alpha, self.cfg.train.reduction)\n",
         entries=E("GM402"),
         description="Trainer.training_step computes the SCE over all nodes instead of the masked ones: the "
                     "unmasked nodes add an easy self-reconstruction term that dominates the loss."),
    dict(slug="collate_adds_self_loops", kind="bug", file=DA, divergence="data",
         find="    g = dgl.batch(graphs)\n    return Batch(",
         replace="    g = dgl.add_self_loop(dgl.batch(graphs))\n    return Batch(",
         entries=E("GM501"),
         description="collate adds self loops to the batched graph; build_dataset already gave every graph its self "
                     "loops, so training batches carry two per node (held-out batches one)."),
    dict(slug="collate_batch_standardise", kind="bug", file=DA, divergence="data",
         find="    g = dgl.batch(graphs)\n    return Batch(g, g.ndata[\"x\"], torch.stack(labels))\n",
         replace="    g = dgl.batch(graphs)\n    x = g.ndata[\"x\"]\n"
                 "    return Batch(g, (x - x.mean(0)) / x.std(0), torch.stack(labels))\n",
         entries=E("GM502", "(x - x.mean(0)) / x.std(0)"),
         description="collate re-standardises every training batch with its own statistics; held-out graphs and the "
                     "probe use the dataset standardisation."),
    dict(slug="toml_feature_noise", kind="bug", file=TM, divergence="data",
         find="eval_every = 10\n",
         replace="eval_every = 10\nfeat_noise = 0.5\n",
         entries=E("GM503"),
         description="The TOML file turns on feature-noise augmentation (0.5), absent from the reference / "
                     "minimal.py: every training input is perturbed and the encoder sees a different input "
                     "distribution than at evaluation."),
    dict(slug="reload_strict_false_raw_keys", kind="bug", file=MX, divergence="weights",
         find="        sd = {k.removeprefix(\"module.\"): v for k, v in state[\"ema\"].items() if k != \"n_averaged\"}\n"
              "        model.load_state_dict(sd)\n",
         replace="        sd = state[\"ema\"]\n        model.load_state_dict(sd, strict=False)  # n_averaged is not a model key\n",
         entries=E("GM601", "model.load_state_dict(sd, strict=False)"),
         description="load_for_eval loads the AveragedModel state dict as is with strict=False: every key carries "
                     "the 'module.' prefix, nothing is loaded and the final metrics come from a fresh model."),
    dict(slug="torch_load_pickle", kind="bug", file=MX, divergence="none",
         find="        state = torch.load(path, map_location=\"cpu\", weights_only=True)\n        model = self.build_model()\n",
         replace="        state = torch.load(path, map_location=\"cpu\")\n        model = self.build_model()\n",
         entries=E("GM602"),
         description="load_for_eval calls torch.load without weights_only=True (torch 2.2 unpickles arbitrary "
                     "objects)."),
    dict(slug="numpy_not_seeded", kind="bug", file=UT, divergence="data",
         find="    np.random.seed(seed)\n",
         replace="",
         entries=E("GM603"),
         description="seed_everything no longer seeds numpy's global RNG, which build_dataset's np.random.permutation "
                     "uses for the train/val/test split: splits and every metric change from run to run."),
    dict(slug="cudnn_flag_misspelled", kind="bug", file=UT, divergence="none",
         find="    torch.backends.cudnn.deterministic = True\n",
         replace="    torch.backends.cudnn.determinstic = True\n",
         entries=E("GM604"),
         description="seed_everything misspells cudnn.deterministic: a new attribute is created and the flag stays "
                     "False."),
    # ------------------------------------------------------------------ benign
    dict(slug="target_detached", kind="benign", file=TR,
         find="        return sce_loss(recon[mask].float(), x[mask], self.cfg.model.alpha, self.cfg.train.reduction)\n",
         replace="        target = x[mask].detach()  # stop-gradient on the target side\n"
                 "        return sce_loss(recon[mask].float(), target, self.cfg.model.alpha, self.cfg.train.reduction)\n",
         entries=E("GM101"),
         description="training_step detaches the reconstruction target (dataset features, no graph)."),
    dict(slug="mask_sampling_no_grad", kind="benign", file=DA,
         find="def node_mask(g, rate, gen):\n",
         replace="@torch.no_grad()\ndef node_mask(g, rate, gen):\n",
         entries=E("GM102", "def node_mask(g, rate, gen):"),
         description="node_mask (index sampling only, the mask token is added elsewhere) runs under @torch.no_grad()."),
    dict(slug="zero_grad_on_fit_start", kind="benign", file=LP,
         find="    def on_fit_start(self):\n        pass\n",
         replace="    def on_fit_start(self):\n        self.optimizer.zero_grad(set_to_none=True)\n",
         entries=E("GM104"),
         description="LoopBase.on_fit_start also clears gradients before the first epoch (none exist yet)."),
    dict(slug="optimizer_unfiltered", kind="benign", file=TR,
         find="        params = [p for p in self.model.parameters() if p.requires_grad]\n",
         replace="        params = self.model.parameters()\n",
         entries=E("GM105"),
         description="build_optimizer passes all parameters of the (configured) trained model; nothing is frozen."),
    dict(slug="eval_after_fit", kind="benign", file=TR,
         find="        self.fit()\n        path = self.save_checkpoint()\n",
         replace="        self.fit()\n        self.model.eval()\n        path = self.save_checkpoint()\n",
         entries=E("GM201", "        self.model.eval()\n"),
         description="Trainer.run puts the live model in eval mode after training; no training step follows."),
    dict(slug="dataclass_bf16_overridden", kind="benign", file=CF,
         find="    precision: str = \"fp32\"\n",
         replace="    precision: str = \"bf16\"\n",
         entries=E("GM301"),
         description="TrainCfg's default precision is bf16, but the TOML file (always loaded) sets fp32."),
    dict(slug="sum_over_count", kind="benign", file=LS,
         find="    return loss.mean()\n",
         replace="    return loss.sum() / max(1, loss.numel())\n",
         entries=E("GM401"),
         description="sce_loss's mean branch is a sum divided by the number of reconstructed nodes."),
    dict(slug="reload_strict_false_stripped", kind="benign", file=MX,
         find="        model.load_state_dict(sd)\n",
         replace="        model.load_state_dict(sd, strict=False)\n",
         entries=E("GM601"),
         description="load_for_eval uses strict=False, but the prefix-stripped keys match the model exactly."),
]

CASES = []
for i, s in enumerate(_SPECS, 1):
    c = dict(s)
    c["id"] = f"c{i:02d}"
    c.setdefault("run", RUN)
    CASES.append(c)
