"""One-edit specification of every case.  Each case: a file under src/, an exact `find` string that
occurs once in base/src/<file>, its `replace`, and the truth entries.  An entry's `marks` are
substrings that occur exactly once in the CASE's file; their line numbers become the truth lines.
"@edit" stands for the first line the edit changed."""

RUN = "python -m src.gmevents.main --config src/configs/exp/pretrain.yaml"

CASES = [
    # ------------------------------------------------------------------ bugs
    dict(id="c01", slug="train_mode_restore_on_trainer_completed", kind="bug", file="gmevents/handlers.py",
         find="    evaluator.add_event_handler(Events.COMPLETED, _set_mode, model, True)",
         replace="    trainer.add_event_handler(Events.COMPLETED, _set_mode, model, True)",
         entries=[dict(rule="GM201", marks=["@edit"])],
         divergence="mode",
         description="The handler that switches the shared model back to train mode is registered on the "
                     "trainer's COMPLETED event instead of the evaluator's: after the first validation run "
                     "(iteration 80) the model stays in eval mode (dropout off, BatchNorm on running "
                     "statistics) for the rest of pretraining."),
    dict(id="c02", slug="create_evaluator_switches_model_to_eval", kind="bug", file="gmevents/trainer.py",
         find="    seed = cfg.seed + 1\n",
         replace="    seed = cfg.seed + 1\n    model.eval()  # inference engine\n",
         entries=[dict(rule="GM201", marks=["    model.eval()  # inference engine"])],
         divergence="mode",
         description="create_evaluator puts the model it is given in eval mode when the evaluator is built; "
                     "the evaluator shares the trained model, which is created before trainer.run, so the "
                     "model trains in eval mode until the first validation's COMPLETED handler restores train "
                     "mode (iteration 80)."),
    dict(id="c03", slug="reset_bn_stats_after_reload", kind="bug", file="gmevents/main.py",
         find="    model.load_state_dict(state[\"model\"])\n    model.eval()\n",
         replace="    model.load_state_dict(state[\"model\"])\n"
                 "    for m in model.modules():  # downstream data: fresh BatchNorm statistics\n"
                 "        if isinstance(m, torch.nn.BatchNorm1d):\n"
                 "            m.reset_running_stats()\n"
                 "    model.eval()\n",
         entries=[dict(rule="GM202", marks=["            m.reset_running_stats()"])],
         divergence=None,
         description="The evaluation stage resets the BatchNorm running statistics of the reloaded model "
                     "('fresh statistics for the downstream data') and then runs it in eval mode: held-out "
                     "reconstruction and the probe's embeddings use mean 0 / variance 1 instead of the "
                     "statistics learned in pretraining."),
    dict(id="c04", slug="evaluator_eval_switch_on_wrong_event", kind="bug", file="gmevents/handlers.py",
         find="    evaluator.add_event_handler(Events.STARTED, _set_mode, model, False)",
         replace="    evaluator.add_event_handler(Events.ITERATION_COMPLETED, _set_mode, model, False)",
         entries=[dict(rule="GM202", marks=["@edit"])],
         divergence=None,
         description="The evaluator's switch to eval mode is registered on ITERATION_COMPLETED instead of "
                     "STARTED: the first held-out batch of every validation run goes through the shared model "
                     "in train mode (under no_grad), writing held-out statistics into the BatchNorm running "
                     "buffers outside the training forward."),
    dict(id="c05", slug="mask_token_added_through_data", kind="bug", file="gmevents/model.py",
         find="        out[mask_nodes] += self.enc_mask_token\n",
         replace="        out[mask_nodes] += self.enc_mask_token.data\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="mask_features adds `enc_mask_token.data` to the masked rows: the learnable mask token "
                     "is cut from the graph, gets no gradient and stays at its zero initialisation."),
    dict(id="c06", slug="sce_detaches_prediction", kind="bug", file="gmevents/losses.py",
         find="    x = F.normalize(x, p=2, dim=-1)\n",
         replace="    x = F.normalize(x.detach(), p=2, dim=-1)\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="sce_loss detaches its first argument (the reconstruction) instead of the target: the "
                     "attribute term contributes no gradient; the model trains on the node-type "
                     "cross-entropy only."),
    dict(id="c07", slug="mask_features_inside_no_grad_block", kind="bug", file="gmevents/trainer.py",
         find="            mask_nodes, _ = sample_mask(g.num_nodes(), mask_rate)\n"
              "        x_in = model.mask_features(x, mask_nodes)\n",
         replace="            mask_nodes, _ = sample_mask(g.num_nodes(), mask_rate)\n"
                 "            x_in = model.mask_features(x, mask_nodes)\n",
         entries=[dict(rule="GM102", marks=["            x_in = model.mask_features(x, mask_nodes)"])],
         divergence="grad",
         description="In process_fn the call that writes the learnable mask token into the input slipped "
                     "into the torch.no_grad() block meant for mask sampling: the mask token never receives "
                     "a gradient."),
    dict(id="c08", slug="remask_under_no_grad_decorator", kind="bug", file="gmevents/model.py",
         find="    def remask(self, rep, mask_nodes):\n",
         replace="    @torch.no_grad()\n    def remask(self, rep, mask_nodes):\n",
         entries=[dict(rule="GM102", marks=["    @torch.no_grad()"])],
         divergence="grad",
         description="remask ('just zeroes rows') is decorated with @torch.no_grad(): the decoder input has "
                     "no graph, so the encoder, the mask token and encoder_to_decoder get no gradient; only "
                     "the decoder trains."),
    dict(id="c09", slug="freeze_encoder_true_in_base_yaml", kind="bug", file="configs/base.yaml",
         find="  freeze_encoder: false\n",
         replace="  freeze_encoder: true     # linear-probe protocol\n",
         entries=[dict(rule="GM103", marks=["@edit"])],
         divergence="grad",
         description="base.yaml sets train.freeze_encoder: true (meant for probing experiments) and the "
                     "pretraining experiment file does not override it: main.py calls "
                     "model.encoder.requires_grad_(False), the encoder is never trained."),
    dict(id="c10", slug="mask_token_requires_grad_false", kind="bug", file="gmevents/model.py",
         find="        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))\n",
         replace="        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim), requires_grad=False)\n",
         entries=[dict(rule="GM103", marks=["@edit"])],
         divergence="grad",
         description="The mask token is created with requires_grad=False: it stays at zero (the masked "
                     "input is indistinguishable from a zero feature vector)."),
    dict(id="c11", slug="zero_grad_on_epoch_started", kind="bug", file="gmevents/trainer.py",
         find="    @trainer.on(Events.ITERATION_STARTED)\n    def _zero_grad(engine):\n",
         replace="    @trainer.on(Events.EPOCH_STARTED)\n    def _zero_grad(engine):\n",
         entries=[dict(rule="GM104", marks=["@edit"])],
         divergence="grad",
         description="The zero_grad handler is registered on EPOCH_STARTED: gradients accumulate over the 17 "
                     "iterations of every epoch, each step uses the sum of all gradients of the epoch so far."),
    dict(id="c12", slug="zero_grad_on_backward_completed", kind="bug", file="gmevents/trainer.py",
         find="    @trainer.on(Events.ITERATION_STARTED)\n    def _zero_grad(engine):\n",
         replace="    @trainer.on(Events.BACKWARD_COMPLETED)\n    def _zero_grad(engine):\n",
         entries=[dict(rule="GM104", marks=["@edit"])],
         divergence="grad",
         description="The zero_grad handler is registered on BACKWARD_COMPLETED, which process_fn fires "
                     "between loss.backward() and optimizer.step(): every step sees no gradient and the "
                     "model never changes."),
    dict(id="c13", slug="trainer_given_second_model_instance", kind="bug", file="gmevents/main.py",
         find="    trainer = create_trainer(model, optimizer, loss_fn, cfg)\n",
         replace="    trainer = create_trainer(MODELS.build(cfg.model, in_dim=info[\"in_dim\"]), optimizer, loss_fn, cfg)\n",
         entries=[dict(rule="GM105", marks=["@edit"])],
         divergence="update",
         description="The trainer factory is handed a freshly built model instead of `model`: the optimizer "
                     "holds the parameters of `model` (which the evaluator and the checkpoint handler use), "
                     "the trained instance has no optimizer; nothing is ever updated and the checkpoint holds "
                     "the initial weights."),
    dict(id="c14", slug="process_fn_output_keeps_loss_tensor", kind="bug", file="gmevents/trainer.py",
         find="        return {\"loss\": loss.item(), ",
         replace="        return {\"loss\": loss, ",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="process_fn returns the loss tensor in engine.state.output; the loss-EMA handler "
                     "accumulates it (ema = 0.9 * ema + 0.1 * loss), so every iteration's autograd graph "
                     "stays alive for the whole run."),
    dict(id="c15", slug="epoch_loss_accumulates_tensor", kind="bug", file="gmevents/trainer.py",
         find="engine.state.metrics.get(\"epoch_loss\", 0.0) + loss.item()",
         replace="engine.state.metrics.get(\"epoch_loss\", 0.0) + loss",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="The per-epoch loss sum in engine.state.metrics adds the loss tensor instead of "
                     "loss.item(): the graphs of all iterations of an epoch are kept alive until the next "
                     "EPOCH_STARTED reset (and the last epoch's after training)."),
    dict(id="c16", slug="precision_override_at_top_level", kind="bug", file="configs/exp/pretrain.yaml",
         find="  precision: fp32\n",
         replace="precision: fp32\n",
         entries=[dict(rule="GM301", marks=["@edit"])],
         divergence="forward",
         description="The experiment file's `precision: fp32` override lost its indentation and lands at the "
                     "top level instead of under `train:`, so base.yaml's `train.precision: bf16` stays in "
                     "force: forward and loss run inside bfloat16 autocast on the CPU run."),
    dict(id="c17", slug="reduction_sum_in_experiment_file", kind="bug", file="configs/exp/pretrain.yaml",
         find="  w_type: 0.5\n",
         replace="  w_type: 0.5\n  reduction: sum\n",
         entries=[dict(rule="GM401", marks=["  reduction: sum"])],
         divergence="loss",
         description="The experiment file sets loss.reduction: sum; MaskedReconLoss then sums SCE and "
                     "cross-entropy over the masked nodes without dividing by their number: the loss scales "
                     "with the batch's node count (~5 x 10^2) and the clip at 1.0 cuts every step."),
    dict(id="c18", slug="type_weight_zero_in_experiment_file", kind="bug", file="configs/exp/pretrain.yaml",
         find="  w_type: 0.5\n",
         replace="  w_type: 0.0\n",
         entries=[dict(rule="GM402", marks=["@edit"])],
         divergence="loss",
         description="The experiment file sets loss.w_type: 0.0 (an ablation value left in): the node-type "
                     "reconstruction term is dropped from the loss, only the attribute SCE trains the model."),
    dict(id="c19", slug="self_loops_added_again_in_collate", kind="bug", file="gmevents/data.py",
         find="        bg = dgl.batch(graphs)\n",
         replace="        bg = dgl.batch([dgl.add_self_loop(g) for g in graphs])\n",
         entries=[dict(rule="GM501", marks=["@edit"])],
         divergence="input",
         description="The collate function adds self loops to the batched graph although the dataset's "
                     "transform (`data.transforms: [add_self_loop]`) already added one per node: every node "
                     "has two self loops, GIN counts its own feature three times."),
    dict(id="c20", slug="probe_per_batch_standardisation", kind="bug", file="gmevents/probe.py",
         find="            xb = (xb - mean) / std\n",
         replace="            xb = (xb - xb.mean(0)) / (xb.std(0) + 1e-6)\n",
         entries=[dict(rule="GM502", marks=["@edit"])],
         divergence=None,
         description="The linear probe standardises each training minibatch of graph embeddings with the "
                     "minibatch's own statistics, while the test embeddings use the training-set statistics."),
    dict(id="c21", slug="collate_per_batch_feature_statistics", kind="bug", file="gmevents/data.py",
         find="        attr = (attr - self.stats.mean) / self.stats.std\n",
         replace="        attr = (attr - attr.mean(0)) / (attr.std(0) + 1e-6)\n",
         entries=[dict(rule="GM502", marks=["@edit"])],
         divergence="input",
         description="The collate function standardises the node attributes with the statistics of the "
                     "batch instead of the training-set FeatureStats: the same graph gets different features "
                     "in different batches, and held-out batches are normalised with their own statistics."),
    dict(id="c22", slug="train_attribute_jitter", kind="bug", file="gmevents/data.py",
         find="        for fn in self.transforms:\n            g = fn(g)\n",
         replace="        for fn in self.transforms:\n            g = fn(g)\n"
                 "        if self.name == \"train\":\n"
                 "            g.ndata[\"attr\"] = g.ndata[\"attr\"] * (1.0 + 0.05 * torch.randn(g.num_nodes(), 1))\n",
         entries=[dict(rule="GM503", marks=["            g.ndata[\"attr\"] = g.ndata[\"attr\"] * (1.0"])],
         divergence="input",
         description="The training GraphSet jitters the raw node attributes by a random per-node factor "
                     "(an augmentation absent from the reference loop): inputs and reconstruction targets are "
                     "both perturbed, and because the raw attributes carry large offsets the jitter is large "
                     "after standardisation."),
    dict(id="c23", slug="encoder_loaded_non_strict_from_full_state", kind="bug", file="gmevents/main.py",
         find="    model.load_state_dict(state[\"model\"])\n",
         replace="    model.encoder.load_state_dict(state[\"model\"], strict=False)\n",
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence=None,
         description="The evaluation stage loads the checkpoint's full-model state dict into model.encoder "
                     "with strict=False: no key matches ('encoder.' prefix), nothing is loaded, held-out "
                     "reconstruction and the probe run on a randomly initialised model."),
    dict(id="c24", slug="torch_load_without_weights_only", kind="bug", file="gmevents/checkpoint.py",
         find="    return torch.load(path, map_location=\"cpu\", weights_only=True)\n",
         replace="    return torch.load(path, map_location=\"cpu\")\n",
         entries=[dict(rule="GM602", marks=["@edit"])],
         divergence=None,
         description="load_checkpoint calls torch.load without weights_only=True: the checkpoint is "
                     "unpickled with arbitrary-code execution allowed."),
    dict(id="c25", slug="split_shuffled_with_unseeded_local_rng", kind="bug", file="gmevents/data.py",
         find="    random.shuffle(order)\n",
         replace="    random.Random().shuffle(order)\n",
         entries=[dict(rule="GM603", marks=["@edit"])],
         divergence="input",
         description="The train/test split shuffles with a fresh random.Random() instance (no seed) instead "
                     "of the seeded global `random`: the split, and every metric, changes from run to run."),
    dict(id="c26", slug="cudnn_benchmark_on", kind="bug", file="gmevents/seeding.py",
         find="    torch.backends.cudnn.benchmark = False\n",
         replace="    torch.backends.cudnn.benchmark = True\n",
         entries=[dict(rule="GM604", marks=["@edit"])],
         divergence=None,
         description="seed_everything turns cudnn.benchmark on (autotuned, nondeterministic kernel choice on "
                     "GPU) in a run that must reproduce."),
    # ------------------------------------------------------------------ benign look-alikes
    dict(id="c27", slug="train_mode_restored_before_next_iteration", kind="benign", file="gmevents/handlers.py",
         find="    evaluator.add_event_handler(Events.COMPLETED, _set_mode, model, True)",
         replace="    trainer.add_event_handler(Events.ITERATION_STARTED, _set_mode, model, True)",
         entries=[dict(rule="GM201", marks=["@edit"])],
         divergence=None,
         description="The evaluator still switches the shared model to eval mode, and train mode is "
                     "restored by a trainer ITERATION_STARTED handler, which fires before every training "
                     "iteration: no training forward runs in eval mode."),
    dict(id="c28", slug="zero_grad_on_iteration_completed", kind="benign", file="gmevents/trainer.py",
         find="    @trainer.on(Events.ITERATION_STARTED)\n    def _zero_grad(engine):\n",
         replace="    @trainer.on(Events.ITERATION_COMPLETED)\n    def _zero_grad(engine):\n",
         entries=[dict(rule="GM104", marks=["@edit"])],
         divergence=None,
         description="zero_grad runs on ITERATION_COMPLETED (after optimizer.step) instead of "
                     "ITERATION_STARTED; gradients start as None in the first iteration, so every step still "
                     "sees exactly one iteration's gradient."),
    dict(id="c29", slug="output_loss_detached", kind="benign", file="gmevents/trainer.py",
         find="        return {\"loss\": loss.item(), ",
         replace="        return {\"loss\": loss.detach(), ",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="process_fn returns the detached loss tensor in engine.state.output; the EMA handler "
                     "accumulates tensors without a graph."),
    dict(id="c30", slug="sce_detaches_target", kind="benign", file="gmevents/losses.py",
         find="    y = F.normalize(y, p=2, dim=-1)\n",
         replace="    y = F.normalize(y.detach(), p=2, dim=-1)\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence=None,
         description="sce_loss detaches its target (the input features, which carry no graph anyway)."),
    dict(id="c31", slug="sample_mask_no_grad_decorator", kind="benign", file="gmevents/trainer.py",
         find="def sample_mask(num_nodes, rate, generator=None):\n",
         replace="@torch.no_grad()\ndef sample_mask(num_nodes, rate, generator=None):\n",
         entries=[dict(rule="GM102", marks=["@torch.no_grad()"])],
         divergence=None,
         description="sample_mask (a randperm of node indices) is decorated with @torch.no_grad(); it "
                     "computes no differentiable value."),
    dict(id="c32", slug="reloaded_model_frozen_for_probing", kind="benign", file="gmevents/main.py",
         find="    model.load_state_dict(state[\"model\"])\n    model.eval()\n",
         replace="    model.load_state_dict(state[\"model\"])\n    model.eval()\n    model.requires_grad_(False)\n",
         entries=[dict(rule="GM103", marks=["    model.requires_grad_(False)"])],
         divergence=None,
         description="The evaluation stage freezes the reloaded model (requires_grad_(False)) before "
                     "embedding graphs for the probe; pretraining is over, nothing of it is trained."),
    dict(id="c33", slug="model_to_after_optimizer", kind="benign", file="gmevents/main.py",
         find="    optimizer = build_optimizer(model, cfg.optim)\n",
         replace="    optimizer = build_optimizer(model, cfg.optim)\n    model = model.to(torch.device(\"cpu\"))\n",
         entries=[dict(rule="GM105", marks=["    model = model.to(torch.device(\"cpu\"))"])],
         divergence=None,
         description="The model is moved with model.to(cpu) after the optimizer is built; Module.to works "
                     "in place and returns the same instance, the optimizer holds the trained parameters."),
    dict(id="c34", slug="sum_reduction_divided_by_count", kind="benign", file="gmevents/losses.py",
         find="        l_attr = sce_loss(recon[:, :a], target[:, :a], self.alpha, self.reduction)\n",
         replace="        l_attr = sce_loss(recon[:, :a], target[:, :a], self.alpha, \"sum\") / recon.shape[0]\n",
         entries=[dict(rule="GM401", marks=["@edit"])],
         divergence=None,
         description="The attribute SCE term is computed with reduction 'sum' and divided by the number of "
                     "masked nodes: the same mean."),
    dict(id="c35", slug="self_loop_transform_removes_first", kind="benign", file="gmevents/data.py",
         find="    return dgl.add_self_loop(g)\n",
         replace="    return dgl.add_self_loop(dgl.remove_self_loop(g))\n",
         entries=[dict(rule="GM501", marks=["@edit"])],
         divergence=None,
         description="The add_self_loop transform removes existing self loops first; the generated graphs "
                     "have none, so every node still has exactly one."),
    dict(id="c36", slug="non_strict_load_full_match", kind="benign", file="gmevents/main.py",
         find="    model.load_state_dict(state[\"model\"])\n",
         replace="    model.load_state_dict(state[\"model\"], strict=False)\n",
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence=None,
         description="The evaluation stage loads the checkpoint with strict=False into the same architecture: "
                     "every key matches, nothing missing or unexpected."),
    dict(id="c37", slug="deterministic_algorithms_on", kind="benign", file="gmevents/seeding.py",
         find="    torch.backends.cudnn.benchmark = False\n",
         replace="    torch.backends.cudnn.benchmark = False\n    torch.use_deterministic_algorithms(True)\n",
         entries=[dict(rule="GM604", marks=["    torch.use_deterministic_algorithms(True)"])],
         divergence=None,
         description="seed_everything additionally enables deterministic algorithms (a reproducibility "
                     "setting, not a nondeterminism flag)."),
    dict(id="c38", slug="type_weight_zero_in_base_overridden", kind="benign", file="configs/base.yaml",
         find="  w_type: 0.5\n",
         replace="  w_type: 0.0\n",
         entries=[dict(rule="GM402", marks=["@edit"])],
         divergence=None,
         description="base.yaml sets loss.w_type: 0.0, but the pretraining experiment file overrides it "
                     "with 0.5: the merged configuration and the loss are unchanged."),
]
