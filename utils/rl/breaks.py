"""Lab 08's "why isn't it learning?": a healthy TRL run of the toy and the same run with one setting broken,
each the way it breaks in real runs. health.diagnose should name each break from the run's logged numbers.
benchmarks/lab08.py --part diagnose runs them on seeds 0-2; the notebook runs seed 0."""
import copy
from dataclasses import replace

from utils.verifiers.arithmetic import strict_reward


def wrong_column_reward(completions, answer, a=None, **kw):
    """A verifier wired to the wrong dataset column (the first operand, not the answer): a common bug."""
    return strict_reward(completions, a)


def pass_all_reward(completions, answer=None, **kw):
    """A verifier that passes everything (an extraction rule that always finds something, say)."""
    return [1.0] * len(completions)


# name: (config changes, reward function or None for the strict verifier, the diagnosis expected)
BREAKS = {
    "healthy": ({}, None, []),
    "cap of 2 tokens": ({"max_new_tokens": 2}, None, ["truncated"]),
    "learning rate 1e-8": ({"lr": 1e-8}, None, ["not_moving"]),
    "verifier reads the wrong column": ({}, wrong_column_reward, ["no_signal_all_wrong"]),
    "verifier passes everything": ({}, pass_all_reward, ["no_signal_all_right"]),
}


def run_break(name, base, tok, train, cfg, progress=False):
    """Train a copy of `base` through TRL with break `name` applied to cfg. Returns the history."""
    from utils.rl.trl_trainer import train_with_trl

    changes, reward, _ = BREAKS[name]
    history, _ = train_with_trl(copy.deepcopy(base), tok, train, reward or strict_reward, replace(cfg, **changes),
                                progress=progress)
    return history
