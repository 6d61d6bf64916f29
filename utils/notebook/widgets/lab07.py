"""Lab 07's explorer (data and compute): scaling_explorer, fitted accuracy-against-compute curves read at a budget,
counted in completions sampled or in training FLOPs, and scaling_table, the numbers it shows."""
import numbers

from utils import checks
from utils.notebook.widgets.common import _default, _fits


def _flops(where, flops_per_completion, names):
    """None, or {name: FLOPs of one completion} (each a finite number > 0) for every name in `names`."""
    if flops_per_completion is None:
        return None
    if not isinstance(flops_per_completion, dict) or any(n not in flops_per_completion for n in names):
        raise ValueError(f"{where}: flops_per_completion must be None or a dict {{name: FLOPs of one completion}} "
                         f"for every model ({list(names)}), got {checks._short(flops_per_completion)}")
    return {n: checks.number(where, f"flops_per_completion[{n!r}]", flops_per_completion[n], lo=0, lo_open=True)
            for n in names}


def scaling_table(fits, budget, measured_max=None, flops_per_completion=None):
    """For each model's fitted curve (utils.eval.scaling.fit_sigmoid dicts, {name: fit}) at compute `budget`:
    the predicted accuracy, the gain from doubling the budget, the share of the asymptotic gain A - R0 reached,
    and whether the budget lies beyond the largest compute measured (measured_max {name: C}, in completions: an
    extrapolation). The budget counts completions sampled; with flops_per_completion ({name: FLOPs of one
    completion}, utils.models.cost.step_flops with batch=1) it counts FLOPs, and each model is read at the
    completions it buys, budget / flops_per_completion[name] (the fit itself is the same: only its x axis is
    rescaled). Returns {name: dict(completions, accuracy, gain_if_doubled, share_of_gain, extrapolated)}."""
    from utils.eval.scaling import predict

    _fits("scaling_table", fits)
    budget = checks.number("scaling_table", "budget", budget, lo=0, lo_open=True)
    if measured_max is not None and (not isinstance(measured_max, dict) or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in measured_max.values())):
        raise ValueError(f"scaling_table: measured_max must be a dict {{name: largest compute measured}} or None, got "
                         f"{checks._short(measured_max)}")
    flops = _flops("scaling_table", flops_per_completion, fits)
    out = {}
    for name, f in fits.items():
        c = budget / flops[name] if flops else budget
        at, doubled = float(predict(f, c)), float(predict(f, 2 * c))
        span = f["A"] - f["R0"]
        out[name] = {"completions": c, "accuracy": at, "gain_if_doubled": doubled - at,
                     "share_of_gain": (at - f["R0"]) / span if span else float("nan"),
                     "extrapolated": bool(measured_max and c > measured_max.get(name, float("inf")))}
    return out


