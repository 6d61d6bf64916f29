"""The RL algorithm: GRPO's maths and config (grpo.py), our training loop (loop.py), TRL's (trl_trainer.py)."""
