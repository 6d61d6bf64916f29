"""Rewards that carry no information about the answer, for the random-reward control (Lab 03):
a rate-matched coin flip and a reward for being wrong. Spurious rewards: arXiv 2506.10947.
Same signature as every verifier (signature.py)."""
import numpy as np

from utils import checks
from utils.verifiers.arithmetic import strict_reward
from utils.verifiers.signature import per_completion


def random_reward(p, seed=0):
    """A reward that is 1.0 with probability p, independent of the completion (TRL signature).
    Seeded: the same seed gives the same sequence of rewards."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"random_reward: p must be a probability in [0, 1], got {p!r}")
    seed = checks.number("random_reward", "seed", seed, lo=0, integer=True)
    rng = np.random.default_rng(seed)

    def reward(completions, answer=None, **kwargs):  # one coin per completion, whatever the completions hold
        return (rng.random(len(per_completion(completions))) < p).astype(float).tolist()
    reward.__name__ = f"random_reward(p={p:.3f})"
    return reward


def wrong_answer_reward(completions, answer, **kwargs):
    """Spurious: pays 1.0 for every answer the strict verifier rejects (arXiv 2506.10947's 'incorrect' reward)."""
    return [1.0 - r for r in strict_reward(completions, answer)]
