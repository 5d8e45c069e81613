"""Write cases/cNN/truth.json from tools/cases.py, tools/locations.json,
tools/results/*.json and the measured-effect notes below."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from cases import CASES  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = os.path.join(ROOT, "tools", "results")
KEYS = ["final_loss", "first_loss", "recon_cos", "recon_mse", "probe_train_acc",
        "probe_test_acc", "trainable_params"]

EFFECTS = {
    "c01": "grad is None at every optimizer.step for enc_mask_token and all 16 encoder parameter tensors (17 of 20); they are bit-identical to init after training; held-out recon_cos 0.722 -> 0.638, recon_mse 1.54 -> 2.49, final loss 0.169 -> 0.255, probe test acc 0.808 -> 0.792",
    "c02": "enc_mask_token.grad is None at every step and the token is unchanged (all zeros) after training; other parameters train; metrics nearly unchanged (recon_cos 0.7227 vs 0.7223)",
    "c03": "16 encoder parameter tensors have requires_grad=False (trainable params 19232 -> 5152), grad None at every step and unchanged after training; recon_cos 0.722 -> 0.634, final loss 0.169 -> 0.255",
    "c04": "gradients never cleared (accumulate over all 450 steps); held-out recon_mse explodes 1.54 -> 8287, recon_cos 0.722 -> 0.672, BN running_var mean 4.7 -> 57, probe train acc 0.919 -> 0.856",
    "c05": "all 20 parameter tensors have grad None at all 450 optimizer steps (zero_grad sets them to None), nothing is updated; loss stays ~1.09, recon_cos 0.722 -> -0.010",
    "c06": "enc_mask_token, encoder_to_decoder and decoder (4 tensors) are not in the optimizer and stay bit-identical to init; recon_cos 0.722 -> 0.662, final loss 0.169 -> 0.214",
    "c07": "autograd nodes reachable from live tensors at optimizer.step reach 1370 vs 64 in base (a whole epoch of step graphs chained through the running total); peak RSS 537 -> 570 MB; metrics identical",
    "c08": "15 loss tensors with grad_fn alive at step time (vs 1) and 680 reachable autograd nodes (vs 64): one epoch of graphs retained in step_losses; peak RSS +13 MB; metrics identical",
    "c09": "375 of 450 training forwards run with model.training == False (every epoch after the first validation at epoch 5); dropout off and BN uses running stats during training; metrics shift (recon_cos 0.7223 -> 0.7290, recon_mse 1.54 -> 0.80, final loss 0.169 -> 0.155)",
    "c10": "BatchNorm momentum is None at runtime (cumulative average); eval-mode metrics change: recon_cos 0.7223 -> 0.7153, recon_mse 1.54 -> 0.99, probe test acc 0.808 -> 0.842 while training loss is identical",
    "c11": "BatchNorm has track_running_stats=False, so eval/probe embeddings use per-batch statistics; training loss identical, recon_cos 0.7223 -> 0.7157, recon_mse 1.54 -> 1.61, probe test acc 0.808 -> 0.767",
    "c12": "all 450 training predictions are torch.bfloat16 (loss computed from bf16 outputs); peak RSS 537 -> 780 MB; metrics shift slightly (recon_cos 0.7219, probe test 0.833)",
    "c13": "reported loss is ~320x larger (first 162.1 vs 0.50, final 54.1 vs 0.169) and scales with the number of masked nodes per batch; Adam's scale invariance keeps held-out metrics close (recon_cos 0.7236 vs 0.7223)",
    "c14": "batched graphs contain 2.0 self loops per node (base 1.0); BN running_var mean 4.7 -> 6.3; recon_mse 1.54 -> 1.67, probe test acc 0.808 -> 0.850",
    "c15": "per-dimension mean of every training batch is exactly 0 (max |mean| 5.7e-6 vs 0.26 in base): batch-dependent standardisation also applied to held-out batches; recon_mse 1.54 -> 1.65, probe test acc 0.808 -> 0.792",
    "c16": "the training forward runs with grad disabled; the first loss.backward() raises RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn; no optimizer step, no metrics",
    "c17": "load_state_dict(strict=False) loads 0 of 26 weight/stat keys (26 missing, 35 unexpected; only 4 num_batches_tracked defaults); probe runs on a random encoder: probe train acc 0.919 -> 0.881, test 0.808 -> 0.800; pretraining metrics identical",
    "c18": "torch.load called without weights_only (argument not passed; torch 2.2 default is False = full unpickling); metrics identical",
    "c19": "two runs with the same config give different datasets and results (run1 recon_cos 0.702 / probe 0.883, run2 0.763 / 0.867) while base is bit-identical across runs",
}
BENIGN = "no effect measured: metrics bit-identical to base and no runtime observation differs"
BENIGN_EXTRA = {
    "c23": "no effect: load_state_dict(strict=False) loads all 30 keys (0 missing, 0 unexpected); metrics bit-identical to base",
    "c27": "no effect: still 1.0 self loop per node; metrics bit-identical to base",
    "c22": "no effect: probe metrics bit-identical (embeddings are extracted under no_grad anyway)",
}


def metrics(name):
    path = os.path.join(RES, name + ".json")
    r = json.load(open(path))
    m = {k: r["metrics"][k] for k in KEYS if k in r["metrics"]}
    if r["obs"].get("error"):
        m["error"] = r["obs"]["error"]
    return m


def main():
    locs = {l["case"]: l for l in json.load(open(os.path.join(ROOT, "tools", "locations.json")))}
    base = metrics("base_run1")
    for c in CASES:
        cid = c["case"]
        bug = c["kind"] == "bug"
        effect = EFFECTS[cid] if bug else BENIGN_EXTRA.get(cid, BENIGN)
        case_metrics = metrics(cid + "_run1")
        if cid == "c19":
            case_metrics = {"run1": case_metrics, "run2": metrics("c19_run2")}
        truth = {
            "case": cid, "slug": c["slug"], "kind": c["kind"],
            "description": c["description"],
            "entries": [{"rule": c["rule"], "path": locs[cid]["path"], "lines": locs[cid]["lines"],
                         "is_bug": bug, "runtime_effect": effect}],
            "expected_first_divergence": c["div"] if bug else None,
            "metrics": {"base": base, "case": case_metrics},
            "run": "cd src && python -m gmae2.run --config configs/base.yaml",
        }
        with open(os.path.join(ROOT, "cases", cid, "truth.json"), "w") as fh:
            json.dump(truth, fh, indent=2)
        print(cid, c["kind"], c["rule"], locs[cid]["path"], locs[cid]["lines"])


if __name__ == "__main__":
    main()
