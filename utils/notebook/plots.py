"""Plots shared by the labs: one style, titles, labelled axes with units."""
import matplotlib.pyplot as plt
import numpy as np

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
    xs = np.asarray(xs, dtype=float)
    return np.convolve(xs, np.ones(n) / n, mode="valid") if n > 1 and len(xs) >= n else xs


def plot_history(runs, keys=("reward_mean", "entropy", "heldout_pass@1"), x="step", title=None, smooth=1, ncols=None):
    """One panel per metric, one line per run. runs: {label: history (list of dicts)}.
    x: 'step' or 'seconds' (wall-clock time). smooth > 1 draws per-step metrics as moving averages
    over that many steps (evaluations, the "..._pass@1" keys, are drawn as points, never smoothed).
    ncols: panels per row (default: all in one row)."""
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
