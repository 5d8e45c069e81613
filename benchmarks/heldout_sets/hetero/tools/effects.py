"""The measured effect of every case (written after reading tools/results/summary.json), and the README notes."""

_MASKTOK = ("the 3 per-type mask tokens have grad None at every step and are unchanged by training; "
            "final_loss 0.634295->0.634804, heldout_cos 0.1598->0.1565, heldout_mse 2.803->2.713, "
            "probe_acc 0.7083->0.6806")
_NOUPDATE = ("none of the trained model's 66 parameters is in the optimizer (the optimizer holds copies): grad "
             "norm seen by the optimizer 0 at every step, every model parameter unchanged by training; val curve "
             "0.22..0.31 -> 0.02..0.05, best_epoch 75->15, final_loss 0.634->2.595, heldout_cos 0.1598->0.0278, "
             "probe_acc 0.7083->0.5833")
_DDP = ("ranks' parameters differ after training (checksums 2894.47 / 2893.93; base identical 2899.25 / 2899.25): "
        "no gradient all-reduce, rank 0 trains on its own gradients only (its numbers equal the single-process "
        "run's); vs the DDP base final_loss 0.5723->0.6343, heldout_cos 0.1372->0.1598, probe_acc 0.625->0.7083, "
        "best_epoch 60->75")

