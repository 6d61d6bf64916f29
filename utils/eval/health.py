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
import math
import numbers

import numpy as np
import torch.nn.functional as F

from utils import checks
from utils.models.policy import masked_mean

STD_FLOOR = 0.1
ENTROPY_RATIO = 0.5  # flag when the last steps' mean entropy is under half the first steps' mean
KL_CEILING = 10.0
TRUNCATED_CEILING = 0.1
REQUIRED = ("group_reward_std", "entropy", "kl")


def token_entropy(logits, mask):
    """Mean entropy (nats) of the next-token distributions at the positions where mask is 1.
    logits [N, T, V], mask [N, T] -> scalar tensor. H = -sum_v p_v log p_v per position."""
    logits = checks.tensor("token_entropy", "logits", logits, dims=3)
    mask = checks.tensor("token_entropy", "mask", mask, dims=2)
    if mask.shape != logits.shape[:2]:
        raise ValueError(f"token_entropy: mask has shape {tuple(mask.shape)} and logits {tuple(logits.shape)}: mask "
                         f"must be [N, T], one entry per position of logits [N, T, V]")
    logp = F.log_softmax(logits.float(), -1)                   # [N, T, V]
    return masked_mean(-(logp.exp() * logp).sum(-1), mask)     # entropy per position [N, T], masked mean


def expected_zero_spread(p, group_size):
    """Chance that a group of `group_size` independent samples, each right with chance p, all
    score the same: p^G + (1 - p)^G. p may be a float or an array of per-prompt rates."""
    group_size = checks.number("expected_zero_spread", "group_size", group_size, lo=1, hi=10_000, integer=True)
    p = checks.array("expected_zero_spread", "p", p, dims=(0, 1))
    if p.size == 0:
        raise ValueError("expected_zero_spread: p must be a pass rate or a non-empty list of them")
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
    broken = sorted(k for k, x in v.items() if not math.isfinite(x)) + ([] if math.isfinite(first) else ["entropy"])
    if broken:
        failed.append("not_finite")
        flags.append(f"not a number: {sorted(set(broken))} are NaN or inf, so the run diverged (a reward that "
                     f"returned NaN, or a learning rate too high) and nothing else it shows can be trusted")
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
    h = checks.array("fit_entropy_reward", "entropy", entropy, dims=1)
    r = checks.array("fit_entropy_reward", "reward", reward, dims=1)
    if h.shape != r.shape or len(h) < 2:
        raise ValueError(f"fit_entropy_reward: entropy and reward must be paired, of one length >= 2, got shapes "
                         f"{h.shape} and {r.shape}")
    if (h > 700).any():
        raise ValueError("fit_entropy_reward: entropy holds values over 700 nats, whose exp overflows")
    x = np.exp(h)
    if np.ptp(x) == 0:
        raise ValueError("all entropies are equal: the fit needs points at different entropies")
    slope, intercept = np.polyfit(x, r, 1)   # r = slope * x + intercept
    return float(-slope), float(intercept)


# "Why isn't it learning?" (Lab 08): what a run's numbers say, and what to change. Thresholds, like the ones
# above, are rules of thumb fixed before the lab's runs were seen.
ZERO_SPREAD_CEILING = 0.8  # most groups score alike: little signal left
KL_FLOOR = 1e-4            # nats per token: the policy has hardly moved from where it started
DIAGNOSES = {  # name: (what you see, what to change), in the order diagnose() reports them
    "diverged": ("NaN or inf in the run's numbers", "find the first step that went NaN: a reward that returned "
                 "NaN or inf, or a learning rate too high; nothing else in the table can be read until it is fixed"),
    "no_signal_all_wrong": ("most groups all wrong: zero spread, reward near 0",
                            "easier prompts (filter by pass rate, Lab 07), a larger group, a curriculum; "
                            "and check the verifier reads the model's answer format (Lab 02)"),
    "no_signal_all_right": ("most groups all right: zero spread, reward near 1",
                            "harder prompts; and check the verifier does not pass everything (Lab 02)"),
    "truncated": ("many completions stop at the length cap", "raise max_completion_length (or max_new_tokens), "
                  "or mask truncated completions out of the loss (mask_truncated_completions)"),
    "not_moving": ("KL to the reference stays near 0: the policy is not changing",
                   "raise the learning rate; check the optimizer has trainable parameters (LoRA: the adapter)"),
    "kl_exploding": ("KL to the reference above KL_CEILING: the policy has run far from where it started",
                     "lower the learning rate, raise beta (the KL weight) or clip harder (epsilon); read samples: a "
                     "policy racing away is often chasing a reward hack (Lab 02)"),
    "collapsing": ("entropy under half of where it started", "clip-higher, an entropy bonus or a lower learning "
                   "rate (Lab 04); check pass@k, not only pass@1 (Lab 05)"),
}


