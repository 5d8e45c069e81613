"""The static pass: source files -> per-file facts and findings -> project graph -> findings."""