EFFECTS = {
    "c01": "encoder (input projections, GraphConvs, norms, PReLUs) and the 3 mask tokens have grad None at every "
           "step and never change; only encoder_to_decoder and the decoder train; val curve 0.22..0.31 -> "
           "0.10..0.21, final_loss 0.634->1.075, heldout_cos 0.1598->0.1068, probe_acc 0.7083->0.6944",
    "c02": _MASKTOK,
    "c03": _MASKTOK + " (same state as c02)",
    "c04": "training forwards partly under no_grad; the 6 input-projection parameters and the 3 mask tokens have "
           "grad None at every step and are unchanged; final_loss 0.634->0.668, heldout_cos 0.1598->0.1350, "
           "probe_acc 0.7083->0.6944",
    "c05": "6 input-projection parameters frozen (trainable params 19860->18420, optimizer 66->60 tensors), "
           "unchanged by training; final_loss 0.634->0.666, heldout_cos 0.1598->0.1364, probe_acc 0.7083->0.6944",
    "c06": "mask tokens not trainable (19860->19818 trainable params, 63 tensors in the optimizer), unchanged; "
           "same numbers as c02 (final_loss 0.634295->0.634804, heldout_cos 0.1598->0.1565, probe_acc "
           "0.7083->0.6806)",
    "c07": "every optimizer step sees grad None for all parameters (zero_grad between clipping and step; grad "
           "norm before clipping 4.4 is thrown away); no parameter changes; val curve 0.22..0.31 -> 0.02..0.05, "
           "best_epoch 75->15, final_loss 0.634->2.595, heldout_cos 0.1598->0.0278, probe_acc 0.7083->0.5833",
    "c08": "zero_grad called 2-3 times per optimizer step (base 0-1): the first micro-batch's gradient is dropped "
           "(grad norm before clipping 0.72->0.50); val curve changes, best_epoch 75->60, final_loss 0.634->0.765, "
           "heldout_mse 2.80->3.51, probe_acc 0.7083->0.6806",
    "c09": "zero_grad never called: gradients accumulate over epochs (grad norm before clipping 0.72->1.42, "
           "clipped to 1.0 every step); best_epoch 75->60, final_loss 0.634->0.613, heldout_mse 2.80->11.48, "
           "probe_acc 0.7083->0.7222",
    "c10": _NOUPDATE,
    "c11": _NOUPDATE + " (same numbers as c07 / c10)",
    "c12": "trainer.history holds 80 loss tensors with grad_fn: live autograd nodes after training 0->83; "
           "metrics identical",
    "c13": "runner.loss_log holds 160 loss tensors with grad_fn: live autograd nodes after training 0->162; "
           "metrics identical",
    "c14": "training forwards run with every module in eval mode in 65 of 80 epochs (16-80, after the first "
           "validation); val curve [0.218, 0.263, 0.293, 0.306, 0.310] -> [0.218, 0.184, 0.292, 0.251, 0.277], "
           "best_epoch 75->45, final_loss 0.634->0.623, heldout_mse 2.80->1.88, probe_acc 0.7083->0.6944",
    "c15": "same state as c14: eval mode in 65 of 80 training epochs; best_epoch 75->45, final_loss "
           "0.634->0.623, heldout_mse 2.80->1.88, probe_acc 0.7083->0.6944",
    "c16": "BatchNorm momentum None (cumulative average of all training forwards): running statistics differ "
           "(e.g. encoder.norms.1.subject var 2.053->1.896); training losses identical, evaluation changes: val "
           "curve 0.22..0.31 -> 0.23..0.25, heldout_cos 0.1598->0.1407, heldout_mse 2.80->3.51, probe_acc "
           "0.7083->0.7222",
    "c17": "BatchNorm modules run in eval mode in all 80 training epochs (running stats stay at mean 0 / var 1); "
           "first loss 2.318->2.902, final_loss 0.634->1.025, heldout_cos 0.1598->0.0827, probe_acc 0.7083->0.5417",
    "c18": "training forwards run under CPU autocast and produce bfloat16 outputs; first loss 2.318323->2.314911, "
           "final_loss 0.634295->0.633483, heldout_cos 0.1598->0.1533, probe_acc 0.7083->0.6944",
    "c19": "same as c18 (autocast on in the default run, bf16 outputs): final_loss 0.634295->0.633483, "
           "heldout_cos 0.1598->0.1533, probe_acc 0.7083->0.6944",
    "c20": "the single-process run wraps the model in DistributedDataParallel over a world-size-1 process group "
           "(160 training forwards through DDP); metrics identical",
    "c21": "no training forward goes through the DDP wrapper (base 160); " + _DDP,
    "c22": "all training forwards under no_sync(); " + _DDP,
    "c23": "per-type losses summed over the masked nodes: first loss 2.32->143.5 (paper 109.0, author 59.2, "
           "subject 4.9), grad norm before clipping 0.72->41.8 (clipped to 1.0 every step); best_epoch 75->60, "
           "final_loss 0.634->48.9, heldout_cos 0.1598->0.1384, heldout_mse 2.80->2.05, probe_acc 0.7083->0.6667",
    "c24": "same as c23 (sum over masked nodes): first loss 2.32->143.5, grad norm before clipping 0.72->41.8; "
           "final_loss 0.634->48.9, heldout_cos 0.1598->0.1384, probe_acc 0.7083->0.6667",
    "c25": "author term weighted 0: first loss 2.318->1.825; final_loss 0.634->0.407, heldout_cos 0.1598->0.0759 "
           "(author 0.106->-0.048), heldout_mse 2.80->4.07, best_epoch 75->60, probe_acc 0.7083->0.6806",
    "c26": "only the subject term is in the loss: first loss 2.318->0.815 (= the subject term); the author-only "
           "parameters get grad None, the decoder relations into paper / author never change; final_loss "
           "0.634->0.0046, heldout_cos 0.1598->0.0719, heldout_mse 2.80->4.34",
    "c27": "GraphConv of 'cites' sees 2 self loops per paper (base 1) in training, validation and the final "
           "evaluation; first loss 2.318->2.295, best_epoch 75->45, heldout_cos 0.1598->0.1508",
    "c28": "1.0556 self loops per paper (base 1.0: 20 self-citations, each added in both directions, plus "
           "add_self_loop); first loss 2.318->2.330, heldout_cos 0.1598->0.1566, heldout_mse 2.80->2.92, "
           "probe_acc 0.7083->0.6944",
    "c29": "every probe training minibatch has per-feature mean exactly 0 and std exactly 1 (base: mean |batch "
           "mean| 0.1035, mean |std-1| 0.0948); pretraining identical; probe_acc unchanged (0.7083) on this "
           "problem",
    "c30": "SCE targets are the noisy features (mean row distance to the clean features 0.35; base equal); first "
           "loss 2.318->2.309, final_loss 0.634->0.637, heldout_cos 0.1598->0.1555, probe_acc 0.7083->0.6944",
    "c31": "the kept best state aliases the live parameters; the restore at the end of fit changes 0 of 84 "
           "tensors (base 81): the epoch-80 weights are checkpointed instead of epoch 75's; heldout_cos "
           "0.159816->0.158885, heldout_mse 2.803->2.692",
    "c32": "load_state_dict(strict=False) in load_checkpoint loads 0 keys (78 missing, 3 unexpected): "
           "reconstruction and probe on a fresh model; heldout_cos 0.1598->0.0679, heldout_mse 2.80->0.94, "
           "probe_acc 0.7083->0.625",
    "c33": "load_checkpoint loads 62 of 84 keys (22 missing: mask tokens, encoder_to_decoder, decoder); "
           "heldout_cos 0.1598->0.0465, heldout_mse 2.80->1.35; probe unchanged (encoder only)",
    "c34": "torch.load called without weights_only (None -> pickle loading, default False in torch 2.2); "
           "metrics identical",
    "c35": "train split hash differs from base (1ad484f27c) and between the case's two runs; every metric moves "
           "and differs between the two runs (recorded run: heldout_cos 0.1598->0.2474 / rerun 0.1961, "
           "final_loss 0.634->0.662 / 0.721); base identical across runs. Numbers change at every regeneration",
    "c36": "torch.backends.cudnn.benchmark True at the first optimizer step (base False); no metric effect on CPU",
    "c37": "torch.backends.cudnn.deterministic False at the first optimizer step (base True; the misspelled "
           "attribute is set instead); no metric effect on CPU",
    "c38": "no effect: metrics bit-identical to base",
    "c39": "no effect: metrics bit-identical to base",
    "c40": "no effect: the probe trains only its own head; metrics bit-identical to base",
    "c41": "no effect: one optimizer step per epoch, each sees one epoch's two micro-batch gradients (zero_grad "
           "calls per step 1-2 instead of 0-1); metrics bit-identical to base",
    "c42": "no effect: metrics bit-identical to base",
    "c43": "no effect: the optimizer holds the trained model's 66 parameters; metrics bit-identical to base",
    "c44": "no effect: no live autograd graph after training; metrics bit-identical to base",
    "c45": "no effect: no training forward in eval mode; metrics bit-identical to base",
    "c46": "no effect: metrics bit-identical to base",
    "c47": "no effect: autocast off, all training outputs float32; metrics bit-identical to base",
    "c48": "no effect on rank 0 (which reports): ranks' parameters identical, metrics bit-identical to the DDP base",
    "c49": "no effect: ranks' parameters identical, metrics bit-identical to the DDP base",
    "c50": "no effect: losses and metrics bit-identical to base",
    "c51": "no effect: the weights dict gains subject 1.0 (the default it already had); metrics bit-identical",
    "c52": "no effect: 1 self loop per paper; metrics bit-identical to base",
    "c53": "no effect: probe minibatches standardised with the same training statistics; metrics bit-identical",
    "c54": "no effect: 84 of 84 keys loaded, none missing or unexpected; metrics bit-identical to base",
    "c55": "no effect (deterministic algorithms on, no error on CPU); metrics bit-identical to base",
}

