"""One-edit specification of every case.  Each case: a file under src/, an exact `find` string that
occurs once in base/src/<file>, its `replace`, and the truth entries.  An entry's `marks` are
substrings that occur exactly once in the CASE's file; their line numbers become the truth lines.
"@edit" stands for the first line the edit changed.  `run` (optional) is the case's command when it
differs from RUN (the DDP cases run two gloo processes)."""

RUN = "python src/train.py"
RUN_DDP = "python src/train.py runner.world_size=2"
TR = "hgmae/trainer.py"
RU = "hgmae/runner.py"
RG = "hgmae/registry.py"
CF = "hgmae/config.py"
YM = "configs/pretrain.yaml"
MD = "hgmae/models/hgmae.py"
LY = "hgmae/models/layers.py"
LS = "hgmae/losses/sce.py"
DA = "hgmae/data.py"
PR = "hgmae/probe.py"
UT = "hgmae/utils.py"


def E(rule, *marks):
    return [dict(rule=rule, marks=list(marks) or ["@edit"])]


_SPECS = [
    # ================================================================== bugs
    dict(slug="enc2dec_input_detached", kind="bug", file=MD, divergence="grad",
         find="        rep = {t: self.encoder_to_decoder[t](h) for t, h in enc.items()}\n",
         replace="        rep = {t: self.encoder_to_decoder[t](h.detach()) for t, h in enc.items()}  # re-mask is in-place\n",
         entries=E("GM101"),
         description="HGMAE.forward detaches the encoder output before encoder_to_decoder (to protect it from the "
                     "in-place re-mask): the encoder, its input projections and the mask tokens get no gradient; "
                     "only encoder_to_decoder and the decoder train."),
    dict(slug="mask_token_data_in_type_loop", kind="bug", file=MD, divergence="grad",
         find="            feat[masks[t]] += self.enc_mask_token[t]\n",
         replace="            feat[masks[t]] += self.enc_mask_token[t].data\n",
         entries=E("GM101"),
         description="encoding_mask_noise adds `self.enc_mask_token[t].data` in its node-type loop: the per-type "
                     "mask tokens are cut from the graph, never receive a gradient and stay at zero."),
    dict(slug="mask_noise_under_no_grad", kind="bug", file=MD, divergence="grad",
         find="    def encoding_mask_noise(self, x, masks):\n",
         replace="    @torch.no_grad()\n    def encoding_mask_noise(self, x, masks):\n",
         entries=E("GM102"),
         description="encoding_mask_noise ('only builds the masked input') is decorated with @torch.no_grad(); it "
                     "is where the learnable per-type mask tokens enter the input, so they never get a gradient."),
    dict(slug="input_projection_under_no_grad", kind="bug", file=LY, divergence="grad",
         find="        h = {t: self.input_proj[t](v) for t, v in x.items()}\n",
         replace="        with torch.no_grad():  # fixed random projection of the raw features (HeCo-style)\n"
                 "            h = {t: self.input_proj[t](v) for t, v in x.items()}\n",
         entries=E("GM102"),
         description="HeteroEncoder.forward runs the per-type input projections under torch.no_grad(): the "
                     "projections are trained by the optimizer in the reference but get no gradient here, and "
                     "neither do the mask tokens in front of them."),
    dict(slug="yaml_freezes_input_proj", kind="bug", file=YM, divergence="grad",
         find="  freeze: []\n",
         replace="  freeze: [encoder.input_proj]\n",
         entries=E("GM103"),
         description="The YAML override file freezes encoder.input_proj (an ablation value left in): "
                     "models.freeze sets requires_grad=False on the per-type input projections, which the "
                     "pipeline is meant to pretrain."),
    dict(slug="mask_token_requires_grad_false", kind="bug", file=MD, divergence="grad",
         find="            {t: nn.Parameter(torch.zeros(1, in_dims[t])) for t in self.ntypes})\n",
         replace="            {t: nn.Parameter(torch.zeros(1, in_dims[t]), requires_grad=False) for t in self.ntypes})\n",
         entries=E("GM103"),
         description="The per-type mask tokens are created with requires_grad=False: they are never trained and "
                     "the masked rows stay all-zero inputs."),
    dict(slug="zero_grad_between_backward_and_step", kind="bug", file=TR, divergence="grad",
         find="                    self.optimizer.step()\n                    self.optimizer.zero_grad()\n",
         replace="                    self.optimizer.zero_grad()\n                    self.optimizer.step()\n",
         entries=E("GM104", "                    self.optimizer.zero_grad()\n                    self.optimizer.step()"),
         description="train_epoch clears the gradients after backward/clipping and before optimizer.step(): every "
                     "step sees no gradient and AdamW only applies weight decay."),
    dict(slug="zero_grad_every_micro_step", kind="bug", file=TR, divergence="grad",
         find="            with self.runner.accumulate(self.model):\n                loss = self.training_step()\n",
         replace="            with self.runner.accumulate(self.model):\n                self.optimizer.zero_grad()\n"
                 "                loss = self.training_step()\n",
         entries=E("GM104"),
         description="train_epoch calls optimizer.zero_grad() at the start of every micro-step inside the "
                     "gradient-accumulation loop: the first micro-batch's gradient is discarded and each step "
                     "uses half a batch scaled by 1/grad_accum_steps."),
    dict(slug="zero_grad_missing", kind="bug", file=TR, divergence="grad",
         find="                    self.optimizer.step()\n                    self.optimizer.zero_grad()\n",
         replace="                    self.optimizer.step()\n",
         entries=E("GM104", "                    self.optimizer.step()"),
         description="train_epoch lost its optimizer.zero_grad(): gradients accumulate over all 80 epochs, each "
                     "AdamW step uses the running sum."),
    dict(slug="runner_prepare_deepcopies_model", kind="bug", file=RU, divergence="update",
         find="        model = model.to(self.device)\n",
         replace="        model = copy.deepcopy(model).to(self.device)  # leave the caller's module untouched\n",
         entries=E("GM105"),
         description="Runner.prepare deep-copies the model before placing it: the optimizer (built over the "
                     "original module's parameters) never sees the parameters of the model that is trained, "
                     "evaluated and checkpointed."),
    dict(slug="instantiate_deepcopies_runtime_kwargs", kind="bug", file=RG, divergence="update",
         find="    params.update(kwargs)\n",
         replace="    params.update(copy.deepcopy(kwargs))  # never alias the caller's objects\n",
         entries=E("GM105"),
         description="The Hydra-like instantiate deep-copies its runtime keyword arguments: the optimizer is "
                     "built over copies of the model's parameters (and the scheduler over a copy of the "
                     "optimizer), so the trained model never changes."),
    dict(slug="epoch_loss_keeps_graph", kind="bug", file=TR, divergence=None,
         find="                epoch_loss += loss.item()\n",
         replace="                epoch_loss += loss\n",
         entries=E("GM106"),
         description="train_epoch accumulates the loss tensor (not .item()) and the epoch loss is appended to "
                     "trainer.history: every epoch's autograd graph stays alive until the end of the run."),
    dict(slug="runner_loss_log_keeps_graph", kind="bug", file=RU, divergence=None,
         find="        self.loss_log.append(loss.detach())\n",
         replace="        self.loss_log.append(loss)\n",
         entries=E("GM106"),
         description="Runner.backward appends the loss tensor itself to runner.loss_log: the autograd graph of "
                     "every micro-step is kept alive for the whole run."),
    dict(slug="train_epoch_without_train_mode", kind="bug", file=TR, divergence="mode",
         find="        self.model.train()\n        if self.cfg[\"trainer\"][\"freeze_bn\"]:\n",
         replace="        if self.cfg[\"trainer\"][\"freeze_bn\"]:\n",
         entries=E("GM201", "        if self.cfg[\"trainer\"][\"freeze_bn\"]:"),
         description="train_epoch lost its model.train() call: the model starts in train mode, but validate() "
                     "(reconstruction_metrics) puts it in eval mode at epoch 15 and nothing switches it back, so "
                     "epochs 16-80 train with dropout off and BatchNorm on its running statistics."),
    dict(slug="train_method_not_called", kind="bug", file=TR, divergence="mode",
         find="        self.model.train()\n        if self.cfg[\"trainer\"][\"freeze_bn\"]:\n",
         replace="        self.model.train\n        if self.cfg[\"trainer\"][\"freeze_bn\"]:\n",
         entries=E("GM201"),
         description="train_epoch writes `self.model.train` without calling it (a no-op expression): after the "
                     "first validation at epoch 15 (which leaves the model in eval mode) every epoch trains with "
                     "dropout off and BatchNorm on its running statistics."),
    dict(slug="yaml_batchnorm_momentum_null", kind="bug", file=YM, divergence="forward",
         find="  dropout: 0.1\n",
         replace="  dropout: 0.1\n  encoder:\n    norm:\n      momentum: null   # exact statistics\n",
         entries=E("GM202", "      momentum: null"),
         description="The YAML file sets the encoder's BatchNorm momentum to null (cumulative average): the "
                     "running statistics average all 160 training forwards, dominated by the untrained encoder, "
                     "and evaluation, checkpoint and probe normalise with them."),
    dict(slug="yaml_freeze_bn_true", kind="bug", file=YM, divergence="mode",
         find="  freeze_bn: false\n",
         replace="  freeze_bn: true\n",
         entries=E("GM202"),
         description="freeze_bn: true in the YAML file: train_epoch puts every BatchNorm in eval mode, so the "
                     "running statistics stay at their initial values (mean 0, var 1) and training normalises "
                     "with them."),
    dict(slug="yaml_bf16_autocast", kind="bug", file=YM, divergence="forward",
         find="  mixed_precision: \"no\"\n",
         replace="  mixed_precision: bf16\n",
         entries=E("GM301"),
         description="The YAML file turns on bf16 mixed precision: the training forward and the SCE loss run under "
                     "CPU bfloat16 autocast (projections, GraphConv products and decoder outputs in bf16)."),
    dict(slug="runner_autocast_enabled_unless_fp32", kind="bug", file=RU, divergence="forward",
         find="enabled=self.mixed_precision == \"bf16\")",
         replace="enabled=self.mixed_precision != \"fp32\")",
         entries=E("GM301"),
         description="Runner.autocast enables bf16 autocast unless mixed_precision == 'fp32', but the config "
                     "spells full precision 'no': the default run trains under bfloat16 autocast."),
    dict(slug="ddp_in_single_process_run", kind="bug", file=RU, divergence=None,
         find="        self.distributed = world_size > 1\n",
         replace="        self.distributed = dist.is_available()\n",
         entries=E("GM302"),
         description="Runner decides it is distributed from dist.is_available() (true on every CPU build): the "
                     "default single-process run initialises a world-size-1 gloo group and wraps the model in "
                     "DistributedDataParallel."),
    dict(slug="ddp_forward_bypasses_wrapper", kind="bug", file=TR, divergence="grad", run=RUN_DDP,
         find="            recon = self.model(self.g, x_in, masks)\n",
         replace="            recon = net(self.g, x_in, masks)\n",
         entries=E("GM302"),
         description="training_step calls the unwrapped module (`net`, used two lines above for sample_masks) "
                     "instead of the DDP wrapper: DDP's reducer is never armed, gradients are not averaged "
                     "across ranks and the two replicas drift apart."),
    dict(slug="ddp_no_sync_on_every_micro_step", kind="bug", file=RU, divergence="grad", run=RUN_DDP,
         find="        if self.distributed and not self.sync_gradients:\n",
         replace="        if self.distributed:\n",
         entries=E("GM302"),
         description="Runner.accumulate enters model.no_sync() on every micro-step, including the last one of "
                     "each accumulation window: gradients are never all-reduced and the ranks train "
                     "independently."),
    dict(slug="config_reduction_sum", kind="bug", file=CF, divergence="loss",
         find="        \"reduction\": \"mean\",\n",
         replace="        \"reduction\": \"sum\",\n",
         entries=E("GM401"),
         description="The loss defaults in config.py use reduction 'sum': each node type's SCE is summed over its "
                     "masked nodes (108 papers, 60 authors, 6 subjects), so the types are weighted by mask size "
                     "and the loss and gradient scale with it."),
    dict(slug="sce_default_branch_sums", kind="bug", file=LS, divergence="loss",
         find="    return loss.mean()\n",
         replace="    return loss.sum()\n",
         entries=E("GM401"),
         description="sce_loss returns loss.sum() in its default ('mean') branch: per-type losses are summed over "
                     "the masked nodes instead of averaged."),
    dict(slug="yaml_author_weight_zero", kind="bug", file=YM, divergence="loss",
         find="    author: 0.5\n",
         replace="    author: 0.0\n",
         entries=E("GM402"),
         description="The YAML file weights the author reconstruction 0.0 (ablation value left in): the author "
                     "term is computed and logged but contributes nothing."),
    dict(slug="loss_accumulation_dedented", kind="bug", file=LS, divergence="loss",
         find="            w = self.weights.get(t, 1.0)\n            total = total + w * l\n",
         replace="            w = self.weights.get(t, 1.0)\n        total = total + w * l\n",
         entries=E("GM402"),
         description="SCELoss adds the weighted term after the node-type loop (dedented): only the last type "
                     "(subject) is in the loss; paper and author terms are computed and dropped."),
    dict(slug="self_loops_added_again_in_trainer", kind="bug", file=TR, divergence="input",
         find="        self.g = dataset.graph\n",
         replace="        self.g = dgl.add_self_loop(dataset.graph, etype=\"cites\")  # GraphConv: no 0-in-degree\n",
         entries=E("GM501"),
         description="The Trainer adds self loops to the 'cites' relation again; build_dataset already did: every "
                     "paper has two self loops and GraphConv counts its own feature twice."),
    dict(slug="self_citations_not_filtered", kind="bug", file=DA, divergence="input",
         find="    keep = c_src != c_dst\n    c_src, c_dst = c_src[keep], c_dst[keep]\n",
         replace="",
         entries=E("GM501", "    return subj, (pa_a, pa_p), (c_src, c_dst)", "graph = dgl.add_self_loop(graph, etype=\"cites\")"),
         description="The citation generator no longer drops self-citations: some papers already carry self loops "
                     "(in both directions) and dgl.add_self_loop adds another one, without remove_self_loop first."),
    dict(slug="probe_minibatch_standardisation", kind="bug", file=PR, divergence=None,
         find="            xb = (emb[idx] - mu) / sd\n",
         replace="            xb = (emb[idx] - emb[idx].mean(0)) / (emb[idx].std(0) + 1e-6)\n",
         entries=E("GM502"),
         description="The linear probe standardises each training minibatch with its own statistics, while the "
                     "test embeddings are standardised with the training-set statistics."),
    dict(slug="augmented_targets", kind="bug", file=TR, divergence="loss",
         find="            loss, parts = self.criterion(recon, self.x, masks)\n",
         replace="            loss, parts = self.criterion(recon, x_in, masks)\n",
         entries=E("GM503"),
         description="training_step passes the noise-augmented features as the reconstruction target: the model "
                     "is trained to reproduce the augmentation noise, inconsistently with evaluation (clean "
                     "targets) and with minimal.py."),
    dict(slug="best_state_by_reference", kind="bug", file=TR, divergence=None,
         find="            state = {k: v.detach().clone() for k, v in net.state_dict().items()}\n",
         replace="            state = net.state_dict()\n",
         entries=E("GM601"),
         description="validate keeps net.state_dict() as the best state by reference: its tensors are the live "
                     "parameters, so restoring the epoch-75 state at the end loads the epoch-80 weights into "
                     "themselves."),
    dict(slug="checkpoint_wrapper_loaded_non_strict", kind="bug", file=TR, divergence=None,
         find="    model.load_state_dict(ckpt[\"model\"], strict=True)\n",
         replace="    model.load_state_dict(ckpt, strict=False)\n",
         entries=E("GM601"),
         description="load_checkpoint passes the whole checkpoint dict (model / optimizer / epoch) with "
                     "strict=False: no key matches, nothing is loaded and held-out reconstruction and the probe "
                     "run on a freshly initialised model."),
    dict(slug="checkpoint_encoder_only_partial_load", kind="bug", file=TR, divergence=None,
         find="    model.load_state_dict(ckpt[\"model\"], strict=True)\n",
         replace="    model.load_state_dict({k: v for k, v in ckpt[\"model\"].items() if k.startswith(\"encoder.\")}, strict=False)\n",
         entries=E("GM601"),
         description="load_checkpoint transfers only the encoder weights (strict=False): the mask tokens, "
                     "encoder_to_decoder and the decoder of the reloaded model stay at their fresh "
                     "initialisation, and held-out reconstruction is measured with them."),
    dict(slug="torch_load_without_weights_only", kind="bug", file=TR, divergence=None,
         find="    ckpt = torch.load(path, map_location=\"cpu\", weights_only=True)\n",
         replace="    ckpt = torch.load(path, map_location=\"cpu\")\n",
         entries=E("GM602"),
         description="load_checkpoint calls torch.load without weights_only=True: the checkpoint is unpickled "
                     "with arbitrary code execution allowed (torch 2.2 default)."),
    dict(slug="numpy_not_seeded", kind="bug", file=UT, divergence="input",
         find="    np.random.seed(seed)\n",
         replace="",
         entries=E("GM603", "    torch.manual_seed(seed)"),
         description="seed_everything no longer seeds numpy's global RNG, which data.split_nodes draws the "
                     "train/val/test permutations from: the splits, and every metric, change from run to run."),
    dict(slug="cudnn_benchmark_on", kind="bug", file=UT, divergence=None,
         find="    torch.backends.cudnn.benchmark = False\n",
         replace="    torch.backends.cudnn.benchmark = True\n",
         entries=E("GM604"),
         description="seed_everything turns cudnn.benchmark on (autotuned, nondeterministic kernel choice on a "
                     "GPU) in a run that must reproduce."),
    dict(slug="cudnn_deterministic_misspelled", kind="bug", file=UT, divergence=None,
         find="    torch.backends.cudnn.deterministic = True\n",
         replace="    torch.backends.cudnn.determinstic = True\n",
         entries=E("GM604"),
         description="seed_everything misspells cudnn.deterministic (`determinstic`): a new attribute is created "
                     "silently and the deterministic flag stays False."),
    # ================================================================== benign look-alikes
    dict(slug="sce_target_detached", kind="benign", file=LS,
         find="    y = F.normalize(y, p=2, dim=-1)\n",
         replace="    y = F.normalize(y.detach(), p=2, dim=-1)\n",
         entries=E("GM101"),
         description="sce_loss detaches the reconstruction target (dataset features, no graph)."),
    dict(slug="augment_under_no_grad", kind="benign", file=TR,
         find="    def augment(self, x):\n",
         replace="    @torch.no_grad()\n    def augment(self, x):\n",
         entries=E("GM102"),
         description="The feature-noise augmentation runs under @torch.no_grad(); it involves no parameter."),
    dict(slug="reloaded_model_frozen_for_probe", kind="benign", file=TR,
         find="        best_epoch = load_checkpoint(path, fresh)\n",
         replace="        best_epoch = load_checkpoint(path, fresh)\n        fresh.requires_grad_(False)  # frozen encoder for the probe\n",
         entries=E("GM103", "        fresh.requires_grad_(False)"),
         description="finish() freezes the reloaded model before computing the probe embeddings; only the probe's "
                     "linear head is trained afterwards."),
    dict(slug="zero_grad_at_epoch_start", kind="benign", file=TR,
         find="        epoch_loss = 0.0\n        for _ in range(self.runner.grad_accum_steps):\n",
         replace="        self.optimizer.zero_grad()\n        epoch_loss = 0.0\n        for _ in range(self.runner.grad_accum_steps):\n",
         entries=E("GM104"),
         description="train_epoch also clears the gradients at the start of every epoch (one optimizer step per "
                     "epoch, so the accumulation window is the epoch)."),
    dict(slug="zero_grad_keeps_zero_tensors", kind="benign", file=TR,
         find="                    self.optimizer.step()\n                    self.optimizer.zero_grad()\n",
         replace="                    self.optimizer.step()\n                    self.optimizer.zero_grad(set_to_none=False)\n",
         entries=E("GM104"),
         description="train_epoch clears the gradients with zero_grad(set_to_none=False) (zero tensors instead of "
                     "None) after the step; every parameter gets a gradient at every step anyway."),
    dict(slug="optimizer_over_all_model_params", kind="benign", file=TR,
         find="params=[p for p in model.parameters() if p.requires_grad])",
         replace="params=model.parameters())",
         entries=E("GM105"),
         description="The optimizer is built over model.parameters() (all trainable anyway) of the module that "
                     "Runner.prepare returns and that is trained."),
    dict(slug="runner_loss_log_item", kind="benign", file=RU,
         find="        self.loss_log.append(loss.detach())\n",
         replace="        self.loss_log.append(loss.item())\n",
         entries=E("GM106"),
         description="Runner.backward logs loss.item() (a Python float) instead of a detached tensor."),
    dict(slug="eval_after_training_loop", kind="benign", file=TR,
         find="                self.validate(epoch)\n        self.runner",
         replace="                self.validate(epoch)\n        self.model.eval()\n        self.runner",
         entries=E("GM201", "        self.model.eval()"),
         description="fit() switches the model to eval mode after the last training epoch, before restoring the "
                     "best state; no training step follows."),
    dict(slug="batchnorm_momentum_explicit_default", kind="benign", file=CF,
         find="            \"norm\": {\"_target_\": \"torch.nn.BatchNorm1d\", \"_partial_\": True},\n",
         replace="            \"norm\": {\"_target_\": \"torch.nn.BatchNorm1d\", \"_partial_\": True, \"momentum\": 0.1},\n",
         entries=E("GM202"),
         description="The encoder norm config spells out BatchNorm momentum 0.1, the default."),
    dict(slug="yaml_precision_fp32", kind="benign", file=YM,
         find="  mixed_precision: \"no\"\n",
         replace="  mixed_precision: fp32\n",
         entries=E("GM301"),
         description="The YAML file spells full precision 'fp32'; Runner.autocast enables bf16 only for 'bf16'."),
    dict(slug="ddp_broadcast_buffers_off", kind="benign", file=RU, run=RUN_DDP,
         find="            model = DistributedDataParallel(model)\n",
         replace="            model = DistributedDataParallel(model, broadcast_buffers=False)\n",
         entries=E("GM302"),
         description="Under DDP (2 gloo ranks) the wrapper does not broadcast buffers; rank 0, which evaluates, "
                     "checkpoints and probes, keeps its own BatchNorm statistics as before (it is the source of "
                     "the broadcast)."),
    dict(slug="ddp_find_unused_parameters", kind="benign", file=RU, run=RUN_DDP,
         find="            model = DistributedDataParallel(model)\n",
         replace="            model = DistributedDataParallel(model, find_unused_parameters=True)\n",
         entries=E("GM302"),
         description="Under DDP (2 gloo ranks) the wrapper searches for unused parameters; every parameter is "
                     "used, gradients are averaged as before."),
    dict(slug="sce_mean_as_sum_over_n", kind="benign", file=LS,
         find="    return loss.mean()\n",
         replace="    return loss.sum() / loss.shape[0]\n",
         entries=E("GM401"),
         description="sce_loss computes the mean as a sum divided by the number of masked nodes."),
    dict(slug="yaml_subject_weight_explicit", kind="benign", file=YM,
         find="    author: 0.5\n",
         replace="    author: 0.5\n    subject: 1.0\n",
         entries=E("GM402", "    subject: 1.0"),
         description="The YAML file spells out the subject loss weight 1.0 (the default of SCELoss.weights.get)."),
    dict(slug="remove_self_loop_before_add", kind="benign", file=DA,
         find="        graph = dgl.add_self_loop(graph, etype=\"cites\")\n",
         replace="        graph = dgl.add_self_loop(dgl.remove_self_loop(graph, etype=\"cites\"), etype=\"cites\")\n",
         entries=E("GM501"),
         description="build_dataset removes self loops from 'cites' before adding one per paper; there are none "
                     "to remove."),
    dict(slug="probe_train_stats_recomputed", kind="benign", file=PR,
         find="            xb = (emb[idx] - mu) / sd\n",
         replace="            xb = (emb[idx] - emb[tr].mean(0)) / (emb[tr].std(0) + 1e-6)\n",
         entries=E("GM502"),
         description="The probe recomputes the standardisation statistics inside the loop, over the whole "
                     "training set (dataset statistics, not the minibatch's)."),
    dict(slug="checkpoint_loaded_non_strict_matching", kind="benign", file=TR,
         find="    model.load_state_dict(ckpt[\"model\"], strict=True)\n",
         replace="    model.load_state_dict(ckpt[\"model\"], strict=False)\n",
         entries=E("GM601"),
         description="load_checkpoint loads the model state with strict=False into the same architecture: every "
                     "key matches."),
    dict(slug="deterministic_algorithms_on", kind="benign", file=UT,
         find="    torch.backends.cudnn.deterministic = True\n",
         replace="    torch.backends.cudnn.deterministic = True\n    torch.use_deterministic_algorithms(True)\n",
         entries=E("GM604", "    torch.use_deterministic_algorithms(True)"),
         description="seed_everything also enables deterministic algorithms (a reproducibility setting)."),
]

CASES = []
for _i, _c in enumerate(_SPECS, 1):
    _c = dict(_c, id=f"c{_i:02d}")
    _c.setdefault("run", RUN)
    CASES.append(_c)
