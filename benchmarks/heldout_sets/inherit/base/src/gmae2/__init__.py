"""GraphMAE for graph-level self-supervised pretraining."""