# where each row's signal is in TRL's logs (trl.GRPOTrainer's log keys; our histories use utils.rl.trl_trainer.
# TRL_KEYS' names for the same numbers): what to look at in a real run's dashboard
TRL_SIGNALS = {
    "diverged": "loss, grad_norm, reward (any NaN or inf)",
    "no_signal_all_wrong": "frac_reward_zero_std, reward",
    "no_signal_all_right": "frac_reward_zero_std, reward",
    "truncated": "completions/clipped_ratio, completions/mean_length",
    "not_moving": "kl (logged when beta > 0)",
    "kl_exploding": "kl, clip_ratio/region_mean",
    "collapsing": "entropy",
}


def summarize(history, window=5):
    """The numbers diagnose() reads, from a history (train_grpo's or train_with_trl's): the means over the last
    `window` steps of reward_mean, zero_spread_frac, truncated_frac and kl (None where the run did not record
    it), and entropy_ratio, the last window's mean entropy over the first window's."""
    if not isinstance(history, (list, tuple)) or not history or not all(isinstance(r, dict) for r in history):
        raise ValueError("summarize: history must be a non-empty list of per-step dicts (train_grpo's or "
                         "train_with_trl's)")
    window = checks.number("summarize", "window", window, lo=1, integer=True)

    def mean(key, rows):
        vals = [r[key] for r in rows if r.get(key) is not None]
        return float(np.mean(vals)) if vals else None
    last, first = history[-window:], history[:window]
    out = {k: mean(k, last) for k in ("reward_mean", "zero_spread_frac", "truncated_frac", "kl")}
    start, end = mean("entropy", first), mean("entropy", last)
    out["entropy_ratio"] = end / start if start and end is not None else None
    return out


def diagnose(summary):
    """The names of DIAGNOSES that a run's summary (summarize()) shows, in DIAGNOSES' order; [] for a healthy
    run. A value that is None (not recorded) decides nothing. Rules:
      zero_spread_frac >= ZERO_SPREAD_CEILING -> no_signal_all_wrong if reward_mean < 0.5, else no_signal_all_right
      truncated_frac > TRUNCATED_CEILING      -> truncated
      kl < KL_FLOOR                           -> not_moving
      kl > KL_CEILING                         -> kl_exploding
      entropy_ratio < ENTROPY_RATIO           -> collapsing
      any value NaN or inf                    -> diverged (first)
    A loss near 0 is not on the list: GRPO's advantages average to 0 in each group, so its loss sits near 0
    in a healthy run too. Watch the reward, not the loss."""
    if not isinstance(summary, dict):
        raise ValueError(f"diagnose: summary must be summarize()'s dict, got {checks._short(summary)}")
    for k in ("reward_mean", "zero_spread_frac", "truncated_frac", "kl", "entropy_ratio"):
        v = summary.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise ValueError(f"diagnose: summary[{k!r}]={checks._short(v)} must be a number or None (not recorded)")
    s = lambda k: summary.get(k)  # noqa: E731
    out = ["diverged"] if any(isinstance(v, float) and not math.isfinite(v) for v in summary.values()) else []
    if s("zero_spread_frac") is not None and s("zero_spread_frac") >= ZERO_SPREAD_CEILING:
        if s("reward_mean") is not None:
            out.append("no_signal_all_wrong" if s("reward_mean") < 0.5 else "no_signal_all_right")
    if s("truncated_frac") is not None and s("truncated_frac") > TRUNCATED_CEILING:
        out.append("truncated")
    if s("kl") is not None and s("kl") < KL_FLOOR:
        out.append("not_moving")
    if s("kl") is not None and s("kl") > KL_CEILING:
        out.append("kl_exploding")
    if s("entropy_ratio") is not None and s("entropy_ratio") < ENTROPY_RATIO:
        out.append("collapsing")
    return out
