"""Measured effect of every case (from tools/results/summary.json, seed 0, vs base run 1).
Base: final_loss 0.948014, heldout_cos 0.521134, heldout_mse 0.782898, heldout_type_acc 0.517691,
probe_acc 0.994444, probe_nll 0.025014, 340 iterations, val_cos_curve [0.4955, 0.5154, 0.5193, 0.5216]."""

EFFECTS = {
    "c01": "model modules run in eval mode in 260 of 340 training iterations (all after the iteration-80 "
           "validation); val curve 0.5154->0.5097 at iteration 160, final_loss 0.9480->0.9325, heldout_mse "
           "0.7829->0.7701, probe_nll 0.0250->0.0208",
    "c02": "model modules in eval mode in the first 80 training iterations (until the first validation's "
           "COMPLETED handler); first loss 1.6883->1.6579; val curve 0.5154->0.5065 at iteration 160, "
           "heldout_cos 0.5211->0.5166, heldout_mse 0.7829->0.8230",
    "c03": "stage-two model's BatchNorm buffers differ from the trained ones (reset to 0/1); pretraining "
           "identical; heldout_cos 0.5211->0.3124, heldout_mse 0.7829->0.9009, probe_nll 0.0250->0.0138",
    "c04": "8 BatchNorm forwards in train mode outside training iterations (first held-out batch of each of the "
           "4 validations), evaluator sees the model in train mode; val curve 0.4955->0.4931 at iteration 80, "
           "heldout_mse 0.7829->0.7755, probe_nll 0.0250->0.0135",
    "c05": "enc_mask_token has grad None at every step and is unchanged after training; heldout_cos "
           "0.521134->0.521925, final_loss 0.948014->0.948272",
    "c06": "same first loss (1.68833) but the attribute term gives no gradient: mean clipped grad norm "
           "0.661->0.198; heldout_cos 0.521->0.040 (val curve ~0.02-0.04), final_loss 0.948->1.594",
    "c07": "enc_mask_token has grad None at every step and is unchanged after training; heldout_cos "
           "0.521134->0.521925, final_loss 0.948014->0.948272 (identical to c05)",
    "c08": "encoder, encoder_to_decoder and mask token have grad None at every step, 16 parameters never "
           "change; only the decoder trains; heldout_cos 0.5211->0.4833, final_loss 0.948->1.010",
    "c09": "14 encoder parameters grad None and unchanged, trainable params 22618->9048; heldout_cos "
           "0.5211->0.4910, heldout_mse 0.7829->0.8229, final_loss 0.948->0.995",
    "c10": "enc_mask_token has grad None and is unchanged, trainable params 22618->22606; heldout_cos "
           "0.521134->0.521925 (same as c05)",
    "c11": "zero_grad called 0 times before most optimiser steps (base 1): gradients accumulate within each "
           "epoch, mean clipped grad norm 0.661->0.954; heldout_mse 0.7829->0.8375, probe_acc 0.9944->0.9889",
    "c12": "every optimiser step sees grad None for all 20 parameters (grad norm 0); no parameter ever changes; "
           "heldout_cos 0.521->0.014, heldout_type_acc 0.518->0.172, final_loss 0.948->1.758",
    "c13": "the instance that runs forward in training has none of its 20 parameters in the optimiser (grad "
           "norm 0 at every step), the optimiser's 20 parameters belong to the evaluated / checkpointed model, "
           "which never changes; val curve flat at 0.0229 -> early stopping at 320 iterations; heldout_cos "
           "0.521->0.023",
    "c14": "engine.state.output['loss'] is a tensor with grad_fn; after pretraining 2 live tensors with grad_fn "
           "(base 0) reach 20417 autograd nodes (the EMA chains all 340 iterations' graphs); metrics identical",
    "c15": "after pretraining 1 live tensor with grad_fn (base 0), the epoch-loss sum, reaching 1006 autograd "
           "nodes (the last epoch's iterations); metrics identical",
    "c16": "forward outputs of the trained modules in bfloat16 (autocast on in every iteration); first loss "
           "1.688325->1.688077; heldout_cos 0.521134->0.521378, final_loss 0.948014->0.948136; peak RSS "
           "538->749 MB",
    "c17": "loss summed over masked nodes: first loss 1.69->466, final_loss 0.95->272; the clip at 1.0 cuts every "
           "step (clipped norm 1.0 vs mean 0.66); heldout_cos 0.5211->0.5230, val curve differs",
    "c18": "type term dropped: first loss 1.688->0.984, heldout_type_acc 0.518->0.200, heldout_mse "
           "0.783->0.847, final_loss 0.948->0.368",
    "c19": "GINConv sees 2 self loops per node (base 1); first loss 1.68833->1.69567; heldout_cos "
           "0.5211->0.5247, heldout_mse 0.7829->0.7754, probe_acc 0.9944->0.9889",
    "c20": "every probe training batch has mean exactly 0 and std exactly 1 per feature (base: mean |batch mean| "
           "0.101, mean |std-1| 0.079); pretraining identical; probe_acc 0.9944->0.9889, probe_nll 0.0250->0.0212",
    "c21": "every training batch's attributes have mean exactly 0 and std exactly 1 per dimension (base: 0.077 / "
           "0.041); first loss 1.688->1.706, heldout_cos 0.5211->0.5095, probe_nll 0.0250->0.0397",
    "c22": "training attributes deviate more from the dataset statistics (batch |std-1| 0.041->0.086); first "
           "loss 1.688->1.797, final_loss 0.948->0.988, heldout_cos 0.5211->0.5177",
    "c23": "load_state_dict(strict=False) into the encoder loads 0 keys (20 missing, 29 unexpected); held-out "
           "reconstruction and the probe run on a random model: heldout_cos 0.521->-0.062, probe_acc "
           "0.9944->0.9833",
    "c24": "torch.load called without weights_only (None -> pickle loading, default False in torch 2.2); "
           "metrics identical",
    "c25": "train split differs from base and between two runs of the case (split hash ecda17..-> d356de.. / "
           "bb0a9c..): heldout_mse 0.7735 / 0.8068, probe_nll 0.0089 / 0.0125 (base: identical across runs)",
    "c26": "torch.backends.cudnn.benchmark True at the first step (base False); no metric effect on CPU",
    "c27": "no effect: no module in eval mode during training iterations; metrics bit-identical to base",
    "c28": "no effect: one zero_grad per optimiser step; metrics bit-identical to base",
    "c29": "no effect: output holds a tensor without grad_fn; no live graph after training; metrics "
           "bit-identical to base",
    "c30": "no effect: gradients and metrics bit-identical to base",
    "c31": "no effect: metrics bit-identical to base",
    "c32": "no effect on pretraining; metrics bit-identical to base",
    "c33": "no effect: the optimiser holds the trained parameters; metrics bit-identical to base",
    "c34": "no effect: losses and metrics bit-identical to base",
    "c35": "no effect: 1 self loop per node; metrics bit-identical to base",
    "c36": "no effect: 29 of 29 keys loaded, none missing or unexpected; metrics bit-identical to base",
    "c37": "no effect (deterministic algorithms on, no error on CPU); metrics bit-identical to base",
    "c38": "no effect: merged config unchanged; metrics bit-identical to base",
}
