"""The ecosystem check: gm-audit measured on real DGL pipelines nobody here wrote (issue 11)."""
