"""The dynamic probe: run the user's training command under instrumentation and decide every
static finding from what happened (DESIGN section 7). ``command`` is the CLI entry point,
``launch`` starts the command, ``recorder`` runs inside it, ``evidence`` is the API rules read,
``verdicts`` turns evidence into statuses."""
