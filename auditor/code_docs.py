"""Documentation of the codes that have no rule file: the engine's own (GM000, GM001) and the
probe's checks on the run itself (GM701-GM704, listed in ``auditor.registry.RUNTIME_CHECKS``).
``gm-audit explain`` shows them like a rule's doc."""

from __future__ import annotations

ENGINE_CODES = {
    "GM000": ("syntax-error", "error", "a file gm-audit could not parse"),
    "GM001": ("unused-suppression", "warning",
              "a suppression comment that suppresses nothing (with --report-unused-ignores)"),
}

DOCS = {
    "GM000": """
## What it does
Reports a Python file that libcst cannot parse (a syntax error, an encoding it cannot read), at
the position of the error. gm-audit reports it instead of crashing and checks the other files.

## Why is this bad?
Nothing else in that file was checked: a detach, an `eval()` or a `strict=False` load there goes
unseen, and the cross-file stage does not know the file's functions, so calls into it are not
followed either. The training program itself would fail at import.

## Example
```python
def train(model:
    pass
```

## Use instead
```python
def train(model):
    pass
```

## Fix safety
No automatic fix. `--select`/`--ignore` do not hide GM000: a file that cannot be read is never a
clean one.
""",
    "GM001": """
## What it does
With `gm-audit check --report-unused-ignores`, reports a suppression comment that suppresses
nothing: `# gm-audit: ignore[GM101]` (or `# noqa: GM101`) on a line with no GM101 finding, or a
file-level `# gm-audit: ignore-file[GM603]` in a file with no GM603 finding.

## Why is this bad?
A stale suppression hides the next real finding on that line: the code changed, the comment
stayed, and a new detach or `eval()` there would be silenced without anyone deciding it.

## Example
```python
state = torch.load("w.pt", weights_only=True)  # gm-audit: ignore[GM602]
```

## Use instead
```python
state = torch.load("w.pt", weights_only=True)
```

## Fix safety
No automatic fix yet: remove the comment, or the codes it lists that no longer apply.
""",
    "GM701": """
## What it does
A check of the probe (`gm-audit probe`) on the run itself: the backpropagated loss or some
parameter's gradient was NaN or infinite at a training step. The finding is placed at the
backward and names the first module whose output went non-finite in that step's forward.

## Why is this bad?
One non-finite gradient reaches every parameter through the optimizer step; from then on the
model's outputs are NaN and the reconstruction is gone, even if the logged loss is hidden by a
`nan_to_num` or by averaging over steps.

## Example
```python
loss = F.mse_loss(pred.half(), target.half())   # overflows in float16
loss.backward()
```

## Use instead
```python
loss = F.mse_loss(pred.float(), target.float())
loss.backward()
```

## Fix safety
No static fix: find where the values overflow (learning rate, low precision, a division by a
batch statistic that can be zero).
""",
    "GM702": """
## What it does
A check of the probe on the run itself: at the last recorded step, the prediction passed to a
loss function has a spread across nodes (std over the first dimension, averaged over features)
below 1/1000 of the target's: the model predicts the same features for every node.

## Why is this bad?
A collapsed decoder lowers the loss to the variance of the targets and stays there: the loss
curve flattens at a plausible value while every masked node is reconstructed as the mean shape,
which is the "scattered points" symptom seen from the other side.

## Example
```python
rep = self.encoder_to_decoder(enc_rep.detach() * 0)   # the decoder sees no information
recon = self.decoder(g, rep)
```

## Use instead
```python
rep = self.encoder_to_decoder(enc_rep)
recon = self.decoder(g, rep)
```

## Fix safety
No static fix: check the decoder input (masking, a detach, a zeroed representation) and the
loss normalisation.
""",
    "GM703": """
## What it does
A check of the probe on the run itself: the vectors a training step normalises with
`F.normalize` (3-vectors: predicted normals or tangents) have a mean length below 0.1 or above 10
before normalising, at the last recorded step.

## Why is this bad?
A scale-free loss on directions (scaled cosine error, cosine similarity) ignores the length of
the raw prediction, so it drifts while the loss falls; whoever reads the reconstruction without
normalising it (an evaluation, an export, the point cloud plotted) sees normals and tangents of
arbitrary length.

## Example
```python
loss = sce_loss(F.normalize(pred_nrm, dim=-1), target_nrm)
export(pred_nrm)   # raw lengths drift far from 1
```

## Use instead
```python
loss = sce_loss(F.normalize(pred_nrm, dim=-1), target_nrm)
export(F.normalize(pred_nrm, dim=-1))
```

## Fix safety
No static fix: normalise predicted directions wherever the reconstruction is read.
""",
    "GM704": """
## What it does
A check of the probe on the run itself: under a loss function that compares values (MSE, L1,
smooth L1, ...), the prediction's root mean square at the last recorded step is more than ten
times larger or smaller than the target's.

## Why is this bad?
Prediction and target live on different scales: the targets were normalised and the prediction
is read in raw units (or the other way round), so the loss is dominated by the scale gap and the
reconstruction is off by a constant factor even when its shape is right.

## Example
```python
target = (x - stats.mean) / stats.std      # normalised
loss = F.mse_loss(recon * stats.std, target)   # prediction in raw units
```

## Use instead
```python
target = (x - stats.mean) / stats.std
loss = F.mse_loss(recon, target)
```

## Fix safety
No static fix: normalise targets and predictions the same way.
""",
}
