"""Lab 10: how far a learner is from the sampler that wrote its batch, and what an overlapped pipeline buys.

    sampler_log_ratios(policy, sampler, tok, prompts)   log pi_policy - log pi_sampler on the sampler's completions
    drift_probe(tok, prompts, cfg, at=50, lags=8)       a callback: the same, k = 0..lags steps into a run
    drift_of(history)                                   what the probe measured
    drift_summary(drift, eps_low, eps_high, is_max)     per k: mean |log ratio|, KL, share outside the clip, capped
    step_seconds(sample_s, update_s, lag)               one step's time in a sequential or an overlapped pipeline

The log-ratio is the importance ratio's logarithm: the loss divides by the sampler's probability of each token,
so every token a stale or low-precision sampler wrote enters with ratio exp(log pi_policy - log pi_sampler).
"""
import math

import torch

from utils import checks
from utils.models.policy import sample
from utils.rl.grpo import GRPOConfig
from utils.rl.rollout import policy_log_ratio


def sampler_log_ratios(policy, sampler, tokenizer, prompts, k=1, temperature=1.0, max_new_tokens=8, seed=0):
    """`sampler` writes k completions of each prompt; both models score them. Returns (log_ratio [N, T] = log
    pi_policy - log pi_sampler per token, 0 off the mask; mask [N, T] float, 1 on the completion's tokens), N =
    len(prompts) * k. The sampler's log-probs are those it computed while sampling, in its own dtype (a bfloat16
    copy's numbers are an inference engine's); the policy's come from one forward pass in its dtype."""
    for name, m in (("policy", policy), ("sampler", sampler)):
        checks.model("sampler_log_ratios", name, m)
    seed = checks.number("sampler_log_ratios", "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    ro = sample(sampler, tokenizer, prompts, k=k, temperature=temperature, max_new_tokens=max_new_tokens,
                generator=torch.Generator().manual_seed(seed))
    _, log_ratio, m = policy_log_ratio(policy, ro, temperature)                    # [N, T] each
    return log_ratio, m


