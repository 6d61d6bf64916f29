"""Training health for GRPO (Lab 04): the signals that show a run narrowing or collapsing,
a check over a run's history, and the entropy-reward law of arXiv 2505.22617.

Thresholds (the course's own rules of thumb, fixed before any run was seen and stated
relative to the run itself where the scale depends on the task):
  group reward std < STD_FLOOR      groups whose samples all score alike give zero advantage:
                                    no learning signal left (we use the within-group std, the
                                    quantity GRPO's advantages are built from)
  entropy < ENTROPY_RATIO * start   the policy has spent more than half the mean token entropy it
                                    started with (the mean of the first `window` steps, as the end is
                                    the mean of the last `window`): it writes far fewer distinct
                                    answers than it did. A ratio, not a number of nats, because what
                                    counts as "low" depends on the task (answer length, vocabulary)
                                    and the base model, none of which the run can tune
  KL > KL_CEILING                   the policy has run far from the reference: exploding
  truncated > TRUNCATED_CEILING     more than one completion in ten stopped at max_new_tokens before
                                    EOS: cut-off completions score 0 whatever they wrote, so the run
                                    learns from the cap, not the task (checked when the history
                                    records truncated_frac)
"""
import numpy as np
import torch.nn.functional as F

from utils.rl.grpo import masked_mean

STD_FLOOR = 0.1
ENTROPY_RATIO = 0.5  # flag when the last steps' mean entropy is under half the first steps' mean
KL_CEILING = 10.0
TRUNCATED_CEILING = 0.1
REQUIRED = ("group_reward_std", "entropy", "kl")


def token_entropy(logits, mask):
    """Mean entropy (nats) of the next-token distributions at the positions where mask is 1.
    logits [N, T, V], mask [N, T] -> scalar tensor. H = -sum_v p_v log p_v per position."""
    logp = F.log_softmax(logits.float(), -1)                   # [N, T, V]
    return masked_mean(-(logp.exp() * logp).sum(-1), mask)     # entropy per position [N, T], masked mean


def expected_zero_spread(p, group_size):
    """Chance that a group of `group_size` independent samples, each right with chance p, all
    score the same: p^G + (1 - p)^G. p may be a float or an array of per-prompt rates."""
    if not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    p = np.asarray(p, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ValueError(f"p must lie in [0, 1], got {p}")
    out = p ** group_size + (1 - p) ** group_size
    return float(out) if out.ndim == 0 else out


def health_check(history, entropy_ratio=ENTROPY_RATIO, std_floor=STD_FLOOR, kl_ceiling=KL_CEILING, window=5,
                 truncated_ceiling=TRUNCATED_CEILING):
    """Judge a run from its history (train_grpo's list of per-step dicts), averaging the last
    `window` steps so one noisy batch does not decide. The entropy floor is entropy_ratio times the
    mean entropy of the run's first `window` steps (where the policy started). Returns
    {"ok": bool, "failed": [names of the failed checks: "spread", "entropy", "kl", "truncated"],
     "flags": [one message per failed check], "values": {metric: mean over the window},
     "entropy_floor": the floor in nats}."""
    if not isinstance(history, (list, tuple)) or len(history) == 0:
        raise ValueError("health_check needs a non-empty history: the list of per-step dicts that "
                         "train_grpo returns. Train first, then pass its return value.")
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    last = list(history)[-window:]
    missing = sorted({k for r in last for k in REQUIRED if not isinstance(r, dict) or r.get(k) is None})
    if missing:
        raise ValueError(f"health_check: the history lacks {missing} in its last {len(last)} step(s). "
                         f"It needs {list(REQUIRED)} every step (KL is recorded when GRPOConfig.track_kl "
                         f"is True or beta > 0).")
    if not isinstance(entropy_ratio, (int, float)) or not 0 < entropy_ratio < 1:
        raise ValueError(f"entropy_ratio must be a number in (0, 1), got {entropy_ratio!r}")
    head = [r.get("entropy") if isinstance(r, dict) else None for r in list(history)[:window]]
    if any(e is None for e in head):
        raise ValueError(f"health_check: the history's first {len(head)} step(s) lack 'entropy' "
                         f"(the entropy floor is a share of their mean)")
    first = float(np.mean(head))
    v = {k: float(np.mean([r[k] for r in last])) for k in REQUIRED}
    entropy_floor = entropy_ratio * first
    flags, failed = [], []
    if v["group_reward_std"] < std_floor:
        failed.append("spread")
        flags.append(f"reward spread collapsed: within-group reward std {v['group_reward_std']:.3f} < {std_floor} "
                     f"(most groups score alike, so most advantages are 0 and there is little left to learn from)")
    if v["entropy"] < entropy_floor:
        failed.append("entropy")
        flags.append(f"entropy collapsed: {v['entropy']:.3f} nats per token < {entropy_floor:.3f} = {entropy_ratio} x "
                     f"the first steps' {first:.3f} (the policy writes far fewer distinct answers than it "
                     f"started with; exploration is going)")
    if v["kl"] > kl_ceiling:
        failed.append("kl")
        flags.append(f"KL exploding: {v['kl']:.2f} > {kl_ceiling} "
                     f"(the policy is far from the reference; lower lr or add a KL penalty)")
    cut = [r.get("truncated_frac") for r in last]
    if all(c is not None for c in cut):
        v["truncated_frac"] = float(np.mean(cut))
        if v["truncated_frac"] > truncated_ceiling:
            failed.append("truncated")
            flags.append(f"completions truncated: {v['truncated_frac']:.0%} of them hit max_new_tokens before EOS "
                         f"(> {truncated_ceiling:.0%}); a cut-off completion scores 0 whatever it wrote, so raise "
                         f"max_new_tokens above the longest completion the task needs")
    return {"ok": not flags, "failed": failed, "flags": flags, "values": v, "entropy_floor": entropy_floor}


def fit_entropy_reward(entropy, reward):
    """Least-squares fit of R = -a * exp(H) + b (arXiv 2505.22617) to paired points.
    Linear in (a, b) with x = exp(H), so it is ordinary least squares. Returns (a, b);
    b - a is the reward predicted at zero entropy, the ceiling a fully collapsed policy reaches."""
    h, r = np.asarray(entropy, dtype=float), np.asarray(reward, dtype=float)
    if h.shape != r.shape or h.ndim != 1 or len(h) < 2:
        raise ValueError(f"need two 1-D arrays of the same length >= 2, got shapes {h.shape} and {r.shape}")
    if not (np.isfinite(h).all() and np.isfinite(r).all()):
        raise ValueError("entropy and reward must be finite numbers")
    x = np.exp(h)
    if np.ptp(x) == 0:
        raise ValueError("all entropies are equal: the fit needs points at different entropies")
    slope, intercept = np.polyfit(x, r, 1)   # r = slope * x + intercept
    return float(-slope), float(intercept)
