"""One-edit specification of every case.  Each case: a file under src/, an exact `find` string that
occurs once in base/src/<file>, its `replace`, and the truth entries.  An entry's `marks` are
substrings that occur exactly once in the CASE's file; their line numbers become the truth lines.
"@edit" stands for the first line the edit changed."""

RUN = "python -m src.stream.run --config src/configs/default.json"

CASES = [
    # ------------------------------------------------------------------ bugs
    dict(id="c01", slug="evaluating_captures_mode_after_eval", kind="bug", file="stream/ctx.py",
         find="    was = model.training\n    model.eval()\n",
         replace="    model.eval()\n    was = model.training\n",
         entries=[dict(rule="GM201", marks=["    was = model.training"])],
         divergence="mode",
         description="The evaluating() context manager reads model.training after calling model.eval(), "
                     "so it 'restores' eval mode: after the first periodic held-out evaluation (step 50) "
                     "the student stays in eval mode (dropout off, BatchNorm on running statistics) for the "
                     "rest of pretraining."),
    dict(id="c02", slug="teacher_deepcopy_of_eval_student", kind="bug", file="stream/state.py",
         find="self._teacher = copy.deepcopy(model.encoder).eval()",
         replace="self._teacher = copy.deepcopy(model.encoder.eval())",
         entries=[dict(rule="GM201", marks=["@edit"])],
         divergence="mode",
         description="The EMA teacher is built as deepcopy(model.encoder.eval()): eval() works in place and "
                     "returns the module, so the student encoder itself is switched to eval mode; it trains in "
                     "eval mode until the first evaluating() block restores train mode at step 50."),
    dict(id="c03", slug="student_encode_inside_teacher_no_grad", kind="bug", file="stream/steps.py",
         find="            target = self.teacher(g, x).detach()\n        rep = self.model.encoder(",
         replace="            target = self.teacher(g, x).detach()\n            rep = self.model.encoder(",
         entries=[dict(rule="GM102", marks=["            rep = self.model.encoder("])],
         divergence="grad",
         description="In the step object the student's encoder call slipped into the torch.no_grad() block "
                     "meant for the EMA teacher: the encoder and the mask token get no gradient, only the "
                     "decoder side and the predictor train."),
    dict(id="c04", slug="mask_attr_under_no_grad_decorator", kind="bug", file="stream/model.py",
         find="    def mask_attr(self, x, mask_nodes):\n",
         replace="    @torch.no_grad()\n    def mask_attr(self, x, mask_nodes):\n",
         entries=[dict(rule="GM102", marks=["    @torch.no_grad()"])],
         divergence="grad",
         description="mask_attr (masking = 'data preparation') is decorated with @torch.no_grad(); the "
                     "learnable mask token is written into the input without a graph, so it never receives a "
                     "gradient and stays at its zero initialisation."),
    dict(id="c05", slug="decoder_fed_detached_encoding", kind="bug", file="stream/steps.py",
         find="recon = self.model.decode(g, rep, mask)",
         replace="recon = self.model.decode(g, rep.detach(), mask)",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="The step object detaches the encoder output before the decoder (a misreading of "
                     "GraphMAE2's stop-gradient): the reconstruction loss no longer reaches the encoder or the "
                     "mask token; the encoder is trained by the latent term only."),
    dict(id="c06", slug="stopgrad_on_student_prediction", kind="bug", file="stream/losses.py",
         find="return sce_loss(pred, stopgrad(target), alpha=1.0, reduction=reduction)",
         replace="return sce_loss(stopgrad(pred), target, alpha=1.0, reduction=reduction)",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="latent_loss applies the stop-gradient helper to the student's prediction instead of the "
                     "teacher target: the latent term contributes no gradient; the predictor never trains and "
                     "the encoder loses the latent signal."),
    dict(id="c07", slug="freeze_switch_default_true", kind="bug", file="stream/run.py",
         find='if getattr(cfg.train, "freeze_encoder", False):',
         replace='if getattr(cfg.train, "freeze_encoder", True):',
         entries=[dict(rule="GM103", marks=["@edit", "model.encoder.requires_grad_(False)"])],
         divergence="grad",
         description="The decoder-only ablation switch is read with getattr(cfg.train, 'freeze_encoder', True); "
                     "the key is in neither the defaults nor the JSON, so the encoder is frozen "
                     "(requires_grad_(False)) in every normal run."),
    dict(id="c08", slug="teacher_aliases_student_encoder", kind="bug", file="stream/state.py",
         find="self._teacher = copy.deepcopy(model.encoder).eval()",
         replace="self._teacher = model.encoder",
         entries=[dict(rule="GM103", marks=["@edit", "self._teacher.requires_grad_(False)"])],
         divergence="grad",
         description="The EMA teacher is the student encoder itself (no deepcopy); freezing the 'teacher' with "
                     "requires_grad_(False) freezes the trained encoder, and the EMA update is a no-op."),
    dict(id="c09", slug="update_without_zero_grad", kind="bug", file="stream/optim.py",
         find="    state.scaler.update()\n    opt.zero_grad(set_to_none=True)\n",
         replace="    state.scaler.update()\n",
         entries=[dict(rule="GM104", marks=["    state.scaler.update()", "    state.scheduler.step()"])],
         divergence="grad",
         description="apply_update (called by the @accumulate decorator every 2 micro-steps) steps the "
                     "optimiser but never zeroes the gradients: every update uses the sum of all gradients "
                     "since step 1."),
    dict(id="c10", slug="zero_grad_every_micro_step", kind="bug", file="stream/loop.py",
         find="        with step_scope(cfg):\n",
         replace="        state.optimizer.zero_grad(set_to_none=True)\n        with step_scope(cfg):\n",
         entries=[dict(rule="GM104", marks=["@edit"])],
         divergence="grad",
         description="The generator clears the gradients before every micro-step, i.e. between the first "
                     "micro-step's backward and the optimiser step two micro-steps later: gradient "
                     "accumulation silently keeps only the last micro-batch (at half weight)."),
    dict(id="c11", slug="optimizer_over_stale_model", kind="bug", file="stream/run.py",
         find="    state = TrainState(model, cfg.model.ema_momentum)\n",
         replace="    state = TrainState(build_model(cfg, data.feats.shape[1]), cfg.model.ema_momentum)\n",
         entries=[dict(rule="GM105", marks=["@edit", "groups = param_groups([model]"])],
         divergence="init",
         description="A refactor inlined build_model into the TrainState construction: the param groups were "
                     "taken from the first `model`, the state trains a second, freshly built instance, so the "
                     "optimiser never updates the model that is trained."),
    dict(id="c12", slug="generator_sums_loss_tensor", kind="bug", file="stream/loop.py",
         find="        total += loss.item()\n",
         replace="        total += loss\n",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="The generator accumulates the micro-step loss tensor (with its autograd graph) instead "
                     "of loss.item(); the yielded 'loss' keeps every step's graph alive through the driver's "
                     "history list."),
    dict(id="c13", slug="ema_buffers_copied_backwards", kind="bug", file="stream/state.py",
         find="            tb.copy_(sb)\n",
         replace="            sb.copy_(tb)\n",
         entries=[dict(rule="GM202", marks=["@edit"])],
         divergence="forward",
         description="The EMA update copies BatchNorm buffers in the wrong direction (teacher -> student): "
                     "after every step the student's running mean/var are reset to the teacher's never-updated "
                     "initial values, so evaluation uses mean 0 / var 1 statistics and the teacher's targets "
                     "are computed with them too."),
    dict(id="c14", slug="bf16_precision_in_json", kind="bug", file="configs/default.json",
         find='"precision": "fp32"',
         replace='"precision": "bf16"',
         entries=[dict(rule="GM301", marks=["@edit"])],
         divergence="forward",
         description="The JSON config switches precision to bf16: autocast_ctx wraps every micro-step in "
                     "torch.autocast('cpu', bfloat16), so the linear layers, the predictor output and the "
                     "latent loss are computed in bfloat16."),
    dict(id="c15", slug="sum_reduction_in_json", kind="bug", file="configs/default.json",
         find='"reduction": "mean"',
         replace='"reduction": "sum"',
         entries=[dict(rule="GM401", marks=["@edit"])],
         divergence="loss",
         description="The JSON config sets reduction='sum', which reaches both SCE terms through the step "
                     "object: the loss is summed over the ~800 masked nodes instead of averaged, its scale "
                     "changes with the mask size and the gradient clip (max norm 1) now cuts every step."),
    dict(id="c16", slug="latent_weight_default_zero", kind="bug", file="stream/config.py",
         find='"latent_weight": 1.0,',
         replace='"latent_weight": 0.0,',
         entries=[dict(rule="GM402", marks=["@edit"])],
         divergence="loss",
         description="The module-level DEFAULTS dict has latent_weight 0.0 (left from a recon-only ablation) "
                     "and the JSON does not set it: the GraphMAE2 latent-prediction term is silently dropped."),
    dict(id="c17", slug="self_loop_transform_in_json", kind="bug", file="configs/default.json",
         find='"transforms": []',
         replace='"transforms": ["add_self_loop"]',
         entries=[dict(rule="GM501", marks=["@edit"])],
         divergence="input",
         description="The JSON config adds the registered add_self_loop transform, but build_dataset already "
                     "added self loops: every node carries two self loops, which changes the GCN "
                     "normalisation."),
    dict(id="c18", slug="probe_batches_standardised_per_batch", kind="bug", file="stream/probe.py",
         find="        yield x[idx], y[idx]\n",
         replace="        yield (x[idx] - x[idx].mean(0)) / (x[idx].std(0) + 1e-6), y[idx]\n",
         entries=[dict(rule="GM502", marks=["@edit"])],
         divergence="input",
         description="The probe's minibatch generator standardises every batch with that batch's own "
                     "statistics, while the test embeddings are standardised with the training-set "
                     "statistics."),
    dict(id="c19", slug="feature_jitter_in_step", kind="bug", file="stream/steps.py",
         find="        mask = self.sample_mask()\n",
         replace="        mask = self.sample_mask()\n        x = x + 0.3 * torch.randn_like(x)   # feature jitter\n",
         entries=[dict(rule="GM503", marks=["@edit"])],
         divergence="input",
         description="The step object adds Gaussian jitter to the node features on every micro-step "
                     "(an augmentation absent from the reference): student input, teacher input and "
                     "reconstruction target are all noisy."),
    dict(id="c20", slug="probe_loads_wrapper_dict_non_strict", kind="bug", file="stream/checkpoint.py",
         find='encoder.load_state_dict(ckpt["encoder"])',
         replace="encoder.load_state_dict(ckpt, strict=False)",
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence="init",
         description="Stage two loads the checkpoint wrapper dict ({'encoder': ..., 'step': ...}) into the "
                     "encoder with strict=False: no key matches, nothing is loaded and the linear probe runs "
                     "on a randomly initialised encoder."),
    dict(id="c21", slug="torch_load_without_weights_only", kind="bug", file="stream/checkpoint.py",
         find="ckpt = torch.load(path, weights_only=True)",
         replace="ckpt = torch.load(path)",
         entries=[dict(rule="GM602", marks=["@edit"])],
         divergence=None,
         description="Stage two reads the checkpoint with torch.load(path): on torch 2.2 that unpickles "
                     "arbitrary objects (weights_only defaults to False)."),
    dict(id="c22", slug="numpy_seed_via_default_rng", kind="bug", file="stream/seeding.py",
         find="    np.random.seed(seed)\n",
         replace="    np.random.default_rng(seed)\n",
         entries=[dict(rule="GM603", marks=["@edit"])],
         divergence="input",
         description="seed_everything 'seeds' numpy with np.random.default_rng(seed), which creates and "
                     "discards a generator; the global numpy RNG, used for the train/test node split, is "
                     "unseeded, so every run uses a different split."),
    dict(id="c23", slug="cudnn_flag_misspelled", kind="bug", file="stream/seeding.py",
         find="torch.backends.cudnn.deterministic = True",
         replace="torch.backends.cudnn.determinstic = True",
         entries=[dict(rule="GM604", marks=["@edit"])],
         divergence=None,
         description="seed_everything sets torch.backends.cudnn.determinstic (misspelled): a new attribute "
                     "is created and cudnn.deterministic stays False."),
    # ------------------------------------------------------------------ benign look-alikes
    dict(id="c24", slug="model_to_after_param_groups", kind="benign", file="stream/run.py",
         find="    state = TrainState(model, cfg.model.ema_momentum)\n",
         replace="    model = model.to(torch.device(\"cpu\"))\n    state = TrainState(model, cfg.model.ema_momentum)\n",
         entries=[dict(rule="GM105", marks=["@edit"])],
         divergence=None,
         description="The model is re-assigned with model.to('cpu') after its parameters were put in the "
                     "param groups; Module.to is in place and returns the same object, so the optimiser "
                     "still holds the trained parameters."),
    dict(id="c25", slug="evaluating_restores_per_module", kind="benign", file="stream/ctx.py",
         find="    was = model.training\n    model.eval()\n    try:\n        yield model\n    finally:\n        model.train(was)\n",
         replace="    modes = {m: m.training for m in model.modules()}\n    model.eval()\n    try:\n        yield model\n"
                 "    finally:\n        for m, mode in modes.items():\n            m.train(mode)\n",
         entries=[dict(rule="GM201", marks=["    model.eval()", "            m.train(mode)"])],
         divergence=None,
         description="evaluating() is rewritten to remember the mode of every submodule and restore each one "
                     "in `finally`; the model still trains in train mode after every evaluation."),
    dict(id="c26", slug="sum_reduction_divided_by_mask", kind="benign", file="stream/steps.py",
         find="rec = self.recon_loss(recon[mask], x[mask], self.alpha, self.reduction)",
         replace='rec = self.recon_loss(recon[mask], x[mask], self.alpha, "sum") / mask.numel()',
         entries=[dict(rule="GM401", marks=["@edit"])],
         divergence=None,
         description="The reconstruction term uses reduction='sum' and divides by the number of masked nodes "
                     "(= the mean)."),
    dict(id="c27", slug="remove_then_add_self_loop", kind="benign", file="configs/default.json",
         find='"transforms": []',
         replace='"transforms": ["remove_self_loop", "add_self_loop"]',
         entries=[dict(rule="GM501", marks=["@edit"])],
         divergence=None,
         description="The JSON config re-adds self loops through the transform registry, but removes the "
                     "existing ones first: one self loop per node, as in base."),
    dict(id="c28", slug="non_strict_load_checked", kind="benign", file="stream/checkpoint.py",
         find='encoder.load_state_dict(ckpt["encoder"])',
         replace='assert not encoder.load_state_dict(ckpt["encoder"], strict=False).missing_keys',
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence=None,
         description="Stage two loads with strict=False but asserts that no encoder key is missing; the "
                     "checkpoint's keys match the encoder exactly."),
    dict(id="c29", slug="no_grad_train_metric_after_loss", kind="benign", file="stream/steps.py",
         find='        return loss, {"recon": rec.item(), "latent": lat.item()}\n',
         replace='        with torch.no_grad():\n'
                 '            cos = torch.nn.functional.cosine_similarity(recon[mask], x[mask], dim=-1).mean()\n'
                 '        return loss, {"recon": rec.item(), "latent": lat.item(), "train_cos": cos.item()}\n',
         entries=[dict(rule="GM102", marks=["        with torch.no_grad():\n            cos"])],
         divergence=None,
         description="The step object computes a training reconstruction cosine for logging under "
                     "torch.no_grad(), after the loss has been built; the loss graph is untouched."),
    dict(id="c30", slug="probe_freezes_loaded_encoder", kind="benign", file="stream/probe.py",
         find="    encoder = load_encoder(path, cfg, data.feats.shape[1])\n",
         replace="    encoder = load_encoder(path, cfg, data.feats.shape[1])\n    encoder.requires_grad_(False)\n",
         entries=[dict(rule="GM103", marks=["@edit"])],
         divergence=None,
         description="The linear-probe stage freezes the reloaded encoder with requires_grad_(False); only the "
                     "linear classifier is trained there, as intended."),
    dict(id="c31", slug="deterministic_algorithms_on", kind="benign", file="stream/seeding.py",
         find="        torch.backends.cudnn.benchmark = False\n",
         replace="        torch.backends.cudnn.benchmark = False\n        torch.use_deterministic_algorithms(True)\n",
         entries=[dict(rule="GM604", marks=["@edit"])],
         divergence=None,
         description="seed_everything additionally turns on torch.use_deterministic_algorithms(True); all "
                     "flags are spelled correctly."),
    dict(id="c32", slug="ema_update_uses_data", kind="benign", file="stream/state.py",
         find="t.mul_(m).add_(s.detach(), alpha=1.0 - m)",
         replace="t.data.mul_(m).add_(s.data, alpha=1.0 - m)",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence=None,
         description="The EMA teacher update uses .data on teacher and student parameters (inside "
                     "@torch.no_grad()); the teacher is frozen and never in the loss graph of the student's "
                     "parameters."),
    dict(id="c33", slug="generator_sums_detached_loss", kind="benign", file="stream/loop.py",
         find="        total += loss.item()\n",
         replace="        total += loss.detach()\n",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="The generator accumulates loss.detach() (a tensor without a graph) for logging instead "
                     "of loss.item()."),
]
