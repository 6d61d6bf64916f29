"""Rewards that carry no information about the answer, for the random-reward control (Lab 03):
a rate-matched coin flip and a reward for being wrong (spurious rewards: arXiv 2506.10947); and a verifier made
wrong on a share of its verdicts (noisy_reward, Lab 09), or passing a share of the wrong ones (false_pass_reward).
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


def noisy_reward(reward_fn, q, seed=0):
    """reward_fn (a 0/1 verifier in the shared signature) wrong on a share q of the completions: each score is
    flipped (1 - score) with probability q, independently and seeded, like a judge with error rate q (Lab 09's
    worse verifier). q=0 is reward_fn itself; q=0.5 carries no information."""
    checks.function("noisy_reward", "reward_fn", reward_fn)
    q = checks.number("noisy_reward", "q", q, lo=0, hi=1)
    rng = np.random.default_rng(checks.number("noisy_reward", "seed", seed, lo=0, integer=True))

    def reward(completions, *args, **kwargs):
        scores = reward_fn(completions, *args, **kwargs)
        flip = rng.random(len(scores)) < q
        return [1.0 - s if f else s for s, f in zip(scores, flip)]
    reward.__name__ = f"noisy_reward({getattr(reward_fn, '__name__', 'reward')}, q={q:.2f})"
    return reward


def false_pass_reward(reward_fn, p, seed=0):
    """reward_fn (a 0/1 verifier in the shared signature) that also pays each completion it fails with probability
    p, independently and seeded: false passes at random, never a false fail (Lab 09's control for a verifier whose
    errors are all false passes, matched on their rate). p=0 is reward_fn itself; p=1 pays everything."""
    checks.function("false_pass_reward", "reward_fn", reward_fn)
    p = checks.number("false_pass_reward", "p", p, lo=0, hi=1)
    rng = np.random.default_rng(checks.number("false_pass_reward", "seed", seed, lo=0, integer=True))

    def reward(completions, *args, **kwargs):
        scores = reward_fn(completions, *args, **kwargs)
        lucky = rng.random(len(scores)) < p
        return [1.0 if (s == 0 and hit) else s for s, hit in zip(scores, lucky)]
    reward.__name__ = f"false_pass_reward({getattr(reward_fn, '__name__', 'reward')}, p={p:.2f})"
    return reward
