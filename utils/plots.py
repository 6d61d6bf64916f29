"""Plots shared by the labs: one style, titles, labelled axes with units."""
import matplotlib.pyplot as plt

LABELS = {
    "reward_mean": ("training reward (mean per batch)", "reward (0-1)"),
    "reward_std": ("reward spread (std per batch)", "std"),
    "zero_spread_frac": ("groups with all-equal rewards", "share of groups"),
    "entropy": ("policy entropy", "nats per token"),
    "kl": ("KL to the reference (k3)", "nats per token"),
    "clip_frac": ("clipped tokens", "share of tokens"),
    "completion_len": ("completion length", "tokens"),
    "heldout_pass@1": ("held-out sampled pass@1", "accuracy (0-1)"),
}


def plot_history(runs, keys=("reward_mean", "entropy", "heldout_pass@1"), x="step", title=None):
    """One panel per metric, one line per run. runs: {label: history (list of dicts)}.
    x: 'step' or 'seconds' (wall-clock time)."""
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.4), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for label, hist in runs.items():
            pts = [(r[x], r[key]) for r in hist if r.get(key) is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o" if key.startswith("heldout") else None, ms=3, label=label)
        name, unit = LABELS.get(key, (key, ""))
        ax.set_title(name)
        ax.set_xlabel("training step" if x == "step" else "wall-clock time (s)")
        ax.set_ylabel(unit)
    axes[0][0].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
