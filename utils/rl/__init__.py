"""The RL algorithm: GRPO's maths and config (grpo.py), our training loop (loop.py) and how its batches are made
(rollout.py), TRL's (trl_trainer.py), several processes (launch.py), the toy broken on purpose (breaks.py)."""
