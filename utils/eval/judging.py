"""Measuring a learned judge (Lab 11): the labels it learns from, and what it says of a policy's samples.

rubric_labels samples a model's completions and labels each with the rule verifier, a stated share of them
flipped at random: the data an AI judge following a written rubric would give, with its mistakes (RLAIF,
Constitutional AI arXiv 2212.08073). judge_report reads a policy's fresh samples of held-out prompts with both
the judge and the truth, which is how a judge's false-positive rate is watched along a run (arXiv 2505.22203
measures rule verifiers' false negatives and learned verifiers' false positives under RL).
"""
from collections import Counter

import numpy as np

from utils import checks
from utils.eval.metrics import evaluate
from utils.models.judge import judge_probs, verdict_rates
from utils.verifiers.arithmetic import strict_reward


def rubric_labels(model, tokenizer, prompts, answers, k=8, flip=0.1, seed=0, reward_fn=strict_reward,
                  max_new_tokens=8):
    """k sampled completions of each prompt (seed), each labelled by reward_fn (>= 1: right) and then flipped
    with probability `flip` (its own stream, seeded with `seed`). Returns {problems, completions, labels (the
    noisy ones, floats 0/1), truth (reward_fn's)}, each a list of length k * len(prompts), grouped by prompt."""
    where = "rubric_labels"
    checks.model(where, "model", model)
    k = checks.number(where, "k", k, lo=1, hi=10_000, integer=True)
    flip = checks.number(where, "flip", flip, lo=0, hi=1)
    seed = checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    prompts = checks.strings(where, "prompts", prompts)               # a non-empty list
    answers = checks.sequence(where, "answers", answers, length=len(prompts))
    ev = evaluate(model, tokenizer, prompts, answers, k=k, seed=seed, max_new_tokens=max_new_tokens,
                  reward_fn=reward_fn)
    rep = [a for a in answers for _ in range(k)]
    truth = (np.array(checks.reward_scores(reward_fn, "reward_fn", ev["texts"], rep, {})) >= 1).astype(float)
    flips = np.random.default_rng(seed).random(len(truth)) < flip
    return {"problems": [p for p in prompts for _ in range(k)], "completions": ev["texts"],
            "labels": np.where(flips, 1.0 - truth, truth).tolist(), "truth": truth.tolist()}


def judge_report(policy, judge, tokenizer, prompts, answers, seed=0, reward_fn=strict_reward, max_new_tokens=8):
    """One sample of each held-out prompt from the policy (seed), read by the judge and by the truth (reward_fn):
    {truth (pass@1), judge_mean (its mean P(right)), false_pos_rate, false_neg_rate (verdict_rates at 0.5), auroc
    (on the policy's own samples: does the judge still rank right above wrong where the policy now writes?),
    top_share (the share of the most common completion: how far the policy has collapsed onto one answer)}."""
    where = "judge_report"
    checks.model(where, "policy", policy)
    prompts = checks.strings(where, "prompts", prompts)               # a non-empty list
    answers = checks.sequence(where, "answers", answers, length=len(prompts))
    ev = evaluate(policy, tokenizer, prompts, answers, k=1, seed=seed, max_new_tokens=max_new_tokens,
                  reward_fn=reward_fn)
    right = (np.array(checks.reward_scores(reward_fn, "reward_fn", ev["texts"], list(answers), {})) >= 1)
    p = judge_probs(judge, tokenizer, prompts, ev["texts"])
    rates = verdict_rates(p, right.astype(float))
    return {"truth": float(right.mean()), "judge_mean": float(np.mean(p)),
            "false_pos_rate": rates["false_pos_rate"], "false_neg_rate": rates["false_neg_rate"],
            "auroc": rates["auroc"],
            "top_share": Counter(t.strip() for t in ev["texts"]).most_common(1)[0][1] / len(ev["texts"])}
