"""Lab 03's explorer (the random-reward control) over its benchmark (benchmarks/results/lab03.json):
control_explorer and, without widgets, control_view; control_runs, a run and its true-reward reference;
control_answer_rows, the runs' greedy answers judged, and their HTML table."""
import numbers
import re

from utils import checks
from utils.verifiers.arithmetic import strict_match

_LR_SUFFIX = re.compile(r", lr [^,]+$")  # "random, 1 update, lr 1e-5" -> ", lr 1e-5"
_REPORT_KEYS = ("greedy", "pass@1", "pass@8", "entropy")


def _conditions(bench):
    """The benchmark's condition names, in the order of their first run."""
    return list(dict.fromkeys(r["condition"] for r in bench["runs"]))


def _seeds(bench, condition):
    return sorted({r["seed"] for r in bench["runs"] if r["condition"] == condition})


def _run(bench, condition, seed):
    return next((r for r in bench["runs"] if r["condition"] == condition and r["seed"] == seed), None)


def _bench(where, bench):
    """bench after checking: a benchmark dict (benchmarks/results/lab03.json): runs with condition and seed."""
    runs = bench.get("runs") if isinstance(bench, dict) else None
    if not isinstance(runs, list) or not all(isinstance(r, dict) and isinstance(r.get("condition"), str) and "seed" in r
                                             for r in runs) or not isinstance(bench.get("before"), dict) or \
            not isinstance(bench["before"].get("pass@1"), numbers.Real):
        raise ValueError(f"{where}: bench must be Lab 03's benchmark (json.load of benchmarks/results/lab03.json: "
                         f"before, and runs with condition and seed), got {checks._short(bench)}")
    return bench


def control_runs(bench, condition, seed):
    """Lab 03: the run of `condition` with `seed` in a benchmark dict (benchmarks/results/lab03.json) and the
    true-reward run it is shown beside: the same seed at the same learning rate, i.e. "true reward, lr 1e-5"
    for a condition ending in ", lr 1e-5" when the bench has it, else "true reward".
    Returns (run, reference run or None when the bench has no true-reward run with that seed, reference
    condition name); for a true-reward condition the reference is the run itself.
    An unknown condition, or a seed the condition was not run with, raises ValueError naming the valid ones."""
    names = _conditions(_bench("control_runs", bench))
    if condition not in names:
        raise ValueError(f"unknown condition {condition!r}; the benchmark has: {', '.join(map(repr, names))}")
    run = _run(bench, condition, seed)
    if run is None:
        raise ValueError(f"condition {condition!r} has no run with seed {seed!r}; "
                         f"its seeds: {_seeds(bench, condition)}")
    lr = _LR_SUFFIX.search(condition)
    ref_name = "true reward" + lr.group(0) if lr and "true reward" + lr.group(0) in names else "true reward"
    return run, _run(bench, ref_name, seed), ref_name


def control_answer_rows(prompts, answers, *run_answers):
    """The greedy answers of one or more runs to the same prompts, judged by strict_match.
    run_answers: per run, a list of completion texts (the first ones may be all there is), or None when the
    run stored none. Returns one row per prompt: (prompt, answer, [(text, right: bool) or None per run]),
    None where that run has no answer to that prompt."""
    prompts = checks.strings("control_answer_rows", "prompts", prompts)
    answers = checks.sequence("control_answer_rows", "answers", answers)
    if len(answers) != len(prompts):
        raise ValueError(f"control_answer_rows: prompts has {len(prompts)} entries and answers {len(answers)}: one "
                         f"answer per prompt")
    for j, texts in enumerate(run_answers):
        if texts is not None and (isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple))):
            raise ValueError(f"control_answer_rows: run_answers[{j}] must be a list of completion texts or None, got "
                             f"{checks._short(texts)}")
    rows = []
    for i, (prompt, answer) in enumerate(zip(prompts, answers)):
        cells = [None if texts is None or i >= len(texts) else (texts[i], bool(strict_match(texts[i], answer)))
                 for texts in run_answers]
        rows.append((prompt, str(answer), cells))
    return rows


