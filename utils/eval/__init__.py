"""Measuring a policy: metrics and pass@k, training health, the random-reward control."""
