"""Lab 07's explorer (data and compute): scaling_explorer, fitted accuracy-against-compute curves read at a budget,
and scaling_table, the numbers it shows."""
import numbers

from utils import checks
from utils.notebook.widgets.common import _default, _fits


def scaling_table(fits, budget, measured_max=None):
    """For each model's fitted curve (utils.eval.scaling.fit_sigmoid dicts, {name: fit}) at compute `budget`
    (completions sampled): the predicted accuracy, the gain from doubling the budget, the share of the
    asymptotic gain A - R0 reached, and whether the budget lies beyond the largest compute measured
    (measured_max {name: C}, an extrapolation). Returns {name: dict}."""
    from utils.eval.scaling import predict

    _fits("scaling_table", fits)
    budget = checks.number("scaling_table", "budget", budget, lo=0, lo_open=True)
    if measured_max is not None and (not isinstance(measured_max, dict) or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in measured_max.values())):
        raise ValueError(f"scaling_table: measured_max must be a dict {{name: largest compute measured}} or None, got "
                         f"{checks._short(measured_max)}")
    out = {}
    for name, f in fits.items():
        at, doubled = float(predict(f, budget)), float(predict(f, 2 * budget))
        span = f["A"] - f["R0"]
        out[name] = {"accuracy": at, "gain_if_doubled": doubled - at,
                     "share_of_gain": (at - f["R0"]) / span if span else float("nan"),
                     "extrapolated": bool(measured_max and budget > measured_max.get(name, float("inf")))}
    return out


def scaling_explorer(fits, measured, default_model=None, default_budget=2048):
    """The fitted sigmoid of each model in log compute, its measured points, and a budget: pick a model and a
    budget (completions sampled) to read the predicted accuracy, what doubling the budget would add, and how
    much of the curve's asymptotic gain is already reached. fits: {name: fit dict}; measured: {name: (C list,
    R list)}. Returns the widget."""
    import html

    import ipywidgets as w
    import matplotlib.pyplot as plt
    import numpy as np

    from utils.eval.scaling import predict

    names = list(_fits("scaling_explorer", fits))
    if not isinstance(measured, dict):
        raise ValueError(f"scaling_explorer: measured must be a dict {{name: (C list, R list)}}, got "
                         f"{checks._short(measured)}")
    for name in names:
        pair = measured.get(name)
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"scaling_explorer: measured[{name!r}] must be the points (C list, R list) of that fit, "
                             f"got {checks._short(pair)}")
        C, R = (checks.array("scaling_explorer", f"measured[{name!r}]", v, dims=1) for v in pair)
        if len(C) != len(R) or not len(C):
            raise ValueError(f"scaling_explorer: measured[{name!r}] must hold as many accuracies as compute points, "
                             f"at least one")
    _default("scaling_explorer", "default_model", default_model, names)
    default_budget = checks.number("scaling_explorer", "default_budget", default_budget, lo=0, lo_open=True)
    budgets = [int(2 ** i) for i in range(6, 18)]  # 64 .. 131072 completions
    model = w.Dropdown(options=names, value=default_model if default_model in names else names[0],
                       description="model")
    budget = w.SelectionSlider(options=budgets, value=min(budgets, key=lambda b: abs(b - default_budget)),
                               description="budget")
    out, table = w.Output(), w.HTML()
    top = {name: max(measured[name][0]) for name in names}

    def draw(_=None):
        rows = scaling_table(fits, budget.value, top)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(9, 3.6))
            C = np.logspace(np.log10(budgets[0]), np.log10(budgets[-1]), 200)
            for name in names:
                f, bold = fits[name], name == model.value
                inside = C <= top[name]
                line, = ax.plot(C[inside], predict(f, C[inside]), lw=2.5 if bold else 1, alpha=1 if bold else 0.5,
                                label=name)
                ax.plot(C[~inside], predict(f, C[~inside]), ls="--", lw=2.5 if bold else 1, color=line.get_color(),
                        alpha=1 if bold else 0.5)
                ax.plot(*measured[name], "o", ms=4 if bold else 2, color=line.get_color(), alpha=1 if bold else 0.5)
            ax.axvline(budget.value, color="gray", lw=1)
            ax.set_xscale("log")
            ax.set_xlabel("RL compute (completions sampled, log scale; dashed: beyond the measured points)")
            ax.set_ylabel("held-out pass@1")
            ax.set_title(f"fitted sigmoids (descriptions, not findings); {model.value} at {budget.value} "
                         f"completions: {rows[model.value]['accuracy']:.3f}")
            ax.legend(loc="lower right", fontsize=8)
            plt.show()
        cells = "".join(
            f"<tr style='font-weight:{'bold' if n == model.value else 'normal'}'><td>{html.escape(n)}</td>"
            f"<td>{r['accuracy']:.3f}</td><td>{r['gain_if_doubled']:+.3f}</td><td>{r['share_of_gain']:.0%}</td>"
            f"<td>{fits[n]['A']:.3f}</td><td>{'yes' if r['extrapolated'] else 'no'}</td></tr>"
            for n, r in rows.items())
        table.value = (f"<table><tr><th>model</th><th>pass@1 at {budget.value}</th><th>doubling adds (fitted)</th>"
                       f"<th>share of A - R0 reached</th><th>asymptote A (fitted, not identified)</th>"
                       f"<th>extrapolated</th></tr>{cells}</table>"
                       f"<p>These read the fitted curves, not measurements: over one decade of compute the sigmoid's "
                       f"A and midpoint are not identified (Lab 07 section 4), and the axis counts completions, not "
                       f"FLOPs: a larger model's completion costs more (gpt2-6x192 about 3.3 times gpt2-4x128's), so "
                       f"compare sizes at equal FLOPs, where the larger GPT-2 did not win.</p>")

    for widget in (model, budget):
        widget.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([model, budget]), out, table])