def _answer_table_html(rows, headers):
    """rows from control_answer_rows; headers: one column title per run. A run that stored no answers gets
    one cell over all rows saying so."""
    import html

    missing = [all(cells[j] is None for _, _, cells in rows) for j in range(len(headers))]
    th = "".join(f"<th style='padding:2px 6px'>{html.escape(h)}</th>" for h in headers)
    out = [f"<table style='border-collapse:collapse;font-size:90%'><tr><th>prompt</th><th>answer</th>{th}</tr>"]
    for i, (prompt, answer, cells) in enumerate(rows):
        tds = []
        for j, cell in enumerate(cells):
            if missing[j]:
                if i == 0:
                    tds.append(f"<td rowspan='{len(rows)}' style='color:#777;padding:2px 6px'>"
                               "(answers not stored)</td>")
            elif cell is None:
                tds.append("<td style='color:#777;padding:2px 6px'>&mdash;</td>")
            else:
                text, ok = cell
                shown = html.escape(text.strip()) if text.strip() else "&empty;"
                tds.append(f"<td style='padding:2px 6px;background:{'#c8e6c9' if ok else '#ffcdd2'}'>"
                           f"{'&#10003;' if ok else '&#10007;'} <code>{shown}</code></td>")
        out.append(f"<tr><td><code>{html.escape(prompt)}</code></td><td><b>{html.escape(answer)}</b></td>"
                   f"{''.join(tds)}</tr>")
    totals = ""
    for j in range(len(headers)):
        judged = [cells[j][1] for _, _, cells in rows if cells[j] is not None]
        totals += "<td></td>" if missing[j] else f"<td style='padding:2px 6px'>{sum(judged)}/{len(judged)} right</td>"
    return "".join(out) + f"<tr><td colspan='2'>greedy, these prompts</td>{totals}</tr></table>"


