"""Measuring a policy: metrics, pass@k and pass rates (metrics.py), training health and the diagnosis (health.py),
the random-reward control's check (control.py), Lab 06's trace metrics (traces.py), Lab 07's scaling fits
(scaling.py)."""
