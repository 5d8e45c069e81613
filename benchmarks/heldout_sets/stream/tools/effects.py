"""Measured effect of every case (from tools/results/summary.json, seed 0, vs base run 1).
Base: final_loss 0.430574, heldout_cos 0.64543, heldout_mse 0.590233, probe_acc 0.9, probe_nll 0.310672."""

EFFECTS = {
    "c01": "student modules run in eval mode in 300 of 400 training micro-steps (all after the step-50 "
           "evaluation); model.training False at the end of pretraining; val curve 0.6434->0.6393 at step 100, "
           "final_loss 0.4306->0.4067, heldout_mse 0.5902->0.5775, probe_acc 0.900->0.8975",
    "c02": "student encoder in eval mode during the first 100 micro-steps (steps 1-50, until evaluating() "
           "restores train mode); first loss 1.8867->1.8204; heldout_cos 0.6454->0.6472, probe_nll 0.3107->0.3046",
    "c03": "student encoder forward under no_grad in all 400 micro-steps; grad None for the encoder and the mask "
           "token at every optimiser step, 15 parameters never change; heldout_cos 0.6454->0.6383, "
           "final_loss 0.4306->0.4731, probe_nll 0.3107->0.3285",
    "c04": "enc_mask_token has grad None at every step and is unchanged after training; other parameters "
           "train; final_loss 0.430574->0.430679, heldout_cos 0.64543->0.64633",
    "c05": "same loss values at step 1 but different encoder gradients (reconstruction path cut); "
           "heldout_cos 0.6454->0.6395, heldout_mse 0.5902->0.6108, probe_acc 0.900->0.8925",
    "c06": "predictor parameters have grad None at every step and never change; final_loss 0.43->1.20 "
           "(latent term stuck), heldout_cos unchanged within 4e-5, probe_nll 0.3107->0.3001",
    "c07": "encoder parameters missing from the optimiser, grad None, unchanged after training; trainable "
           "params 21059->14529; heldout_cos 0.6454->0.6359, final_loss 0.4306->0.4746, probe_nll 0.3107->0.3290",
    "c08": "teacher is the student encoder (same object): encoder params grad None, EMA a no-op, the 'teacher' "
           "forward runs the student in train mode (dropout, BN stats updated) under no_grad; trainable params "
           "21059->14529; heldout_cos 0.6454->0.6373, heldout_mse 0.5902->0.6697, final_loss 0.4306->0.5115",
    "c09": "zero_grad called 0 times per optimiser step (base 1): gradients accumulate over the whole run, the "
           "clipped grad norm is 1.0 at every step (base mean 0.35); val curve 0.6434->0.6229 at step 50, "
           "heldout_mse 0.5902->0.6475",
    "c10": "zero_grad called 3 times per optimiser step (base 1): the first micro-step's gradient is discarded "
           "before every update; mean clipped grad norm 0.348->0.261; heldout_cos 0.6454->0.6445, "
           "final_loss 0.4306->0.4371",
    "c11": "all 19 trained parameters are missing from the optimiser (which holds 19 parameters of another "
           "instance); grad norm at the step 0; every parameter unchanged; init differs (extra build); "
           "heldout_cos 0.645->0.070, final_loss 0.43->1.97, probe_acc 0.900->0.885",
    "c12": "200 tensors with grad_fn alive at the end of pretraining (base 0); peak RSS 554 MB -> 1978 MB; "
           "metrics identical",
    "c13": "student BatchNorm running_mean/var equal their initial values after training (reset every step); "
           "heldout_cos 0.6454->0.6112, heldout_mse 0.590->0.852, final_loss 0.4306->0.3975",
    "c14": "autocast enabled in every micro-step; student forward outputs in bfloat16 (encoder_to_decoder, "
           "predictor); first loss 1.886743->1.887622; heldout_cos 0.64543->0.64546, final_loss 0.430574->0.430578 "
           "(numbers move, small on this CPU run)",
    "c15": "loss summed over masked nodes: first loss 1.89->1509, final_loss 0.43->327; the clip cuts every "
           "step (clipped norm 1.0 vs mean 0.35) and the latent/recon balance changes; heldout_mse 0.5902->0.5773, "
           "val curve differs",
    "c16": "predictor gradients all-zero at every step (latent term weight 0), 3 predictor tensors never "
           "change; first loss 1.887->0.997, final_loss 0.431->0.271, probe_nll 0.3107->0.3001",
    "c17": "GraphConv sees 2 self loops per node (base 1); first loss 1.88674->1.88958; heldout_cos "
           "0.6454->0.6503, heldout_mse 0.590->0.621, probe_nll 0.311->0.256",
    "c18": "every probe training batch has mean exactly 0 and std exactly 1 per feature (base: mean |batch "
           "mean| 0.096, mean |std-1| 0.089); probe_nll 0.310672->0.308415 (pretraining identical)",
    "c19": "noisy inputs and targets: first loss 1.8867->1.8924, final_loss 0.4306->0.4579, heldout_cos "
           "0.6454->0.6466, probe_nll 0.3107->0.3036",
    "c20": "load_state_dict(strict=False) loads 0 of 16 keys (14 missing, 2 unexpected); probe runs on a random "
           "encoder: probe_acc 0.900->0.885, probe_nll 0.311->0.348",
    "c21": "torch.load called without weights_only (None -> pickle loading); metrics identical",
    "c22": "train/test split differs from base and between two runs of the case: heldout_cos 0.6537 / 0.6285, "
           "probe_acc 0.8625 / 0.9125 (base: identical across runs)",
    "c23": "torch.backends.cudnn.deterministic is False at the first step (base True) and a stray attribute "
           "'determinstic' exists; no metric effect on CPU",
    "c24": "no effect: optimiser holds all student parameters; metrics bit-identical to base",
    "c25": "no effect: no student module in eval mode during training; metrics bit-identical to base",
    "c26": "no effect: losses and metrics bit-identical to base",
    "c27": "no effect: 1 self loop per node; metrics bit-identical to base",
    "c28": "no effect: 16 of 16 keys loaded, none missing or unexpected; metrics bit-identical to base",
    "c29": "no effect: gradients and metrics bit-identical to base",
    "c30": "no effect: metrics bit-identical to base",
    "c31": "no effect (no crash with deterministic algorithms on); metrics bit-identical to base",
    "c32": "no effect: teacher and metrics bit-identical to base",
    "c33": "no effect: no tensor with grad_fn alive after training, RSS as base; metrics bit-identical to base",
}
