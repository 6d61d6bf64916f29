"""Choosing and ordering training prompts (Lab 07): the shipped per-prompt pass rates, the sweet-spot filter, a
random subset of the same size, and a curriculum schedule. The pass rates are measured by
utils.eval.metrics.pass_rates and written by `python -m utils.runs.pass_rates` (377 s when it was written).

The sources' rule of thumb (../shared/SOURCE_NOTES.md, "Data and length"): keep the prompts the base model
solves sometimes, pass rate between 0.3 and 0.7. A prompt it always solves gives a group whose rewards are all
1, and one it never solves a group of 0s: either way the advantage is 0 and the prompt teaches nothing.
"""
import json
import os

import numpy as np

from utils import DATA_DIR, checks

PASS_RATES_FILE = os.path.join(DATA_DIR, "scratchpad", "train_pass_rates.json")
PASS_RATES_CONFIG = dict(model="rlvr-trace", n=16, seed=0, max_new_tokens=64, batch_size=1024)


def sweet_spot(rates, lo=0.3, hi=0.7):
    """Indices of the prompts whose pass rate lies in [lo, hi]. ValueError when the band is not inside [0, 1]
    with lo <= hi, or when no prompt lies in it (widen the band or measure more prompts)."""
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"sweet_spot: {name}={v!r} must be a number in [0, 1] (a pass rate)")
    if lo > hi:
        raise ValueError(f"sweet_spot: lo={lo} is above hi={hi}; the band is [lo, hi]")
    rates = checks.array("sweet_spot", "rates", rates, dims=1)
    if rates.size == 0 or ((rates < 0) | (rates > 1)).any():
        raise ValueError("sweet_spot: rates must be pass rates in [0, 1], at least one")
    keep = np.flatnonzero((rates >= lo) & (rates <= hi))
    if keep.size == 0:
        raise ValueError(f"sweet_spot: no prompt has a pass rate in [{lo}, {hi}] (none of the {rates.size} rates); "
                         f"widen the band or measure more prompts")
    return keep


def random_subset(n_total, size, seed=0):
    """`size` distinct indices of range(n_total), sorted, drawn with a seeded generator: the control for a
    curated set of the same size."""
    n_total = checks.number("random_subset", "n_total", n_total, lo=1, hi=10**9, integer=True)
    size = checks.number("random_subset", "size", size, lo=1, hi=n_total, integer=True)
    seed = checks.number("random_subset", "seed", seed, lo=0, integer=True)
    return np.sort(np.random.default_rng(seed).choice(n_total, size, replace=False))


def mix_matched_subset(digits, chosen, seed=0):
    """A random subset with the same number of prompts at each level as `chosen` (indices into the split): the
    control for a curated set that also shifts the difficulty mix. digits [P] (one level per prompt). Sorted
    indices, drawn with a seeded generator from all the prompts of each level. E.g. digits [2, 2, 3, 3, 3],
    chosen [0, 2] -> one 2-digit and one 3-digit prompt."""
    digits = checks.array("mix_matched_subset", "digits", digits, dims=1)
    chosen = checks.array("mix_matched_subset", "chosen", chosen, dims=1)
    if chosen.size == 0 or (chosen < 0).any() or (chosen >= len(digits)).any() or (chosen % 1).any():
        raise ValueError(f"mix_matched_subset: chosen must hold indices into the {len(digits)} prompts of digits, "
                         f"got {checks._short(chosen.tolist())}")
    seed = checks.number("mix_matched_subset", "seed", seed, lo=0, integer=True)
    rng, out = np.random.default_rng(seed), []
    levels, counts = np.unique(digits[chosen.astype(int)], return_counts=True)
    for level, n in zip(levels, counts):
        out.append(rng.choice(np.flatnonzero(digits == level), n, replace=False))
    return np.sort(np.concatenate(out))


