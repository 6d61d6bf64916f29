"""Lab 10's explorer (off-policy RL): ratio_explorer, the importance ratios as the sampler falls k steps behind,
and ratio_view, its figure for one k."""
from utils import checks


def ratio_view(drift, k, eps_low=0.2, eps_high=0.2, is_max=3.0):
    """The figure ratio_explorer draws for one k: the importance ratios pi_learner / pi_sampler of the probed batch's
    tokens (left) and completions (right, the product over a completion's tokens) when the learner is k steps
    ahead of its sampler, on a log axis, with the clip band and the correction's cap. drift: drift_of's dict."""
    import matplotlib.pyplot as plt
    import numpy as np

    from utils.rl.staleness import drift_summary

    rows = drift_summary(drift, eps_low, eps_high, is_max)      # checks drift and the three bounds
    eps_low, eps_high, is_max = float(eps_low), float(eps_high), float(is_max)
    k = checks.number("ratio_view", "k", k, lo=0, hi=len(rows) - 1, integer=True)
    row, at = rows[k], drift.get("at", 0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    bins = np.linspace(-1.5, 1.5, 61)
    for ax, key, what in ((axes[0], "token", "tokens"), (axes[1], "sequence", "completions")):
        x = np.clip(np.asarray(drift[key][k], dtype=float), bins[0], bins[-1])
        ax.hist(x, bins=bins, color="#4a7ab5")
        ax.set_yscale("log")
        ax.axvspan(np.log(1 - eps_low), np.log1p(eps_high), color="#2e7d32", alpha=0.15, label="clip band")
        ax.axvline(np.log(is_max), color="#c62828", ls="--", label=f"cap {is_max:g}")
        ax.set_xticks(np.log([0.25, 0.5, 1, 2, 4]), ["0.25", "0.5", "1", "2", "4"])
        ax.set_xlabel(f"ratio pi_learner / pi_sampler per {what[:-1]} (log axis; the ends hold what lies beyond)")
        ax.set_ylabel(f"{what} (log scale)")
        ax.legend(fontsize=8, loc="upper right")
    axes[0].set_title(f"tokens: mean |log ratio| {row['mean_abs_log_ratio']:.3f}, {100 * row['outside_clip']:.1f}% "
                      f"outside the clip", fontsize=9)
    axes[1].set_title(f"completions: {100 * row['sequence_masked']:.1f}% above the cap (sequence_mask drops them)",
                      fontsize=9)
    fig.suptitle(f"Lab 10: the learner {k} step{'s' * (k != 1)} ahead of the sampler that wrote the batch "
                 f"(sampled after step {at})")
    fig.tight_layout()
    return fig


def ratio_explorer(drift, eps_low=0.2, eps_high=0.2, is_max=3.0, default_k=4):
    """Drag k, the steps between the sampler that wrote a batch and the learner that trains on it, and watch the
    importance ratios spread (ratio_view). drift: drift_of's dict. Returns the widget."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from utils.rl.staleness import drift_summary

    n = len(drift_summary(drift, eps_low, eps_high, is_max))
    default_k = checks.number("ratio_explorer", "default_k", default_k, lo=0, hi=n - 1, integer=True)
    k = w.IntSlider(value=default_k, min=0, max=n - 1, description="k (steps)")
    out = w.Output()

    def draw(_=None):
        with out:
            out.clear_output(wait=True)
            ratio_view(drift, k.value, eps_low, eps_high, is_max)
            plt.show()

    k.observe(draw, names="value")
    draw()
    return w.VBox([k, out])
