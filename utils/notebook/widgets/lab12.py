"""Lab 12's explorer (self-play and label-free rewards): gate_explorer, the proposer's choice of kinds at a step of a
run and how many of its groups a pass-rate band (R-Zero's filter) would keep; gate_rows and gate_totals compute it
for one reading, gate_view draws it.

Each kind's groups are read from one number, the solver's held-out pass rate on that kind: a group of G samples of
it has Binomial(G, rate) right (utils.rl.proposer.band_share). This is an approximation: it takes every problem of
a kind to be as hard as the kind's mean. A kind that mixes easy and hard problems has more groups with no spread
than this says (always, for the same mean: rate**G + (1 - rate)**G is convex) and, for a kind near the band's
middle, fewer inside the band."""
from utils import checks

APPROXIMATION = ("it takes every problem of a kind to be as hard as the kind's mean held-out pass rate; a kind that "
                 "mixes easy and hard problems has more groups with no spread than this, and (near the band's middle) "
                 "fewer inside the band")


def _band(where, band):
    lo, hi = (checks.number(where, f"band[{i}]", v, lo=0, hi=1) for i, v in enumerate(
        checks.sequence(where, "band", band, length=2, of="(lo, hi)")))
    if lo > hi:
        raise ValueError(f"{where}: band=({lo}, {hi}) must have lo <= hi (a band of pass rates)")
    return lo, hi


def _probs(where, name, probs, n):
    """probs as a float array of n probabilities in [0, 1] summing to 1 (to 1e-6)."""
    import numpy as np

    p = checks.array(where, name, probs, dims=1)
    if len(p) != n or (p < 0).any() or (p > 1).any() or abs(p.sum() - 1) > 1e-6:
        raise ValueError(f"{where}: {name} must hold the proposer's {n} probabilities, one per kind of "
                         f"utils.tasks.arithmetic.KINDS, each in [0, 1] and summing to 1, got {checks._short(probs)}")
    return np.asarray(p, dtype=float)


def _rates(where, name, rates, n):
    p = checks.array(where, name, rates, dims=1)
    if len(p) != n or (p < 0).any() or (p > 1).any():
        raise ValueError(f"{where}: {name} must hold the solver's {n} pass rates, one per kind of "
                         f"utils.tasks.arithmetic.KINDS, each in [0, 1], got {checks._short(rates)}")
    return p


def _gate(where, probs, rates, band, group_size):
    from utils.eval.health import expected_zero_spread
    from utils.rl.proposer import band_share
    from utils.tasks.arithmetic import KINDS, kind_name

    probs, rates = _probs(where, "probs", probs, len(KINDS)), _rates(where, "rates", rates, len(KINDS))
    band = _band(where, band)
    G = checks.number(where, "group_size", group_size, lo=1, hi=1_000, integer=True)
    kept, flat = band_share(rates, band, G), expected_zero_spread(rates, G)   # [K] each
    return [{"kind": kind_name(k), "prob": float(p), "rate": float(r), "in_band": float(b), "no_spread": float(z)}
            for k, p, r, b, z in zip(KINDS, probs, rates, kept, flat)]


def gate_rows(probs, rates, band=(0.25, 0.75), group_size=8):
    """One row per kind of utils.tasks.arithmetic.KINDS, in that order: {"kind": kind_name, "prob": the proposer's
    probability of it, "rate": the solver's pass rate on it, "in_band": band_share(rate, band, group_size), the
    chance that a group of group_size samples of it has a pass rate j / G in [lo, hi], "no_spread": rate**G +
    (1 - rate)**G, the chance that the group is all right or all wrong}. probs: 18 probabilities summing to 1; rates:
    18 pass rates in [0, 1]; band: (lo, hi) with 0 <= lo <= hi <= 1. Approximation: every problem of a kind is taken
    to be as hard as the kind's mean rate (the module docstring)."""
    return _gate("gate_rows", probs, rates, band, group_size)


def gate_totals(probs, rates, band=(0.25, 0.75), group_size=8):
    """gate_rows' columns weighted by the proposer's probabilities: {"in_band": the expected share of the proposer's
    groups whose pass rate lies in the band (the groups the gate keeps), "no_spread": the expected share with no
    spread}. The same approximation as gate_rows."""
    return _totals(_gate("gate_totals", probs, rates, band, group_size))


def _totals(rows):
    return {key: float(sum(r["prob"] * r[key] for r in rows)) for key in ("in_band", "no_spread")}