def control_view(bench, condition, seed, prompts, answers):
    """Lab 03's explorer for one (condition, seed), without widgets: returns (fig, summary_html, table_html).
    fig: held-out pass@1 against the training step for the run and its true-reward reference (control_runs),
    with the base model's pass@1 as a dashed line. summary_html: one line, greedy/pass@1/pass@8/entropy after
    training for both runs. table_html: the prompts, their answers and each run's greedy answer, ✓ or ✗ by
    strict_match, or "(answers not stored)" for a bench written before runs kept their answers."""
    import html

    import matplotlib.pyplot as plt

    run, ref, ref_name = control_runs(bench, condition, seed)
    control_answer_rows(prompts, answers)  # checks them before a figure is drawn
    shown = [(condition, run)] if ref is run else [(condition, run), (ref_name, ref)]
    label = lambda name: f"{name} (seed {seed})"  # noqa: E731

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for (name, r), color in zip(shown, ("tab:orange", "tab:blue")):
        if r is not None and r.get("curve"):
            ax.plot(*zip(*r["curve"]), marker="o", ms=3, color=color, label=label(name))
    ax.axhline(bench["before"]["pass@1"], color="gray", ls="--", label="base model (pass@1 over 8 samples per problem)")
    n_eval = bench.get("config", {}).get("eval_n")
    vs = " (the reference condition)" if ref is run else f" vs {ref_name}"
    ax.set_title(f"{condition}{vs}, seed {seed}\nheld-out sampled pass@1, 1 sample per problem"
                 + (f" on {n_eval} test problems" if n_eval else "") + " (noisy)", fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel("held-out pass@1 (accuracy, 0-1)")
    ax.set_xlim(left=0)  # the base model's line stands for step 0
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()

    def numbers(name, r):
        if r is None:
            return f"<b>{html.escape(label(name))}</b>: not in the benchmark"
        return f"<b>{html.escape(label(name))}</b>: " + ", ".join(
            f"{k} {r['after'][k]:.3f}" for k in _REPORT_KEYS if k in r["after"])
    line = "After training, on the test split: " + " &nbsp;|&nbsp; ".join(numbers(n, r) for n, r in shown)
    lr = lambda r: (r or {}).get("config", {}).get("lr")  # noqa: E731
    if ref is not None and ref is not run and lr(ref) != lr(run):
        line += f" &nbsp;(the reference ran at lr {lr(ref):g}, this run at lr {lr(run):g}: not like with like)"
    have = [(n, r) for n, r in shown if r is not None]
    rows = control_answer_rows(prompts, answers, *[r.get("answers") for _, r in have])
    return fig, line, _answer_table_html(rows, [f"{label(n)}, greedy" for n, _ in have])


def control_explorer(bench, prompts=None, answers=None, default_condition=None, default_seed=None):
    """Lab 03: pick a condition and a seed from the benchmark (bench = json.load(benchmarks/results/lab03.json));
    see its held-out pass@1 curve beside the true-reward run's with the same seed and learning rate, the four
    numbers after training for both, and both runs' greedy answers to the first test prompts (✓/✗).
    prompts, answers: the prompts the runs' stored "answers" belong to; by default the first N_SHOWN rows of
    the test split. default_condition: by default "random, 1 update" when the bench has it, else its first
    condition. Returns the widget."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from utils.eval.control import N_SHOWN

    names = _conditions(_bench("control_explorer", bench))
    if not names:
        raise ValueError("the benchmark has no runs")
    if default_condition is not None and (not isinstance(default_condition, str) or default_condition not in names):
        raise ValueError(f"control_explorer: default_condition: unknown condition {checks._short(default_condition)}; "
                         f"the benchmark has: {', '.join(map(repr, names))}")
    if prompts is not None or answers is not None:
        if prompts is None or answers is None:
            raise ValueError("control_explorer: give prompts and answers together (or neither: the test split's)")
        control_answer_rows(prompts, answers)
    if default_condition is None:
        default_condition = "random, 1 update" if "random, 1 update" in names else names[0]
    seeds = _seeds(bench, default_condition)
    if default_seed is not None and (isinstance(default_seed, bool) or default_seed not in seeds):
        raise ValueError(f"control_explorer: default_seed: condition {default_condition!r} has no run with seed "
                         f"{checks._short(default_seed)}; its seeds: {seeds}")
    control_runs(bench, default_condition, seeds[0] if seeds and default_seed is None else default_seed)  # checks
    if prompts is None or answers is None:
        from utils.tasks.arithmetic import load_split

        test = load_split("test", n=N_SHOWN)
        prompts, answers = test["prompt"], test["answer"]

    condition = w.Dropdown(options=names, value=default_condition, description="condition",
                           layout=w.Layout(width="420px"))
    seed = w.ToggleButtons(options=seeds, value=seeds[0] if default_seed is None else default_seed,
                           description="seed", style={"button_width": "48px"})
    out, summary, table = w.Output(), w.HTML(), w.HTML()
    busy = []  # non-empty while new_condition swaps the seed options, so that draw runs once

    def draw(_=None):
        if busy:
            return
        with out:
            out.clear_output(wait=True)
            fig, summary.value, table.value = control_view(bench, condition.value, seed.value, prompts, answers)
            plt.show()
            plt.close(fig)  # shown: do not keep it open (a non-interactive backend would pile the figures up)

    def new_condition(_=None):
        s, keep = _seeds(bench, condition.value), seed.value
        busy.append(1)
        try:
            seed.options = s
            seed.value = keep if keep in s else s[0]
        finally:
            busy.clear()
        draw()

    condition.observe(new_condition, names="value")
    seed.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([condition, seed]), summary, w.HBox([out, table])])