NOTES = [
    "DDP (GM302) is covered: a 2-process gloo run on CPU works in this sandbox (fork start method, `file://` "
    "rendezvous). The DDP cases c21, c22 (bugs) and c48, c49 (benign) carry `run: python src/train.py "
    "runner.world_size=2` in truth.json and are compared with the DDP base; c20 is the single-process run that "
    "wraps DDP anyway (world size 1). In c21 / c22 rank 0's numbers equal the single-process base exactly "
    "(each rank trains alone on seed + rank).",
    "Every benign case is bit-identical to its base in all metrics; every bug changes at least one instrumented "
    "observation describing its mechanism. Some benign cases differ from base in an observation that is not "
    "an effect (c41: zero_grad calls per step; c51: the weights dict; c54: strict flag; c55: deterministic flag).",
    "Cases whose effect is an observation rather than a metric change: c12, c13 (GM106: live autograd graphs "
    "after training), c20 (GM302: DDP in a single-process run), c29 (GM502: probe minibatches standardised with "
    "their own statistics; the probe accuracy happens not to move), c34 (GM602), c36, c37 (GM604: cudnn flags, "
    "CPU run).",
    "Several cases reach the same state by different mistakes and print the same numbers: c02 / c03 / c06 "
    "(mask tokens never trained), c07 / c10 / c11 (no parameter of the trained model updated), c14 / c15 "
    "(train mode lost after the first validation), c18 / c19 (bf16 autocast), c21 / c22 (no gradient sync), "
    "c23 / c24 (sum reduction).",
    "expected_first_divergence is null for the cases that act beside the training update (c12, c13, c20, "
    "c29, c31-c34, c36, c37): the measured effect names what departs.",
    "c35's numbers differ between its two runs by construction (unseeded numpy split); the table shows run 1.",
    "Truth lines: for a deleted line (c09, c14, c28, c35) the truth line is the line next to the gap in the case "
    "file (where the call belongs; c28 also names the `dgl.add_self_loop` line that adds the second loop); for "
    "a moved line (c07) it is the line at its new place. Config-value bugs (c05, c16, c17, c18, c23, c25) are "
    "on the YAML / config.py line that holds the value.",
    "Runtime: one base run takes about 5-6 s (single process) / 7-8 s (DDP, 2 processes) with "
    "OMP_NUM_THREADS=1 on an idle core; the whole set (2 runs of 2 bases and 55 cases) took about 20 min on two "
    "shared cores.",
]