def _runs(where, runs):
    """{arm: (steps, {step: probs}, [(step, per_kind rates)] sorted by step)} after checking runs."""
    from utils.tasks.arithmetic import KINDS

    if not isinstance(runs, dict) or not runs:
        raise ValueError(f"{where}: runs must be a dict {{arm name: run}}, at least one, each run with 'probs' "
                         f"[[step, [18 probabilities]], ...] and 'by_length' [{{'step', 'per_kind'}}, ...], got "
                         f"{checks._short(runs)}")
    out = {}
    for arm, run in runs.items():
        at = f"runs[{arm!r}]"
        if not isinstance(arm, str) or not isinstance(run, dict) or not isinstance(run.get("probs"), (list, tuple)) \
                or not run["probs"] or not isinstance(run.get("by_length"), (list, tuple)) or not run["by_length"]:
            raise ValueError(f"{where}: {at} must be a run dict (its name a str) with a non-empty 'probs' [[step, "
                             f"[18 probabilities]], ...] and 'by_length' [{{'step', 'per_kind'}}, ...], got "
                             f"{checks._short(run)}")
        probs, readings = {}, []
        for i, entry in enumerate(run["probs"]):
            if not isinstance(entry, (list, tuple)) or len(entry) != 2:
                raise ValueError(f"{where}: {at}['probs'][{i}] must be [step, [18 probabilities]], got "
                                 f"{checks._short(entry)}")
            step = checks.number(where, f"{at}['probs'][{i}][0] (a step)", entry[0], lo=0, integer=True)
            if step in probs:
                raise ValueError(f"{where}: {at}['probs'] holds step {step} twice")
            probs[step] = _probs(where, f"{at}['probs'][{i}][1]", entry[1], len(KINDS))
        for i, reading in enumerate(run["by_length"]):
            if not isinstance(reading, dict) or "step" not in reading or "per_kind" not in reading:
                raise ValueError(f"{where}: {at}['by_length'][{i}] must be a dict with 'step' and 'per_kind', got "
                                 f"{checks._short(reading)}")
            step = checks.number(where, f"{at}['by_length'][{i}]['step']", reading["step"], lo=0, integer=True)
            readings.append((step, _rates(where, f"{at}['by_length'][{i}]['per_kind']", reading["per_kind"],
                                          len(KINDS))))
        readings.sort(key=lambda r: r[0])
        steps = sorted(probs)
        if steps[0] < readings[0][0]:
            raise ValueError(f"{where}: {at} has the proposer's probabilities at step {steps[0]} but no 'by_length' "
                             f"reading at or before it (the first is at step {readings[0][0]})")
        out[arm] = (steps, probs, readings)
    return out


def _reading(where, arm, step, checked):
    """(probs, rates, the step the rates were read at) of arm `arm` at stored step `step`."""
    if not isinstance(arm, str) or arm not in checked:
        raise ValueError(f"{where}: arm={checks._short(arm)} must be one of runs' arms {list(checked)}")
    steps, probs, readings = checked[arm]
    if checks.number(where, "step", step, integer=True) not in probs:
        raise ValueError(f"{where}: step={checks._short(step)} must be one of the steps stored for {arm!r}: {steps}")
    at, rates = [r for r in readings if r[0] <= step][-1]
    return probs[step], rates, at


def _line(step, at, band, totals, group_size):
    lo, hi = band
    return (f"At step {step}, the band [{lo:g}, {hi:g}] keeps an expected {totals['in_band']:.1%} of the proposer's "
            f"groups of G = {group_size}, and {totals['no_spread']:.1%} of them have no spread (all right or all "
            f"wrong). An approximation from each kind's held-out pass rate (read at step {at}): {APPROXIMATION}.")


