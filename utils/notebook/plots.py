"""Plots shared by the labs: one style, titles, labelled axes with units."""
import numbers

import matplotlib.pyplot as plt
import numpy as np

from utils import checks

LABELS = {
    "reward_mean": ("training reward (mean per batch)", "reward (0-1)"),
    "reward_std": ("reward spread (std per batch)", "std"),
    "zero_spread_frac": ("groups with all-equal rewards", "share of groups"),
    "entropy": ("policy entropy", "nats per token"),
    "kl": ("KL to the reference (k3)", "nats per token"),
    "clip_frac": ("clipped tokens", "share of tokens"),
    "completion_len": ("completion length", "tokens"),
    "completion_len_right": ("length of right completions", "tokens"),
    "completion_len_wrong": ("length of wrong completions", "tokens"),
    "truncated_frac": ("completions cut off by max_new_tokens", "share of completions"),
    "heldout_pass@1": ("held-out sampled pass@1", "accuracy (0-1)"),
    "ood_pass@1": ("OOD sampled pass@1", "accuracy (0-1)"),
    "group_reward_std": ("reward spread within groups (mean std)", "std"),
    "distinct_answers": ("distinct answers per group", "answers"),
}


def moving_average(xs, n):
    """Mean of each window of n consecutive values: len(xs) - n + 1 values (xs itself if shorter than n)."""
    xs = checks.array("moving_average", "xs", xs, dims=1)
    n = checks.number("moving_average", "n", n, lo=1, integer=True)
    return np.convolve(xs, np.ones(n) / n, mode="valid") if n > 1 and len(xs) >= n else xs


def _check_runs(runs, keys, x):
    where = "plot_history"
    if not isinstance(runs, dict) or not runs:
        raise ValueError(f"{where}: runs must be a dict {{label: history}} (a history: train_grpo's list of per-step "
                         f"dicts), got {checks._short(runs)}")
    if isinstance(keys, (str, bytes)) or not isinstance(keys, (list, tuple)) or not keys or \
            not all(isinstance(k, str) for k in keys):
        raise ValueError(f"{where}: keys must be a non-empty list of metric names (str), got {checks._short(keys)}")
    if not isinstance(x, str) or x not in ("step", "seconds"):
        raise ValueError(f"{where}: x must be 'step' or 'seconds', got {checks._short(x)}")
    for label, hist in runs.items():
        if isinstance(hist, (str, bytes, dict)) or not isinstance(hist, (list, tuple)) or \
                not all(isinstance(r, dict) for r in hist):
            raise ValueError(f"{where}: runs[{label!r}] must be a history (a list of per-step dicts), got "
                             f"{checks._short(hist)}")
        for i, r in enumerate(hist):  # a NaN is drawn as a gap (a diverged run); what is not a number is refused
            for key in [k for k in keys if r.get(k) is not None] + ([x] if any(r.get(k) is not None for k in keys)
                                                                    else []):
                if isinstance(r.get(key), bool) or not isinstance(r.get(key), numbers.Real):
                    raise ValueError(f"{where}: runs[{label!r}][{i}][{key!r}]={checks._short(r.get(key))} must be a "
                                     f"number" + (f" (each step that has a key needs its {x!r})" if key == x else ""))


def plot_history(runs, keys=("reward_mean", "entropy", "heldout_pass@1"), x="step", title=None, smooth=1, ncols=None):
    """One panel per metric, one line per run. runs: {label: history (list of dicts)}.
    x: 'step' or 'seconds' (wall-clock time). smooth > 1 draws per-step metrics as moving averages
    over that many steps (evaluations, the "..._pass@1" keys, are drawn as points, never smoothed).
    ncols: panels per row (default: all in one row)."""
    _check_runs(runs, keys, x)
    if title is not None and not isinstance(title, str):
        raise ValueError(f"plot_history: title must be a str or None, got {checks._short(title)}")
    smooth = checks.number("plot_history", "smooth", smooth, lo=1, integer=True)
    if ncols is not None:
        ncols = checks.number("plot_history", "ncols", ncols, lo=1, hi=100, integer=True)
    ncols = ncols or len(keys)
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        evals = key.endswith("_pass@1") or key.startswith("heldout")
        for label, hist in runs.items():
            pts = [(r[x], r[key]) for r in hist if r.get(key) is not None]
            if not pts:
                continue
            xs, ys = zip(*pts)
            if not evals and smooth > 1:
                ys = moving_average(ys, smooth)
                xs = xs[len(xs) - len(ys):]                 # each average sits at its window's last step
            ax.plot(xs, ys, marker="o" if evals else None, ms=3, label=label)
        name, unit = LABELS.get(key, (key, ""))
        ax.set_title(name + (f" ({smooth}-step mean)" if smooth > 1 and not evals else ""), fontsize=10)
        ax.set_xlabel("training step" if x == "step" else "wall-clock time (s)")
        ax.set_ylabel(unit)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
