"""gmx: graph-level GraphMAE pretraining with a mixin-composed trainer."""
