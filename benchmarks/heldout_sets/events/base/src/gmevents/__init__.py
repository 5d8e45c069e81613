"""GraphMAE graph-level pretraining in an event-handler style."""
