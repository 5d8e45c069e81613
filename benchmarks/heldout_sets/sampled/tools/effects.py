"""Measured effects (from logs/*.json; base: recon_cos 0.3396, recon_mse 1.108,
probe_acc 0.921, final_loss 0.648, best_epoch 28, 360 steps)."""

LINES = {
    "c04": [68, 50],            # misplaced zero_grad in fit; training_step has none before backward
    "c09": [48, 49, 50],        # autocast block around forward + loss
    "c16": [8, 9, 10, 11, 12, 13],  # seed_all: dgl.seed missing
}

EFFECTS = {
 "c01": "13/17 optimizer params (mask token + whole encoder) have grad None at every step; early stop after 228 steps; recon_cos 0.310 vs 0.340, probe_acc 0.832 vs 0.921",
 "c02": "encoder output has no grad_fn in 228/228 training steps; 13/17 optimizer params grad None at every step; recon_cos 0.310 vs 0.340, probe_acc 0.832 vs 0.921",
 "c03": "after the first probe (epoch 4) the 12 encoder params are requires_grad=False: grad None in 300 of 360 optimizer steps; recon_cos 0.325 vs 0.340, recon_mse 1.327 vs 1.108, probe_acc 0.914 vs 0.921",
 "c04": "gradients accumulate over each epoch: mean grad norm 0.50 vs 0.32 (max 3.22 vs 1.18); recon_mse 10.5 vs 1.11 (prediction scale drifts; SCE is scale-free), recon_cos 0.335 vs 0.340",
 "c05": "optimizer params are not those of the forwarded model in 108/108 steps, all 17 grads None at step: model never updated, early stop after 9 epochs; recon_cos -0.020 vs 0.340, final_loss 1.088 vs 0.648, probe_acc 0.832 vs 0.921",
 "c06": "after fit a live loss tensor (trainer.last_train_loss) still holds the autograd graph of the whole last epoch: 606 grad_fn nodes (base 0); every epoch's graphs retained until epoch end; metrics identical",
 "c07": "348 of 360 training forwards run with model.training False (every step after epoch 0); BatchNorm running stats updated only during epoch 0; recon_cos 0.334 vs 0.340, recon_mse 1.056 vs 1.108",
 "c08": "BatchNorm running_mean stays 0 and num_batches_tracked 0 (base 348): eval-mode forwards use init statistics; recon_cos 0.311 vs 0.340, early stop after 264 steps",
 "c09": "decoder output is bfloat16 in every training step (base float32; F.normalize upcasts the SCE itself to float32); small trajectory change: final_loss 0.6488 vs 0.6483, recon_cos 0.3394 vs 0.3396, probe_acc 0.9212 vs 0.9208",
 "c10": "final_loss 82.0 vs 0.648 (x ~126 masked seeds per batch); grad norm at the clip value 5.0 every step (base mean 0.32); recon_mse 1.457 vs 1.108, recon_cos 0.342 vs 0.340",
 "c11": "extra identity term on visible seeds: mean grad norm 0.46 vs 0.32, final_loss 0.668 vs 0.648 (two terms); recon_cos 0.334 vs 0.340, recon_mse 0.899 vs 1.108, probe_acc 0.911 vs 0.921",
 "c12": "max self loops per destination node in the sampled training blocks 2 (base 1); recon_mse 1.024 vs 1.108, probe_acc 0.925 vs 0.921",
 "c13": "inputs standardised per batch; small because the 3-hop input set of a batch covers most of the graph: recon_cos 0.33940 vs 0.33956, recon_mse 1.1070 vs 1.1078, final_loss 0.64844 vs 0.64828, probe_acc 0.9212 vs 0.9208",
 "c14": "stage-2 load_state_dict reports 16 missing and 23 unexpected keys: probe runs on a random encoder, probe_acc 0.840 vs 0.921 (stage-1 metrics identical)",
 "c15": "torch.load called with weights_only unset in the checkpoint restore (base True); metrics identical",
 "c16": "two runs with seed 0 differ: recon_mse 1.056 vs 1.116, final_loss 0.631 vs 0.624, probe_acc 0.928 vs 0.924 (base: the two runs are bit-identical; the numbers change from run to run)",
 "c17": "torch.backends.cudnn.benchmark True at runtime (base False); CPU metrics identical",
 "c20": "none: metrics identical to base",
 "c21": "none: metrics identical to base",
 "c22": "none: metrics identical to base",
 "c23": "none: metrics identical to base, 0 eval-mode training forwards",
 "c24": "none: 1 self loop per destination node, metrics identical",
 "c25": "none: metrics identical to base",
 "c26": "none: 0 missing / 0 unexpected keys, metrics identical",
 "c27": "none: no autograd graph alive after fit, metrics identical",
}
