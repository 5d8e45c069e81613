"""GraphMAE, node level, trained on neighbour-sampled blocks."""