def drift_probe(tokenizer, prompts, cfg, at=50, lags=8, n_prompts=64, seed=0):
    """A train_grpo callback that measures how far k optimizer steps carry the policy from the sampler that wrote a
    batch, in the middle of a run (Adam's first steps are its largest, so the start of a run is no guide). After
    step `at` it samples cfg.group_size completions of prompts[:n_prompts] with the policy of that step (the
    sampler, generator seeded by `seed`: the run's own random streams are untouched, so the run trains as it would
    without the probe); after each step at + k, k = 0..lags, it scores that batch again with the policy of the
    step and adds drift_token (the per-token log-ratios log pi_(at+k) - log pi_at) and drift_sequence (their sum
    per completion: the log of the sequence's ratio) to the step's record. What a learner k steps ahead of its
    sampler sees: StaleRollout(lag=k) at step at + k. drift_of(history) collects them."""
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"drift_probe: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    at = checks.number("drift_probe", "at", at, lo=1, integer=True)
    lags = checks.number("drift_probe", "lags", lags, lo=1, hi=1000, integer=True)
    n_prompts = checks.number("drift_probe", "n_prompts", n_prompts, lo=1, integer=True)
    seed = checks.number("drift_probe", "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    prompts = checks.strings("drift_probe", "prompts", prompts)[:n_prompts]
    batch = {}

    def probe(policy, rec):
        k = rec["step"] - at
        if not 0 <= k <= lags:
            return None
        if k == 0:
            batch["ro"] = sample(policy, tokenizer, prompts, k=cfg.group_size, temperature=cfg.temperature,
                                 max_new_tokens=cfg.max_new_tokens, generator=torch.Generator().manual_seed(seed))
        _, d, m = policy_log_ratio(policy, batch["ro"], cfg.temperature)  # [N, T] log pi_(at+k) - log pi_at, mask
        return {"drift_token": d[m.bool()].tolist(), "drift_sequence": d.sum(1).tolist()}
    return probe


def drift_of(history):
    """{"token": [lags + 1] lists of per-token log-ratios, "sequence": the same per completion, "at": the step the
    batch was sampled after} from a history that ran drift_probe."""
    rows = [h for h in history if isinstance(h, dict) and "drift_token" in h] if isinstance(history, list) else []
    if not rows:
        raise ValueError("drift_of: history has no drift_probe records: train with callback=drift_probe(...) and "
                         "enough steps to pass its `at`")
    return {"token": [h["drift_token"] for h in rows], "sequence": [h["drift_sequence"] for h in rows],
            "at": rows[0]["step"]}


def _drift(where, drift):
    if not isinstance(drift, dict) or any(k not in drift for k in ("token", "sequence")) \
            or len(drift["token"]) != len(drift["sequence"]) or not drift["token"]:
        raise ValueError(f"{where}: drift must be drift_of's dict (token and sequence log-ratios per k), got "
                         f"{checks._short(drift)}")
    for key in ("token", "sequence"):   # a ratio of 0 or inf (a token one policy cannot write) has no mean
        for k, xs in enumerate(drift[key]):
            checks.array(where, f"drift[{key!r}][{k}]", xs, dims=1)


def drift_summary(drift, eps_low=0.2, eps_high=0.2, is_max=3.0):
    """One row per k of drift_of's result: k, mean_abs_log_ratio (per token), kl (KL(sampler || learner) a token,
    estimated on the sampler's tokens with k3 = r - 1 - log r, r the ratio: arXiv 2402.03300's estimator, >= 0),
    outside_clip (share of tokens whose ratio lies outside [1 - eps_low, 1 + eps_high]: where a clipped loss can
    stop their gradient),
    token_capped (share of tokens with ratio > is_max: what token_truncate caps and token_mask drops) and
    sequence_masked (share of completions whose sequence ratio exp(sum of log-ratios) lies above is_max: what
    TRL's default sequence_mask drops)."""
    _drift("drift_summary", drift)
    eps_low = checks.number("drift_summary", "eps_low", eps_low, lo=0, hi=1)
    eps_high = checks.number("drift_summary", "eps_high", eps_high, lo=0)
    is_max = checks.number("drift_summary", "is_max", is_max, lo=0, lo_open=True)
    lo, hi, cap = math.log(1 - eps_low) if eps_low < 1 else -math.inf, math.log1p(eps_high), math.log(is_max)
    rows = []
    for k, (tok, seq) in enumerate(zip(drift["token"], drift["sequence"])):
        t, s = torch.tensor(tok, dtype=torch.float64), torch.tensor(seq, dtype=torch.float64)
        share = lambda x: float(x.float().mean()) if x.numel() else 0.0  # noqa: E731
        rows.append({"k": k, "mean_abs_log_ratio": float(t.abs().mean()) if t.numel() else 0.0,
                     "kl": float((t.exp() - 1 - t).mean()) if t.numel() else 0.0,
                     "outside_clip": share((t < lo) | (t > hi)), "token_capped": share(t > cap),
                     "sequence_masked": share(s > cap)})
    return rows


def step_seconds(sample_s, update_s, lag):
    """Seconds per training step of a simple pipeline model. lag 0: sample, then update, in turn (sample_s +
    update_s). lag k >= 1: k samplers work side by side with the learner, each batch k steps old when it is
    trained on, so a step takes max(sample_s / k, update_s): generation overlapped with training (PipelineRL,
    arXiv 2509.19128, and TRL's AsyncGRPOTrainer work this way; the model leaves out weight transfers and
    stragglers)."""
    sample_s = checks.number("step_seconds", "sample_s", sample_s, lo=0)
    update_s = checks.number("step_seconds", "update_s", update_s, lo=0)
    lag = checks.number("step_seconds", "lag", lag, lo=0, integer=True)
    return sample_s + update_s if lag == 0 else max(sample_s / lag, update_s)