def shuffled(pools, seed=0):
    """The same per-step pools in a seeded random order: a curriculum's exposure to each level, without its order
    (the control for easy-to-hard). pools: level_pools' list."""
    if isinstance(pools, (str, bytes, dict)) or not isinstance(pools, (list, tuple)) or not pools:
        raise ValueError(f"shuffled: pools={checks._short(pools)}; give level_pools' list of index arrays")
    for i, p in enumerate(pools):
        a = np.asarray(p) if isinstance(p, (list, tuple, np.ndarray)) else None
        if a is None or a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
            raise ValueError(f"shuffled: pools[{i}] is {checks._short(p)}; each pool is a non-empty array of prompt "
                             f"indices (level_pools' output)")
    seed = checks.number("shuffled", "seed", seed, lo=0, integer=True)
    order = np.random.default_rng(seed).permutation(len(pools))
    return [pools[i] for i in order]


def curriculum(schedule, steps):
    """A schedule [(until_step, levels), ...] -> [steps] list: the difficulty levels a step draws from.
    Each phase runs from the previous phase's until_step (0 first) up to its own; the last must end exactly at
    `steps`, so that every step has a phase. E.g. curriculum([(20, [2]), (40, [2, 3]), (60, [2, 3, 4])], 60)."""
    if isinstance(schedule, (str, bytes, dict)) or not isinstance(schedule, (list, tuple)) or not schedule:
        raise ValueError(f"curriculum: schedule={checks._short(schedule)}; give a non-empty list "
                         f"[(until_step, levels), ...]")
    steps = checks.number("curriculum", "steps", steps, lo=1, integer=True)
    out, start = [], 0
    for i, phase in enumerate(schedule):
        try:
            until, levels = phase
        except (TypeError, ValueError):
            raise ValueError(f"curriculum: schedule phase {i} is {phase!r}, not (until_step, levels)") from None
        if not isinstance(until, int) or isinstance(until, bool) or until <= start:
            raise ValueError(f"curriculum: schedule phase {i} ends at step {until!r}, which must be an integer "
                             f"after the previous phase's end ({start})")
        if isinstance(levels, (str, bytes)) or not hasattr(levels, "__len__") or not levels:
            raise ValueError(f"curriculum: schedule phase {i} has no levels (a list of difficulty levels)")
        out += [list(levels)] * (until - start)
        start = until
    if start != steps:
        raise ValueError(f"curriculum: the schedule covers steps 1..{start} but the run has {steps} steps; make "
                         f"the last phase end at {steps}")
    return out


def level_pools(levels_per_step, digits):
    """curriculum()'s [steps] list of levels -> one array of prompt indices per step (GroupRollout(pools=)):
    the prompts whose `digits` (one per prompt) is among that step's levels. ValueError for a level no prompt
    has."""
    checks.array("level_pools", "digits", digits, dims=1)
    digits = np.asarray(digits)
    if digits.size == 0:
        raise ValueError("level_pools: digits is empty: it needs one level per prompt")
    if isinstance(levels_per_step, (str, bytes, dict)) or not isinstance(levels_per_step, (list, tuple)) or \
            not all(isinstance(lv, (list, tuple)) for lv in levels_per_step):
        raise ValueError(f"level_pools: levels_per_step must be curriculum()'s list of levels per step, got "
                         f"{checks._short(levels_per_step)}")
    by_level = {d: np.flatnonzero(digits == d) for d in np.unique(digits)}
    out = []
    for levels in levels_per_step:
        missing = [lv for lv in levels if isinstance(lv, (list, dict, set)) or lv not in by_level]
        if missing or not levels:
            raise ValueError(f"level_pools: no prompt has level {missing or 'none'} (levels_per_step asks for it); the "
                             f"levels in digits are {sorted(v.item() for v in by_level)}")
        out.append(np.sort(np.concatenate([by_level[lv] for lv in levels])))
    return out


def load_pass_rates():
    """The shipped pass rates of the trace model on the scratchpad train split, in split order: a float array
    [6000] of right answers out of PASS_RATES_CONFIG["n"] samples. Written by `python -m utils.runs.pass_rates`."""
    if not os.path.exists(PASS_RATES_FILE):
        raise FileNotFoundError(f"{PASS_RATES_FILE} is missing; write it with `python -m utils.runs.pass_rates`")
    with open(PASS_RATES_FILE) as f:
        d = json.load(f)
    return np.asarray(d["right"], dtype=float) / d["config"]["n"]
