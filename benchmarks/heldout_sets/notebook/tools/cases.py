"""One-edit specification of every case.  Each case: a file under src/, an exact `find` string that
occurs once in base/src/<file>, its `replace`, and the truth entries.  An entry's `marks` are
substrings that occur exactly once in the CASE's file; their line numbers become the truth lines.
"@edit" stands for the first line the edit changed."""

RUN = "python src/notebook.py"
NB = "notebook.py"
NU = "nbutils.py"

CASES = [
    # ================================================================== bugs
    dict(id="c01", slug="train_mode_set_once_before_loop", kind="bug", file=NB,
         find="best = {\"cos\": -1.0, \"epoch\": -1, \"state\": None}\nfor epoch in range(cfg.epochs):\n    model.train()\n",
         replace="best = {\"cos\": -1.0, \"epoch\": -1, \"state\": None}\nmodel.train()\nfor epoch in range(cfg.epochs):\n",
         entries=[dict(rule="GM201", marks=["model.train()\nfor epoch in range(cfg.epochs):"])],
         divergence="mode",
         description="The pretraining cell calls model.train() once before the epoch loop instead of at the top "
                     "of every epoch; evaluate() (called every 30 epochs) switches the model to eval mode and "
                     "nothing switches it back, so from epoch 31 on the model trains with dropout off and "
                     "BatchNorm on its running statistics."),
    dict(id="c02", slug="finetune_cell_without_train_mode", kind="bug", file=NB,
         find="\nmodel.train()\nfor epoch in range(cfg_ft.epochs):\n",
         replace="\nfor epoch in range(cfg_ft.epochs):\n",
         entries=[dict(rule="GM201", marks=["for epoch in range(cfg_ft.epochs):"])],
         divergence="mode",
         description="The decoder fine-tuning cell lost its model.train() call; the restore cell before it ran "
                     "evaluate(), which leaves the model in eval mode, so the whole second stage trains in eval "
                     "mode (encoder dropout off, BatchNorm frozen on running statistics)."),
    dict(id="c03", slug="batchnorm_momentum_none", kind="bug", file=NU,
         find="    \"batchnorm\": lambda d: nn.BatchNorm1d(d),\n",
         replace="    \"batchnorm\": lambda d: nn.BatchNorm1d(d, momentum=None),  # exact (cumulative) statistics\n",
         entries=[dict(rule="GM202", marks=["@edit"])],
         divergence="forward",
         description="The batchnorm entry of nbutils.NORMS builds BatchNorm1d(momentum=None): the running "
                     "statistics become a cumulative average over all 170 training forwards, dominated by the "
                     "early, untrained encoder; evaluation and the probe use these stale statistics."),
    dict(id="c04", slug="ema_update_skips_buffers", kind="bug", file=NU,
         find="        pe.lerp_(pm, 1.0 - decay)\n    for be, bm in zip(ema.buffers(), model.buffers()):\n        be.copy_(bm)\n",
         replace="        pe.lerp_(pm, 1.0 - decay)\n",
         entries=[dict(rule="GM202", marks=["        pe.lerp_(pm, 1.0 - decay)"])],
         divergence=None,
         description="nbutils.ema_update averages the parameters but no longer copies the buffers: the EMA "
                     "model's BatchNorm running statistics stay frozen at their initial values (mean 0, var 1), "
                     "and the EMA encoder used for the probe normalises with them in eval mode."),
    dict(id="c05", slug="remask_detach_clone", kind="bug", file=NU,
         find="    out = rep.clone()\n",
         replace="    out = rep.detach().clone()  # copy, so the in-place zeroing below does not touch rep\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="nbutils.remask copies the representation with detach().clone(): the decoder input is cut "
                     "from the graph, so the encoder, encoder_to_decoder and the mask token get no gradient; "
                     "only the decoder trains."),
    dict(id="c06", slug="mask_token_added_through_data", kind="bug", file=NB,
         find="    x_in[mask_nodes] += m.mask_token\n",
         replace="    x_in[mask_nodes] += m.mask_token.data\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         divergence="grad",
         description="mask_input adds `m.mask_token.data` to the masked rows: the learnable mask token is cut from "
                     "the graph, gets no gradient and stays at its zero initialisation."),
    dict(id="c07", slug="mask_input_under_no_grad", kind="bug", file=NB,
         find="def mask_input(m, x, mask_nodes):\n",
         replace="@torch.no_grad()\ndef mask_input(m, x, mask_nodes):\n",
         entries=[dict(rule="GM102", marks=["@torch.no_grad()\ndef mask_input"])],
         divergence="grad",
         description="mask_input ('only builds the input') is decorated with @torch.no_grad(); it is the function "
                     "that writes the learnable mask token into the input, so the mask token never receives a "
                     "gradient."),
    dict(id="c08", slug="finetune_no_grad_covers_enc2dec", kind="bug", file=NB,
         find="    with amp_ctx():\n        h = model[\"encoder\"](g, x_in)\n        rep = model[\"enc2dec\"](h)\n",
         replace="    with amp_ctx():\n        with torch.no_grad():  # frozen encoder: no graph needed\n"
                 "            h = model[\"encoder\"](g, x_in)\n            rep = model[\"enc2dec\"](h)\n",
         entries=[dict(rule="GM102", marks=["        with torch.no_grad():  # frozen encoder: no graph needed"])],
         divergence="grad",
         description="In the fine-tuning cell the no_grad block meant for the frozen encoder also covers "
                     "encoder_to_decoder, which stage 2 is supposed to fine-tune: enc2dec gets no gradient and "
                     "only the decoder changes."),
    dict(id="c09", slug="mask_token_requires_grad_false", kind="bug", file=NB,
         find="nn.Parameter(torch.zeros(1, c.in_dim))",
         replace="nn.Parameter(torch.zeros(1, c.in_dim), requires_grad=False)",
         entries=[dict(rule="GM103", marks=["@edit"])],
         divergence="grad",
         description="build_model creates the mask token with requires_grad=False: it is never trained and the "
                     "masked rows stay all-zero inputs."),
    dict(id="c10", slug="finetune_modules_param_drops_enc2dec", kind="bug", file=NB,
         find="finetune_modules = (\"enc2dec\", \"decoder\")\n",
         replace="finetune_modules = (\"decoder\",)\n",
         entries=[dict(rule="GM103", marks=["@edit"])],
         divergence="grad",
         description="The parameters cell sets finetune_modules = (\"decoder\",): the fine-tuning cell sets "
                     "requires_grad from this tuple, so encoder_to_decoder is frozen in stage 2 together with the "
                     "encoder."),
    dict(id="c11", slug="zero_grad_between_backward_and_step", kind="bug", file=NB,
         find="    opt.zero_grad()\n    with torch.no_grad():\n        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n"
              "    x_aug = nbutils.jitter(x, cfg.feat_noise)\n    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)\n"
              "    loss.backward()\n    opt.step()\n",
         replace="    with torch.no_grad():\n        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n"
                 "    x_aug = nbutils.jitter(x, cfg.feat_noise)\n    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)\n"
                 "    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
         entries=[dict(rule="GM104", marks=["    opt.zero_grad()\n    opt.step()"])],
         divergence="grad",
         description="train_step clears the gradients after loss.backward() and before opt.step(): every "
                     "stage-1 step sees no gradient (all None) and AdamW skips every parameter: the model stays at "
                     "its initialisation through pretraining and only the stage-2 head is ever trained."),
    dict(id="c12", slug="finetune_loop_without_zero_grad", kind="bug", file=NB,
         find="for epoch in range(cfg_ft.epochs):\n    opt_ft.zero_grad()\n",
         replace="for epoch in range(cfg_ft.epochs):\n",
         entries=[dict(rule="GM104", marks=["for epoch in range(cfg_ft.epochs):"])],
         divergence="grad",
         description="The fine-tuning loop has no opt_ft.zero_grad(): the gradients of enc2dec and the decoder "
                     "accumulate over the 30 stage-2 iterations (starting from the last stage-1 gradient), "
                     "each Adam step uses the running sum."),
    dict(id="c13", slug="model_rebuilt_after_optimizer", kind="bug", file=NB,
         find="# %%\nif resume:\n",
         replace="# %%\nmodel = build_model(cfg)  # fresh weights unless we resume below\nif resume:\n",
         entries=[dict(rule="GM105", marks=["model = build_model(cfg)  # fresh weights unless we resume below"])],
         divergence="update",
         description="The resume cell rebuilds `model` after the optimizer, the scheduler and the EMA were built "
                     "over the previous instance: the model that is trained, restored and checkpointed has none "
                     "of its parameters in the stage-1 optimizer and never changes in stage 1."),
    dict(id="c14", slug="running_loss_ema_keeps_graph", kind="bug", file=NB,
         find="0.1 * loss.item()",
         replace="0.1 * loss",
         entries=[dict(rule="GM106", marks=["@edit"])],
         divergence=None,
         description="log_step keeps the loss EMA in the global `running` dict as 0.9 * ema + 0.1 * loss (the "
                     "tensor, not loss.item()): every iteration's autograd graph stays chained in the dict for "
                     "the rest of the notebook."),
    dict(id="c15", slug="loss_history_keeps_tensors", kind="bug", file=NB,
         find="    loss_hist.append(loss.item())\n    if (epoch + 1)",
         replace="    loss_hist.append(loss)\n    if (epoch + 1)",
         entries=[dict(rule="GM106", marks=["    loss_hist.append(loss)\n"])],
         divergence=None,
         description="The pretraining loop appends the loss tensor to loss_hist instead of loss.item(): the list "
                     "keeps all 140 stage-1 loss tensors with their grad_fn alive."),
    dict(id="c16", slug="sweep_default_precision_bf16", kind="bug", file=NB,
         find="SWEEP_DEFAULTS = [\"epochs=140\", \"eval_every=30\"]",
         replace="SWEEP_DEFAULTS = [\"epochs=140\", \"eval_every=30\", \"precision=bf16\"]",
         entries=[dict(rule="GM301", marks=["@edit"])],
         divergence="forward",
         description="The override defaults copied from a cluster sweep include precision=bf16: cfg.amp is True "
                     "and the training forward and loss run under CPU bfloat16 autocast (encoder_to_decoder and "
                     "the GraphConv weight products in bf16)."),
    dict(id="c17", slug="param_reduction_sum", kind="bug", file=NB,
         find="reduction = \"mean\"\n",
         replace="reduction = \"sum\"\n",
         entries=[dict(rule="GM401", marks=["@edit"])],
         divergence="loss",
         description="The parameters cell sets reduction = \"sum\": SCE and MSE are summed over the ~600 masked "
                     "nodes (MSE over all their elements) instead of averaged; the loss and its gradient scale "
                     "with the mask size."),
    dict(id="c18", slug="mse_lambda_sums_over_nodes", kind="bug", file=NB,
         find="mse_fn = lambda a, b: F.mse_loss(a, b, reduction=cfg.reduction)  # noqa: E731\n",
         replace="mse_fn = lambda a, b: (a - b).pow(2).mean(-1).sum()  # noqa: E731  per-node squared error\n",
         entries=[dict(rule="GM401", marks=["@edit"])],
         divergence="loss",
         description="The MSE lambda averages over features but sums over the masked nodes: the MSE term is ~600x "
                     "larger than the mean and dominates the SCE term."),
    dict(id="c19", slug="param_w_mse_zero", kind="bug", file=NB,
         find="w_mse = 0.5\n",
         replace="w_mse = 0.0\n",
         entries=[dict(rule="GM402", marks=["@edit"])],
         divergence="loss",
         description="The parameters cell sets w_mse = 0.0 (an ablation value left in): the MSE reconstruction "
                     "term is computed and logged but contributes nothing; only SCE trains the model."),
    dict(id="c20", slug="mse_term_replaced_by_sce", kind="bug", file=NB,
         find="        loss = cfg.w_sce * l_sce + cfg.w_mse * l_mse\n",
         replace="        loss = cfg.w_sce * l_sce + cfg.w_mse * l_sce\n",
         entries=[dict(rule="GM402", marks=["@edit"])],
         divergence="loss",
         description="mae_loss weights l_sce twice (`cfg.w_mse * l_sce`): the MSE term is computed and logged but "
                     "never added to the stage-1 loss."),
    dict(id="c21", slug="knn_includes_self", kind="bug", file=NU,
         find="    d.fill_diagonal_(float(\"inf\"))\n",
         replace="",
         entries=[dict(rule="GM501", marks=["    d = torch.cdist(pos, pos)"])],
         divergence="input",
         description="nbutils.knn_edges no longer excludes the point itself: each point is its own nearest "
                     "neighbour, the kNN graph already contains a self loop per node, and the notebook's "
                     "add_self_loop adds a second one (and each node loses its 8th real neighbour)."),
    dict(id="c22", slug="second_add_self_loop_in_model_cell", kind="bug", file=NB,
         find="model = build_model(cfg)\nprint(model)\n",
         replace="model = build_model(cfg)\nprint(model)\ng = dgl.add_self_loop(g)  # GraphConv: no zero in-degree nodes\n",
         entries=[dict(rule="GM501", marks=["g = dgl.add_self_loop(g)  # GraphConv"])],
         divergence="input",
         description="The model cell adds self loops to g again ('GraphConv needs them'); the data cell already "
                     "did: every node has two self loops and GraphConv weights its own feature twice."),
    dict(id="c23", slug="probe_batch_statistics", kind="bug", file=NB,
         find="        xb = emb_n[bidx]\n",
         replace="        xb = nbutils.standardize(emb[bidx])\n",
         entries=[dict(rule="GM502", marks=["@edit"])],
         divergence=None,
         description="The linear probe standardises every training minibatch of embeddings with the minibatch's "
                     "own statistics, while the test embeddings are standardised with the training-node "
                     "statistics."),
    dict(id="c24", slug="jittered_reconstruction_target", kind="bug", file=NB,
         find="    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)\n",
         replace="    loss, parts = mae_loss(m, g, x_aug, x_aug, mask_nodes)\n",
         entries=[dict(rule="GM503", marks=["@edit"])],
         divergence="loss",
         description="train_step passes the jittered features as the reconstruction target as well as the input: "
                     "the model is trained to reproduce the random noise of the augmentation, inconsistently with "
                     "the stage-2 loss and the evaluation (clean targets)."),
    dict(id="c25", slug="best_state_by_reference", kind="bug", file=NB,
         find="state={k: v.detach().clone() for k, v in model.state_dict().items()})",
         replace="state=model.state_dict())",
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence=None,
         description="The best-checkpoint bookkeeping keeps model.state_dict() by reference: its tensors are the "
                     "live parameters, so restoring the 'best' (epoch 120) state loads the final epoch-140 "
                     "weights into themselves."),
    dict(id="c26", slug="reload_whole_checkpoint_strict_false", kind="bug", file=NB,
         find="model_eval.load_state_dict(state[\"model\"])\n",
         replace="model_eval.load_state_dict(state, strict=False)\n",
         entries=[dict(rule="GM601", marks=["@edit"])],
         divergence=None,
         description="The reload cell passes the whole checkpoint dict ('model', 'ema', 'cfg') to "
                     "model_eval.load_state_dict with strict=False: no key matches, nothing is loaded, held-out "
                     "reconstruction runs on a freshly initialised model."),
    dict(id="c27", slug="torch_load_without_weights_only", kind="bug", file=NB,
         find="state = torch.load(ckpt_path, map_location=\"cpu\", weights_only=True)\n",
         replace="state = torch.load(ckpt_path, map_location=\"cpu\")\n",
         entries=[dict(rule="GM602", marks=["@edit"])],
         divergence=None,
         description="The reload cell calls torch.load without weights_only=True: the checkpoint is unpickled "
                     "with arbitrary code execution allowed (torch 2.2 default)."),
    dict(id="c28", slug="numpy_global_rng_unseeded", kind="bug", file=NB,
         find="random.seed(seed)\nnp.random.seed(seed)\ntorch.manual_seed(seed)\n",
         replace="random.seed(seed)\ntorch.manual_seed(seed)\n",
         entries=[dict(rule="GM603", marks=["random.seed(seed)\n", "torch.manual_seed(seed)\n"])],
         divergence="input",
         description="The seeding cell seeds random, torch and dgl but not numpy's global RNG, which "
                     "nbutils.split_nodes draws the train/val/test permutation from: the split, and every "
                     "metric, changes from run to run."),
    dict(id="c29", slug="cudnn_benchmark_on", kind="bug", file=NB,
         find="torch.backends.cudnn.benchmark = False\n",
         replace="torch.backends.cudnn.benchmark = True\n",
         entries=[dict(rule="GM604", marks=["@edit"])],
         divergence=None,
         description="The seeding cell turns cudnn.benchmark on (autotuned, nondeterministic kernel choice on a "
                     "GPU) in a notebook that must reproduce."),
    # ================================================================== benign look-alikes
    dict(id="c30", slug="eval_after_step_train_at_top", kind="benign", file=NB,
         find="    loss_hist.append(loss.item())\n    if (epoch + 1)",
         replace="    loss_hist.append(loss.item())\n    model.eval()  # done with this epoch's update\n    if (epoch + 1)",
         entries=[dict(rule="GM201", marks=["    model.eval()  # done with this epoch's update"])],
         description="The pretraining loop switches the model to eval mode after each update; model.train() at "
                     "the top of the next epoch restores train mode before the next training forward."),
    dict(id="c31", slug="detach_target", kind="benign", file=NB,
         find="x_tgt = recon[mask_nodes], x_target[mask_nodes]\n",
         replace="x_tgt = recon[mask_nodes], x_target[mask_nodes].detach()\n",
         entries=[dict(rule="GM101", marks=["@edit"])],
         description="mae_loss detaches the reconstruction target (features without a graph anyway)."),
    dict(id="c32", slug="finetune_no_grad_frozen_encoder_only", kind="benign", file=NB,
         find="    with amp_ctx():\n        h = model[\"encoder\"](g, x_in)\n        rep = model[\"enc2dec\"](h)\n",
         replace="    with amp_ctx():\n        with torch.no_grad():  # frozen encoder: no graph needed\n"
                 "            h = model[\"encoder\"](g, x_in)\n        rep = model[\"enc2dec\"](h)\n",
         entries=[dict(rule="GM102", marks=["        with torch.no_grad():  # frozen encoder: no graph needed"])],
         description="The fine-tuning cell runs only the frozen encoder (and frozen mask token) under no_grad; "
                     "enc2dec and the decoder, the stage-2 trainables, stay outside the block."),
    dict(id="c33", slug="jitter_inside_no_grad", kind="benign", file=NB,
         find="        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n    x_aug = nbutils.jitter(x, cfg.feat_noise)\n",
         replace="        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n        x_aug = nbutils.jitter(x, cfg.feat_noise)\n",
         entries=[dict(rule="GM102", marks=["        x_aug = nbutils.jitter(x, cfg.feat_noise)"])],
         description="train_step computes the input jitter inside the no_grad block used for mask sampling; the "
                     "jittered features involve no parameter."),
    dict(id="c34", slug="strict_false_keys_match", kind="benign", file=NB,
         find="ema_eval.load_state_dict(state[\"ema\"])\n",
         replace="ema_eval.load_state_dict(state[\"ema\"], strict=False)\n",
         entries=[dict(rule="GM601", marks=["@edit"])],
         description="The reload cell loads the EMA state with strict=False into the same architecture: every "
                     "key matches, nothing missing or unexpected."),
    dict(id="c35", slug="sce_sum_over_count", kind="benign", file=NU,
         find="    return loss.mean() if reduction == \"mean\" else loss.sum()\n",
         replace="    return loss.sum() / loss.numel() if reduction == \"mean\" else loss.sum()\n",
         entries=[dict(rule="GM401", marks=["@edit"])],
         description="sce_loss computes the mean as a sum divided by the number of masked nodes."),
    dict(id="c36", slug="remove_then_add_self_loop", kind="benign", file=NB,
         find="    g = dgl.add_self_loop(g)\ntrain_idx",
         replace="    g = dgl.add_self_loop(dgl.remove_self_loop(g))\ntrain_idx",
         entries=[dict(rule="GM501", marks=["    g = dgl.add_self_loop(dgl.remove_self_loop(g))"])],
         description="The data cell removes self loops before adding one per node; the kNN graph has none, every "
                     "node still has exactly one."),
    dict(id="c37", slug="model_reassigned_by_to", kind="benign", file=NB,
         find="\nmodel.to(device)\n",
         replace="\nmodel = model.to(device)\n",
         entries=[dict(rule="GM105", marks=["model = model.to(device)"])],
         description="The resume cell reassigns model = model.to(device) after the optimizer was built; Module.to "
                     "works in place and returns the same instance."),
    dict(id="c38", slug="zero_grad_after_step", kind="benign", file=NB,
         find="    opt.zero_grad()\n    with torch.no_grad():\n        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n"
              "    x_aug = nbutils.jitter(x, cfg.feat_noise)\n    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)\n"
              "    loss.backward()\n    opt.step()\n",
         replace="    with torch.no_grad():\n        mask_nodes = nbutils.sample_mask(train_idx, cfg.mask_rate)\n"
                 "    x_aug = nbutils.jitter(x, cfg.feat_noise)\n    loss, parts = mae_loss(m, g, x_aug, x, mask_nodes)\n"
                 "    loss.backward()\n    opt.step()\n    opt.zero_grad()\n",
         entries=[dict(rule="GM104", marks=["    opt.zero_grad()\n    return loss"])],
         description="train_step clears the gradients after opt.step() instead of before the forward; the first "
                     "step starts from no gradient, so every step still sees exactly one iteration's gradient."),
    dict(id="c39", slug="finetune_optimizer_over_all_params", kind="benign", file=NB,
         find="opt_ft = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg_ft.lr)\n",
         replace="opt_ft = torch.optim.Adam(model.parameters(), lr=cfg_ft.lr)\n",
         entries=[dict(rule="GM103", marks=["@edit"])],
         description="The stage-2 optimizer is built over all parameters, frozen ones included; opt_ft.zero_grad() "
                     "sets their stale stage-1 gradients to None and Adam skips parameters without a gradient."),
    dict(id="c40", slug="deterministic_algorithms_on", kind="benign", file=NB,
         find="torch.backends.cudnn.deterministic = True\n",
         replace="torch.backends.cudnn.deterministic = True\ntorch.use_deterministic_algorithms(True)\n",
         entries=[dict(rule="GM604", marks=["torch.use_deterministic_algorithms(True)"])],
         description="The seeding cell additionally enables deterministic algorithms (a reproducibility setting)."),
    dict(id="c41", slug="loss_history_detached_tensors", kind="benign", file=NB,
         find="    loss_hist.append(loss.item())\n    if (epoch + 1)",
         replace="    loss_hist.append(loss.detach())\n    if (epoch + 1)",
         entries=[dict(rule="GM106", marks=["    loss_hist.append(loss.detach())"])],
         description="The pretraining loop keeps detached loss tensors in loss_hist (no graph attached)."),
    dict(id="c42", slug="autocast_disabled_instead_of_nullcontext", kind="benign", file=NB,
         find="amp_ctx = lambda: contextlib.nullcontext() if not cfg.amp else torch.autocast(\"cpu\", dtype=torch.bfloat16)  # noqa: E731\n",
         replace="amp_ctx = lambda: torch.autocast(\"cpu\", dtype=torch.bfloat16, enabled=cfg.amp)  # noqa: E731\n",
         entries=[dict(rule="GM301", marks=["@edit"])],
         description="amp_ctx always enters a CPU bfloat16 autocast context, with enabled=cfg.amp; precision is "
                     "fp32, so the context is disabled and every op runs in float32 as with nullcontext()."),
    dict(id="c43", slug="batchnorm_momentum_explicit_default", kind="benign", file=NU,
         find="    \"batchnorm\": lambda d: nn.BatchNorm1d(d),\n",
         replace="    \"batchnorm\": lambda d: nn.BatchNorm1d(d, momentum=0.1, track_running_stats=True),\n",
         entries=[dict(rule="GM202", marks=["@edit"])],
         description="The batchnorm entry of nbutils.NORMS spells out momentum=0.1 and track_running_stats=True, "
                     "the defaults."),
]