def scaling_explorer(fits, measured, default_model=None, default_budget=2048, flops_per_completion=None):
    """The fitted sigmoid of each model in log compute, its measured points, and a budget: pick a model and a
    budget to read the predicted accuracy, what doubling the budget would add, and how much of the curve's
    asymptotic gain is already reached. fits: {name: fit dict}; measured: {name: (C list, R list)}, C in
    completions; default_budget: completions of the default model. With flops_per_completion ({name: FLOPs of one
    completion}, from utils.models.cost.step_flops) an "x axis" toggle shows the same curves against training
    FLOPs, each model at the completions a FLOPs budget buys it: sizes compared at equal compute. Returns the
    widget (a cell's last line)."""
    import html
    import math

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
    flops = _flops("scaling_explorer", flops_per_completion, names)
    first = default_model if default_model in names else names[0]
    budgets = [int(2 ** i) for i in range(6, 18)]  # 64 .. 131072 completions
    options = {"completions": [(str(b), b) for b in budgets]}
    if flops:   # powers of 2 of the default model's cost, from 64 of the cheapest completion to 131072 of the dearest
        unit = flops[first]
        lo = math.floor(math.log2(budgets[0] * min(flops.values()) / unit))
        hi = math.ceil(math.log2(budgets[-1] * max(flops.values()) / unit))
        options["FLOPs"] = [(f"{unit * 2.0 ** k:.2e}", unit * 2.0 ** k) for k in range(lo, hi + 1)]

    def nearest(axis, x):
        return min((v for _, v in options[axis]), key=lambda v: abs(math.log(v / x)))

    model = w.Dropdown(options=names, value=first, description="model")
    budget = w.SelectionSlider(options=options["completions"], value=nearest("completions", default_budget),
                               description="budget")
    axis = w.ToggleButtons(options=list(options), value="completions", description="x axis")
    out, table = w.Output(), w.HTML()
    top = {name: max(measured[name][0]) for name in names}
    busy = []  # non-empty while new_axis swaps the budget's options, so that draw runs once

    def draw(_=None):
        if busy:
            return
        in_flops = axis.value == "FLOPs"
        k = flops if in_flops else dict.fromkeys(names, 1.0)   # the x axis: completions x k[name]
        rows = scaling_table(fits, budget.value, top, flops if in_flops else None)
        unit = "FLOPs" if in_flops else "completions"
        at = f"{budget.value:.2e}" if in_flops else str(budget.value)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(9, 3.6))
            xs = np.logspace(np.log10(options[axis.value][0][1]), np.log10(options[axis.value][-1][1]), 200)
            for name in names:
                f, bold = fits[name], name == model.value
                C = xs / k[name]
                inside = C <= top[name]
                line, = ax.plot(xs[inside], predict(f, C[inside]), lw=2.5 if bold else 1, alpha=1 if bold else 0.5,
                                label=name)
                ax.plot(xs[~inside], predict(f, C[~inside]), ls="--", lw=2.5 if bold else 1, color=line.get_color(),
                        alpha=1 if bold else 0.5)
                ax.plot(np.asarray(measured[name][0], dtype=float) * k[name], measured[name][1], "o",
                        ms=4 if bold else 2, color=line.get_color(), alpha=1 if bold else 0.5)
            ax.axvline(budget.value, color="gray", lw=1)
            ax.set_xscale("log")
            what = "training FLOPs: completions x FLOPs per completion" if in_flops else "completions sampled"
            ax.set_xlabel(f"RL compute ({what}, log scale; dashed: beyond the measured points)")
            ax.set_ylabel("held-out pass@1")
            ax.set_title(f"fitted sigmoids (descriptions, not findings); {model.value} at {at} {unit}: "
                         f"{rows[model.value]['accuracy']:.3f}")
            ax.legend(loc="lower right", fontsize=8)
            plt.show()
            plt.close(fig)  # shown: do not keep it open (a non-interactive backend would pile the figures up)
        cells = "".join(
            f"<tr style='font-weight:{'bold' if n == model.value else 'normal'}'><td>{html.escape(n)}</td>"
            + (f"<td>{flops[n]:.3g}</td><td>{r['completions']:.0f}</td>" if in_flops else "")
            + f"<td>{r['accuracy']:.3f}</td><td>{r['gain_if_doubled']:+.3f}</td><td>{r['share_of_gain']:.0%}</td>"
            f"<td>{fits[n]['A']:.3f}</td><td>{'yes' if r['extrapolated'] else 'no'}</td></tr>"
            for n, r in rows.items())
        head = ("<th>FLOPs per completion</th><th>completions it buys</th>" if in_flops else "")
        if in_flops:
            dear, cheap = max(names, key=flops.get), min(names, key=flops.get)
            note = (f"The x axis counts training FLOPs: each model's curve is its completions curve moved right by "
                    f"its FLOPs per completion ({html.escape(dear)}'s completion costs "
                    f"{flops[dear] / flops[cheap]:.2f} times {html.escape(cheap)}'s), so a budget buys a larger "
                    f"model fewer completions. The fit is the same curve on either axis: A, the share reached and "
                    f"what doubling adds (doubling the FLOPs doubles each model's completions) are those of the "
                    f"completions it buys. Compare sizes where both curves are solid (measured): a dashed curve, "
                    f"and so an 'extrapolated' row, is the fit's guess beyond that model's last measured point.")
        else:
            note = ("The axis counts completions, not FLOPs: a larger model's completion costs more"
                    + (" (switch the x axis to FLOPs to compare sizes at equal compute)" if flops else
                       ", so compare sizes at equal FLOPs (utils.models.cost.step_flops)") + ".")
        table.value = (f"<table><tr><th>model</th>{head}<th>pass@1 at {at} {unit}</th><th>doubling adds (fitted)</th>"
                       f"<th>share of A - R0 reached</th><th>asymptote A (fitted, not identified)</th>"
                       f"<th>extrapolated</th></tr>{cells}</table>"
                       f"<p>These read the fitted curves, not measurements: over one decade of compute the sigmoid's "
                       f"A and midpoint are not identified (Lab 07 section 4). {note}</p>")

    def new_axis(_=None):
        old = "FLOPs" if axis.value == "completions" else "completions"
        c = budget.value / (flops[model.value] if old == "FLOPs" else 1)   # the bold model's completions
        busy.append(1)
        try:
            budget.options = options[axis.value]
            budget.value = nearest(axis.value, c * (flops[model.value] if axis.value == "FLOPs" else 1))
        finally:
            busy.clear()
        draw()

    for widget in (model, budget):
        widget.observe(draw, names="value")
    axis.observe(new_axis, names="value")
    draw()
    return w.VBox([w.HBox([model, budget, axis] if flops else [model, budget]), out, table])
