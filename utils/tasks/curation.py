"""Choosing and ordering training prompts (Lab 07): per-prompt pass rates, the sweet-spot filter, a random
subset of the same size, and a curriculum schedule.

    python -m utils.tasks.curation   # the trace model's pass rates on every train prompt (n=16): ~4 minutes

The sources' rule of thumb (../shared/SOURCE_NOTES.md, "Data and length"): keep the prompts the base model
solves sometimes, pass rate between 0.3 and 0.7. A prompt it always solves gives a group whose rewards are all
1, and one it never solves a group of 0s: either way the advantage is 0 and the prompt teaches nothing.
"""
import json
import os

import numpy as np

from utils import DATA_DIR
from utils.eval.metrics import sample_in_batches

PASS_RATES_FILE = os.path.join(DATA_DIR, "scratchpad", "train_pass_rates.json")
PASS_RATES_CONFIG = dict(model="rlvr-trace", n=16, seed=0, max_new_tokens=64, batch_size=1024)


def pass_rates(model, tokenizer, prompts, answers, correct_fn, n=16, max_new_tokens=64, seed=0, columns=None,
               batch_size=1024):
    """The share of n samples (temperature 1, seeded) that correct_fn judges right (>= 1.0), per prompt:
    a float array [len(prompts)]. correct_fn has the verifier signature (completions, answer, **columns);
    columns {name: list aligned with prompts} are passed to it, one value per completion."""
    if n < 1 or not len(prompts) or len(prompts) != len(answers):
        raise ValueError(f"pass_rates needs n >= 1 and prompts and answers of one non-zero length (got n={n}, "
                         f"{len(prompts)} prompts, {len(answers)} answers)")
    columns = columns or {}
    out = np.zeros(len(prompts))
    for i, ro in sample_in_batches(model, tokenizer, prompts, k=n, max_new_tokens=max_new_tokens, seed=seed,
                                   batch_size=batch_size):
        m = len(ro.texts) // n
        ans = [answers[i + j // n] for j in range(m * n)]
        extra = {c: [col[i + j // n] for j in range(m * n)] for c, col in columns.items()}
        right = np.array(correct_fn(ro.texts, ans, **extra)) >= 1.0   # [m * n]
        out[i:i + m] = right.reshape(m, n).mean(1)
    return out


def sweet_spot(rates, lo=0.3, hi=0.7):
    """Indices of the prompts whose pass rate lies in [lo, hi]. ValueError when the band is not inside [0, 1]
    with lo <= hi, or when no prompt lies in it (widen the band or measure more prompts)."""
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"sweet_spot: {name}={v!r} must be a number in [0, 1] (a pass rate)")
    if lo > hi:
        raise ValueError(f"sweet_spot: lo={lo} is above hi={hi}; the band is [lo, hi]")
    rates = np.asarray(rates, dtype=float)
    keep = np.flatnonzero((rates >= lo) & (rates <= hi))
    if keep.size == 0:
        raise ValueError(f"sweet_spot: no prompt has a pass rate in [{lo}, {hi}] (of {rates.size}); widen the band "
                         f"or measure more prompts")
    return keep


def random_subset(n_total, size, seed=0):
    """`size` distinct indices of range(n_total), sorted, drawn with a seeded generator: the control for a
    curated set of the same size."""
    if not 1 <= size <= n_total:
        raise ValueError(f"random_subset: size={size} must be in 1..{n_total}")
    return np.sort(np.random.default_rng(seed).choice(n_total, size, replace=False))


def curriculum(schedule, steps):
    """A schedule [(until_step, levels), ...] -> [steps] list: the difficulty levels a step draws from.
    Each phase runs from the previous phase's until_step (0 first) up to its own; the last must end exactly at
    `steps`, so that every step has a phase. E.g. curriculum([(20, [2]), (40, [2, 3]), (60, [2, 3, 4])], 60)."""
    if not schedule:
        raise ValueError("curriculum: the schedule is empty; give [(until_step, levels), ...]")
    out, start = [], 0
    for i, phase in enumerate(schedule):
        try:
            until, levels = phase
        except (TypeError, ValueError):
            raise ValueError(f"curriculum: phase {i} is {phase!r}, not (until_step, levels)") from None
        if not isinstance(until, int) or isinstance(until, bool) or until <= start:
            raise ValueError(f"curriculum: phase {i} ends at step {until!r}, which must be an integer after the "
                             f"previous phase's end ({start})")
        if not levels:
            raise ValueError(f"curriculum: phase {i} has no levels")
        out += [list(levels)] * (until - start)
        start = until
    if start != steps:
        raise ValueError(f"curriculum: the schedule covers steps 1..{start} but the run has {steps} steps; make "
                         f"the last phase end at {steps}")
    return out


def level_pools(levels_per_step, digits):
    """curriculum()'s [steps] list of levels -> one array of prompt indices per step (train_grpo's pools):
    the prompts whose `digits` (one per prompt) is among that step's levels. ValueError for a level no prompt
    has."""
    digits = np.asarray(digits)
    by_level = {d: np.flatnonzero(digits == d) for d in np.unique(digits)}
    out = []
    for levels in levels_per_step:
        missing = [lv for lv in levels if lv not in by_level]
        if missing:
            raise ValueError(f"level_pools: no prompt has level {missing}; the levels are {sorted(by_level)}")
        out.append(np.sort(np.concatenate([by_level[lv] for lv in levels])))
    return out


def load_pass_rates():
    """The shipped pass rates of the trace model on the scratchpad train split, in split order: a float array
    [6000] of right answers out of PASS_RATES_CONFIG["n"] samples. Written by `python -m utils.tasks.curation`."""
    if not os.path.exists(PASS_RATES_FILE):
        raise FileNotFoundError(f"{PASS_RATES_FILE} is missing; write it with `python -m utils.tasks.curation`")
    with open(PASS_RATES_FILE) as f:
        d = json.load(f)
    return np.asarray(d["right"], dtype=float) / d["config"]["n"]


def write_pass_rates():
    """Measure the trace model's pass rate on every scratchpad train prompt (PASS_RATES_CONFIG) and write them."""
    import time

    from utils.models.policy import load_policy
    from utils.setup import setup
    from utils.tasks.scratchpad import load_split
    from utils.verifiers.traces import outcome_reward

    c = PASS_RATES_CONFIG
    setup(c["seed"], quiet=True)
    model, tok = load_policy(c["model"])
    train, t = load_split("train"), time.time()
    rates = pass_rates(model, tok, train["prompt"], train["answer"], outcome_reward, n=c["n"],
                       max_new_tokens=c["max_new_tokens"], seed=c["seed"], batch_size=c["batch_size"])
    right = [int(round(r * c["n"])) for r in rates]
    with open(PASS_RATES_FILE, "w") as f:
        json.dump({"config": c, "seconds": round(time.time() - t, 1), "right": right}, f)
    print(f"wrote {PASS_RATES_FILE}: {len(right)} prompts, mean pass rate {np.mean(rates):.3f}, "
          f"{time.time() - t:.0f} s")


if __name__ == "__main__":
    write_pass_rates()