def _view(where, checked, arm, step, band, group_size):
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    probs, rates, at = _reading(where, arm, step, checked)
    rows = _gate(where, probs, rates, band, group_size)
    totals, band = _totals(rows), _band(where, band)
    G = checks.number(where, "group_size", group_size, lo=1, hi=1_000, integer=True)
    shades = _shades()
    fig, ax = plt.subplots(figsize=(11, 4.2))
    x = np.arange(len(rows))
    bars = ax.bar(x, [r["prob"] for r in rows], color=[shades(r["in_band"]) for r in rows], edgecolor="#555")
    for bar, r in zip(bars, rows):
        bar.set_gid(f"{r['kind']}|{r['rate']!r}|{r['in_band']!r}")
    ax.set_xticks(x, [f"{r['kind']} ({r['rate']:.2f})" for r in rows], rotation=60, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(f"kind of problem (in brackets: the solver's held-out pass rate on it, read at step {at})")
    ax.set_ylabel("the proposer's probability\nof the kind (0-1)")
    ax.set_title(f"{arm}, step {step}: the proposer's kinds, each shaded by the expected share of its groups of "
                 f"G = {G}\nwhose pass rate lies in [{band[0]:g}, {band[1]:g}]: the band keeps "
                 f"{totals['in_band']:.1%} of the proposer's groups, {totals['no_spread']:.1%} have no spread",
                 fontsize=10)
    fig.colorbar(ScalarMappable(norm=Normalize(0, 1), cmap=shades), ax=ax, pad=0.01,
                 label="share of the kind's groups\ninside the band (0-1)")
    fig.tight_layout()
    return fig, _line(step, at, band, totals, G)


def _shades():
    """The bars' colours, share 0 to 1: matplotlib's Greens from 0.15 up (a kind the band never keeps is pale, not
    white)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap

    return ListedColormap(plt.get_cmap("Greens")(np.linspace(0.15, 1, 256)))


def gate_view(runs, arm, step, band=(0.25, 0.75), group_size=8):
    """The figure gate_explorer draws, and its line of text, for one arm at one stored step: the proposer's
    probability of each kind as a bar (kind names on the axis, each with the solver's held-out pass rate on it from
    the latest by_length reading at or before the step), each bar shaded by the expected share of its groups whose
    pass rate lies in band (gate_rows' in_band); the line: the expected share of the proposer's groups the band
    keeps and the share with no spread (gate_totals), and the approximation they rest on (every problem of a kind as
    hard as the kind's mean: a kind that mixes easy and hard problems has more groups with no spread, and, near the
    band's middle, fewer inside it). runs: as gate_explorer's. Returns (figure, line)."""
    return _view("gate_view", _runs("gate_view", runs), arm, step, band, group_size)


def gate_explorer(runs, default=None, group_size=8):
    """Lab 12's presenter widget: pick an arm, a stored step and a band of pass rates (R-Zero's filter); see the
    proposer's probability of each of the 18 kinds as bars, each shaded by the expected share of its groups inside
    the band, and a line with the expected share of the proposer's groups the band keeps and the share with no
    spread (gate_view). runs: {arm name: {"probs": [[step, [18 probabilities]], ...], "by_length": [{"step",
    "per_kind": [18 held-out pass rates]}, ...]}} (one seed's runs of benchmarks/results/lab12.json; other keys are
    not read); default: the arm shown first (None: the first). The solver's rate on a kind at a step is the latest
    by_length reading at or before it; the band slider moves in eighths (the pass rates a group of 8 can have).

    Approximation: every problem of a kind is taken to be as hard as the kind's mean held-out pass rate. A kind that
    mixes easy and hard problems has more groups with no spread than shown, and, near the band's middle, fewer inside
    the band. The rates are the verifier's, on held-out problems: where an arm was paid by majority vote, the share
    of a group that agrees with its majority, which is what that arm's band gated on, is higher. Returns the widget
    (a cell's last line)."""
    import html

    import ipywidgets as w
    import matplotlib.pyplot as plt

    from utils.notebook.widgets.common import _default

    where = "gate_explorer"
    checked = _runs(where, runs)
    _default(where, "default", default, checked)
    group_size = checks.number(where, "group_size", group_size, lo=1, hi=1_000, integer=True)
    arms = list(checked)
    first = default if default in arms else arms[0]
    arm = w.Dropdown(options=arms, value=first, description="arm", layout=w.Layout(width="420px"))
    step = w.SelectionSlider(options=checked[first][0], value=checked[first][0][-1], description="step")
    band = w.FloatRangeSlider(value=(0.25, 0.75), min=0.0, max=1.0, step=0.125, description="band",
                              readout_format=".3f")
    out, text = w.Output(), w.HTML()
    busy = []  # non-empty while new_arm swaps the step's options, so that draw runs once

    def draw(_=None):
        if busy:
            return
        with out:
            out.clear_output(wait=True)
            fig, line = _view(where, checked, arm.value, step.value, band.value, group_size)
            plt.show()
            plt.close(fig)  # shown: do not keep it open (a non-interactive backend would pile the figures up)
        text.value = f"<p>{html.escape(line)}</p>"

    def new_arm(_=None):
        steps, old = checked[arm.value][0], step.value
        busy.append(1)
        try:
            step.options = steps
            step.value = old if old in steps else steps[-1]
        finally:
            busy.clear()
        draw()

    arm.observe(new_arm, names="value")
    for widget in (step, band):
        widget.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([arm, step, band]), out, text])
