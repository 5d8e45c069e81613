"""Measured runtime effect per case (seed 0, tools/probe.py via tools/run_all.py; numbers in results.json).
Base: val_mse 0.599865, val_cos 0.624, mean-predictor baseline_mse 1.030, bit-identical on rerun."""

EFFECTS = {
    "c01": ("mask_token and all 14 encoder parameters have grad None at every optimizer step (15 of 18 "
            "optimizer params); val_mse 0.649 vs 0.600, val_cos 0.595 vs 0.624"),
    "c02": ("all 400 GATConv calls inside training_step run with grad disabled; mask_token and the 14 encoder "
            "parameters have grad None at every step; val_mse 0.649 vs 0.600, val_cos 0.595 vs 0.624"),
    "c03": ("14 encoder parameters have requires_grad False and grad None at every step (AdamW skips them); "
            "val_mse 0.646 vs 0.600, val_cos 0.594 vs 0.624"),
    "c04": ("144 of 200 backward passes start with non-zero gradients left from earlier batches; mean grad norm "
            "at the step 0.94 vs 0.48 (first 10 steps), 0.33 vs 0.21 (last 10); metrics barely move under AdamW "
            "(val_mse 0.597 vs 0.600)"),
    "c05": ("the 18 parameters AdamW updates are not the parameters of the trained module (0 shared); those "
            "never get a gradient, the rebuilt model's gradients are never cleared or applied; val_mse 1.053 vs "
            "0.600, worse than the mean predictor 1.030, val_cos -0.029"),
    "c06": ("200 loss tensors with their autograd graphs are still alive after fit (0 in base); peak RSS 685 MB "
            "vs 618 MB; metrics identical"),
    "c07": ("175 of 200 training steps (350 GATConv calls) run with the module in eval mode, BatchNorm on running "
            "statistics and dropout off; training loss (2nd half) 0.641 vs 0.672; val_mse 0.598 vs 0.600"),
    "c08": ("48 BatchNorm forwards in train mode outside training_step (probe under no_grad) move the running "
            "means by 0.29 in total; val_mse 0.614 vs 0.600, val_cos 0.622 vs 0.624"),
    "c09": ("parameters and loss are bfloat16; on average 47% of the gradient-carrying parameter elements are "
            "left unchanged by AdamW's step (update below bf16 resolution) vs 0.002% in base; val_mse 0.601 vs "
            "0.600"),
    "c10": ("training loss ~2713 vs 0.672 (x~4000 = masked nodes x 16 dims) and rises with the number of masked "
            "nodes in the batch (corr +0.27 vs -0.36); grad norm ~650 vs 0.2; SCE term swamped; val_mse 0.596 "
            "vs 0.600"),
    "c11": ("MSE term weighted 0: training loss 0.075 (SCE only) vs 0.672; val_mse 0.664 vs 0.600 while "
            "val_cos stays 0.619 vs 0.624 (direction learned, scale not)"),
    "c12": ("2.0 self loops per node in every GATConv call inside training_step (1.0 in base); val_mse 0.616 vs "
            "0.600"),
    "c13": ("every training batch has feature mean exactly 0 (mean |batch mean| 3e-7 vs 0.24 in base): the same "
            "graph gets different inputs/targets depending on its batch; baseline_mse 0.997 vs 1.030, val_mse "
            "0.589 (0.591 of baseline vs 0.583 in base)"),
    "c14": ("load_state_dict(strict=False) reports 23 missing and 25 unexpected keys: nothing is loaded; "
            "reported val_mse 1.040 vs 0.600 (untrained model), val_cos -0.029"),
    "c15": ("torch.load in load_best runs with weights_only unset (False in torch 2.2: full unpickling); "
            "metrics identical"),
    "c16": ("two runs with --seed 0 build different graphs (edge hashes differ each run) and give val_mse "
            "0.613 / 0.601, val_cos 0.604 / 0.627 (base: 0.599865 both runs); baseline_mse unchanged since "
            "features come from numpy"),
    "c20": "no effect: metrics identical to base (val_mse 0.599865)",
    "c21": ("no effect: metrics identical to base; no training step runs in eval mode, no BatchNorm update "
            "outside training_step"),
    "c22": "no effect: metrics identical to base",
    "c23": "no effect: 0 missing / 0 unexpected keys, metrics identical to base",
    "c24": ("no effect: metrics identical to base; optimizer still holds the 18 parameters of the trained "
            "module, no training forward with grad off or in eval mode"),
    "c25": ("no effect: 1.0 self loop per node; val_mse 0.600286 vs 0.599865 (edge order changes, float "
            "summation order only)"),
    "c26": "no effect: metrics identical, 0 live tensors with a graph after fit",
    "c27": "no effect: metrics identical, no backward starts with stale gradients",
}
