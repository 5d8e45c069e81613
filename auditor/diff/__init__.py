"""``gm-audit diff``: a reference and a candidate run side by side, first divergence."""
