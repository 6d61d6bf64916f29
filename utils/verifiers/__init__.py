"""Verifiers and rewards, all in TRL's reward-function signature (see signature.py)."""
