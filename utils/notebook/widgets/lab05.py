"""Lab 05's explorer (pass@k): pass_at_k_explorer, per-problem pass@k of a model against the base model."""
from utils import checks
from utils.notebook.widgets.common import _counts, _default


def pass_at_k_explorer(counts, n, split="test", default_model=None, default_k=16):
    """Per-problem pass@k of a chosen model against the base model, redrawn when the model, split or k
    changes. counts: {(model name, split): [P] right answers out of n}; the model named "base" is the
    reference. Returns the widget."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    import numpy as np

    from utils.eval.metrics import pass_at_k_table

    n = checks.number("pass_at_k_explorer", "n", n, lo=1, hi=100_000, integer=True)
    _counts(counts, n)
    names = [m for m, s in counts if s == split and m != "base"]
    if not isinstance(split, str) or not names or ("base", split) not in counts:
        raise ValueError(f"pass_at_k_explorer: split={checks._short(split)} must be a split that counts has for "
                         f"'base' and another model; counts has {sorted({s for _, s in counts})}")
    _default("pass_at_k_explorer", "default_model", default_model, names)
    default_k = checks.number("pass_at_k_explorer", "default_k", default_k, lo=1, integer=True)
    split_names = sorted({s for _, s in counts})
    ks = [2 ** i for i in range(int(np.log2(n)) + 1)]
    model = w.Dropdown(options=names, value=default_model if default_model in names else names[0], description="model")
    where = w.Dropdown(options=split_names, value=split, description="split")
    k = w.SelectionSlider(options=ks, value=default_k if default_k in ks else ks[0], description="k")
    out = w.Output()
    table = pass_at_k_table(n, ks)  # [n + 1, len(ks)]

    def draw(_=None):
        j = ks.index(k.value)
        base = table[np.asarray(counts["base", where.value])][:, j]
        mine = table[np.asarray(counts[model.value, where.value])][:, j]
        order = np.argsort(-base, kind="stable")
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(10, 3))
            x = np.arange(len(order))
            ax.bar(x, mine[order], width=1.0, alpha=0.7, label=model.value)
            ax.step(x, base[order], where="mid", color="gray", label="base")
            ax.set_xlabel(f"problem ({where.value} split), sorted by the base model's pass@{k.value}")
            ax.set_ylabel(f"pass@{k.value}")
            ax.set_title(f"{model.value} vs base: mean pass@{k.value} {mine.mean():.3f} vs {base.mean():.3f}")
            ax.set_ylim(0, 1.02)
            ax.legend(loc="upper right")
            plt.show()

    for widget in (model, where, k):
        widget.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([model, where, k]), out])
