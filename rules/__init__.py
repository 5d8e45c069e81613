"""gm-audit's rules, one per module; installed as ``auditor.rules`` (see pyproject.toml)."""
