"""Widgets for live demos."""
import numbers
import re
from collections import Counter

from utils import checks
from utils.eval.metrics import sample_in_batches
from utils.tasks.arithmetic import solve
from utils.verifiers.arithmetic import strict_match


def _models(where, models):
    if not isinstance(models, dict) or not models:
        raise ValueError(f"{where}: models must be a dict {{name: model}}, at least one, got {checks._short(models)}")
    for name, m in models.items():
        checks.model(where, f"models[{name!r}]", m)


def _verifiers(where, verifiers):
    if not isinstance(verifiers, dict) or not verifiers:
        raise ValueError(f"{where}: verifiers must be a dict {{name: reward_fn}}, at least one, got "
                         f"{checks._short(verifiers)}")
    for name, fn in verifiers.items():
        checks.function(where, f"verifiers[{name!r}]", fn)


def _text(where, name, x):
    if not isinstance(x, str):
        raise ValueError(f"{where}: {name} must be a str, got {checks._short(x)}")
    return x


def _default(where, name, x, allowed):
    """A widget's default choice: None (the first) or one of `allowed`."""
    if x is not None and (not isinstance(x, str) or x not in allowed):
        raise ValueError(f"{where}: {name}={checks._short(x)} must be None or one of {list(allowed)}")


def _counts(counts, n):
    where = "pass_at_k_explorer"
    if not isinstance(counts, dict) or not counts or not all(isinstance(k, tuple) and len(k) == 2 for k in counts):
        raise ValueError(f"{where}: counts must be a dict {{(model name, split): right answers per problem}}, got "
                         f"{checks._short(counts)}")
    for key, c in counts.items():
        c = checks.array(where, f"counts[{key!r}]", c, dims=1)
        if not len(c) or (c < 0).any() or (c > n).any() or (c != c.round()).any():
            raise ValueError(f"{where}: counts[{key!r}] must hold whole counts of right answers from 0 to n={n}")


def _fits(where, fits):
    if not isinstance(fits, dict) or not fits:
        raise ValueError(f"{where}: fits must be a dict {{name: fit_sigmoid's dict}}, got {checks._short(fits)}")
    for name, f in fits.items():
        if not isinstance(f, dict) or any(k not in f for k in ("A", "C_mid", "B", "R0")):
            raise ValueError(f"{where}: fits[{name!r}] must be fit_sigmoid's dict (A, C_mid, B, R0), got "
                             f"{checks._short(f)}")
        for k in ("A", "R0"):
            checks.number(where, f"fits[{name!r}][{k!r}]", f[k])
        for k in ("C_mid", "B"):
            checks.number(where, f"fits[{name!r}][{k!r}]", f[k], lo=0, lo_open=True)
    return fits


_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*([+\-])\s*(\d{1,3})\s*=?\s*$")


def parse_problem(text):
    """'37 + 29' or '37+29=' -> (prompt '37+29=', answer '66'); anything else -> ValueError."""
    m = _PROBLEM.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"text={checks._short(text, 40)}: type a problem like 37+29 or 512-48 "
                         "(operands up to 3 digits, + or -: the task has no other operators)")
    a, op, b = int(m[1]), m[2], int(m[3])
    return f"{a}{op}{b}=", str(solve(a, op, b))


def answer_table(models, tokenizer, text, k=8, temperature=1.0, seed=0):
    """For each named model, k sampled answers to the problem `text` (e.g. "37+29") and how many are right.
    Returns (prompt, answer, {name: (answers list, n_correct, most common answer)})."""
    _models("answer_table", models)
    prompt, answer = parse_problem(text)
    out = {}
    for name, model in models.items():
        _, ro = next(sample_in_batches(model, tokenizer, [prompt], k=k, temperature=temperature, seed=seed))
        n_ok = sum(strict_match(t, answer) for t in ro.texts)
        out[name] = (ro.texts, int(n_ok), Counter(ro.texts).most_common(1)[0][0])
    return prompt, answer, out


def compare_models(models, tokenizer, default="37+29", k=8):
    """Type a problem, sample k answers from each model, see which are right.
    models: {name: model}. Returns the widget (display it as a cell's last line)."""
    import html

    import ipywidgets as w

    _models("compare_models", models)
    checks.tokenizer("compare_models", "tokenizer", tokenizer)
    _text("compare_models", "default", default)
    k = checks.number("compare_models", "k", k, lo=1, hi=32, integer=True)
    box = w.Text(value=default, description="Problem:", continuous_update=False, layout=w.Layout(width="260px"))
    ks = w.IntSlider(value=k, min=1, max=32, description="samples K")
    temp = w.FloatSlider(value=1.0, min=0.1, max=2.0, step=0.1, description="temperature")
    go = w.Button(description="Sample", button_style="primary")
    out = w.HTML()

    def run(_=None):
        try:
            prompt, answer, table = answer_table(models, tokenizer, box.value, ks.value, temp.value)
        except ValueError as e:
            out.value = f"<b style='color:#b00'>{html.escape(str(e))}</b>"
            return
        rows = [f"<p><code>{html.escape(prompt)}</code> correct answer <b>{answer}</b></p><table>"]
        for name, (texts, n_ok, top) in table.items():
            cells = " ".join(
                f"<span style='padding:2px 5px;margin:1px;border-radius:3px;background:"
                f"{'#c8e6c9' if strict_match(t, answer) else '#ffcdd2'}'>{html.escape(t) or '&empty;'}</span>"
                for t in texts)
            rows.append(f"<tr><td><b>{html.escape(name)}</b></td><td>{n_ok}/{len(texts)} right</td>"
                        f"<td>{cells}</td></tr>")
        out.value = "".join(rows) + "</table>"

    go.on_click(run)
    box.observe(run, names="value")  # Enter or leaving the box
    run()
    return w.VBox([w.HBox([box, go]), w.HBox([ks, temp]), out])


def verifier_playground(verifiers, default_problem="37+29", default_output="66"):
    """Type a problem and an output; see every verifier's reward side by side.
    verifiers: {name: reward_fn} in the shared signature. Returns the widget."""
    import html

    import ipywidgets as w

    _verifiers("verifier_playground", verifiers)
    _text("verifier_playground", "default_problem", default_problem)
    _text("verifier_playground", "default_output", default_output)
    prob = w.Text(value=default_problem, description="Problem:", continuous_update=False,
                  layout=w.Layout(width="260px"))
    text = w.Text(value=default_output, description="Output:", continuous_update=True,
                  layout=w.Layout(width="420px"))
    out = w.HTML()

    def run(_=None):
        try:
            prompt, answer = parse_problem(prob.value)
        except ValueError as e:
            out.value = f"<b style='color:#b00'>{html.escape(str(e))}</b>"
            return
        rows = [f"<p><code>{html.escape(prompt)}</code> correct answer <b>{answer}</b>; output "
                f"<code>{html.escape(repr(text.value))}</code></p><table>"]
        for name, fn in verifiers.items():
            r = fn([text.value], [answer])[0]
            color = "#c8e6c9" if r == 1.0 else "#ffcdd2"
            rows.append(f"<tr><td><b>{html.escape(name)}</b></td>"
                        f"<td style='background:{color};padding:2px 8px'>{r:.1f}</td></tr>")
        out.value = "".join(rows) + "</table>"

    prob.observe(run, names="value")
    text.observe(run, names="value")
    run()
    return w.VBox([w.HBox([prob, text]), out])


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


def answer_distribution_explorer(snapshots, prompts, answers, default_run=None):
    """Lab 04: pick a run, a training step and a problem; see the answers the policy sampled there.
    snapshots: {run name: {step: [one Counter of answer -> count per prompt]}} (from
    utils.metrics.answer_distribution); prompts/answers: the problems the Counters belong to.
    Returns the widget."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    if not isinstance(snapshots, dict):
        raise ValueError(f"answer_distribution_explorer: snapshots must be a dict {{run name: {{step: [Counter per "
                         f"prompt]}}}}, got {checks._short(snapshots)}")
    runs = list(snapshots)
    if not runs or any(not isinstance(snapshots[r], dict) or not snapshots[r] for r in runs):
        raise ValueError("snapshots must map each run name to a non-empty {step: [Counter per prompt]} dict")
    prompts = checks.strings("answer_distribution_explorer", "prompts", prompts)
    answers = checks.sequence("answer_distribution_explorer", "answers", answers)
    if len(answers) != len(prompts):
        raise ValueError(f"answer_distribution_explorer: prompts has {len(prompts)} entries and answers "
                         f"{len(answers)}: one answer per prompt")
    for r in runs:
        for step, per_prompt in snapshots[r].items():
            if not isinstance(per_prompt, (list, tuple)) or len(per_prompt) != len(prompts) or \
                    not all(isinstance(c, dict) for c in per_prompt):
                raise ValueError(f"answer_distribution_explorer: snapshots[{r!r}][{step!r}] must hold one Counter of "
                                 f"answers per prompt ({len(prompts)} prompts), got {checks._short(per_prompt)}")
    _default("answer_distribution_explorer", "default_run", default_run, runs)
    run = w.Dropdown(options=runs, value=default_run if default_run in runs else runs[0], description="run")
    steps = sorted(snapshots[run.value])
    step = w.SelectionSlider(options=steps, value=steps[-1], description="step")
    problem = w.Dropdown(options=[(f"{p}  (answer {a})", i) for i, (p, a) in enumerate(zip(prompts, answers))],
                         value=0, description="problem")
    out = w.Output()

    def draw(_=None):
        counts = snapshots[run.value][step.value][problem.value]
        k, right = sum(counts.values()), str(answers[problem.value])
        top = counts.most_common(12)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(9, 3))
            ax.bar(range(len(top)), [c for _, c in top],
                   color=["tab:green" if a == right else "tab:gray" for a, _ in top])
            ax.set_xticks(range(len(top)), [repr(a) if a == "" else a for a, _ in top], rotation=30)
            ax.set_xlabel("sampled answer (green = right)")
            ax.set_ylabel(f"count of {k} samples")
            ax.set_title(f"{run.value}, step {step.value}, {prompts[problem.value]}  "
                         f"{len(counts)} distinct answers of {k}; right {counts.get(right, 0)}/{k}")
            plt.show()

    def new_run(_=None):
        s = sorted(snapshots[run.value])
        step.options = s
        step.value = s[-1]
        draw()

    run.observe(new_run, names="value")
    for widget in (step, problem):
        widget.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([run, step, problem]), out])


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


_SUM = re.compile(r"^\s*(\d{1,6})\s*\+\s*(\d{1,6})\s*:?\s*$")


def trace_inspector(verifiers, examples=None, default_problem="478+356", default_output=None):
    """Lab 06: a trace step by step. Pick an example (a dict {label: (problem, completion)}, e.g. samples from the
    runs) or type a problem 'a+b' and a completion; see each written step against the right one (parses, true sum,
    right step in this place) and every verifier's reward (verifiers: {name: reward_fn} in the shared signature,
    called with the columns answer, a and b). Returns the widget."""
    import html

    import ipywidgets as w

    from utils.tasks.scratchpad import format_step, format_trace, steps_for
    from utils.verifiers.traces import judge

    _verifiers("trace_inspector", verifiers)
    if examples is not None and (not isinstance(examples, dict) or not all(
            isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, str) for x in v)
            for v in examples.values())):
        raise ValueError(f"trace_inspector: examples must be a dict {{label: (problem, completion)}} of strings, or "
                         f"None, got {checks._short(examples)}")
    _text("trace_inspector", "default_problem", default_problem)
    if default_output is not None:
        _text("trace_inspector", "default_output", default_output)
    examples = dict(examples or {})
    if default_output is None:
        m = _SUM.match(default_problem)
        a, b = (int(m[1]), int(m[2])) if m else (478, 356)
        default_output = format_trace(steps_for(a, b), a + b)
    pick = w.Dropdown(options=["(type your own)"] + list(examples), description="Example:",
                      layout=w.Layout(width="520px"))
    prob = w.Text(value=default_problem, description="Problem:", continuous_update=False,
                  layout=w.Layout(width="220px"))
    text = w.Text(value=default_output, description="Trace:", continuous_update=True, layout=w.Layout(width="620px"))
    out = w.HTML()
    mark = lambda ok: "<td style='background:#c8e6c9;padding:1px 6px'>yes</td>" if ok else \
        "<td style='background:#ffcdd2;padding:1px 6px'>no</td>"  # noqa: E731

    def run(_=None):
        m = _SUM.match(prob.value or "")
        if not m:
            out.value = ("<b style='color:#b00'>type a problem like 478+356 (two non-negative numbers of up to six "
                         "digits joined by +: the scratchpad task adds)</b>")
            return
        a, b = int(m[1]), int(m[2])
        v = judge(text.value, a, b)
        want = [format_step(s) for s in steps_for(a, b)]
        rows = [f"<p><code>{a}+{b}:</code> right trace <code>{html.escape(format_trace(steps_for(a, b), a + b))}"
                f"</code></p><table><tr><th>#</th><th>written</th><th>right step here</th><th>parses</th>"
                f"<th>true sum</th><th>right step</th></tr>"]
        for i, p in enumerate(v["per_step"]):
            rows.append(f"<tr><td>{i + 1}</td><td><code>{html.escape(p['text'])}</code></td>"
                        f"<td><code>{want[i] if i < len(want) else '(none: extra)'}</code></td>"
                        f"{mark(p['parses'])}{mark(p['arithmetic'])}{mark(p['right'])}</tr>")
        for i in range(len(v["per_step"]), len(want)):
            rows.append(f"<tr><td>{i + 1}</td><td>(missing)</td><td><code>{want[i]}</code></td>"
                        f"{mark(False)}{mark(False)}{mark(False)}</tr>")
        answer = v["parsed"]["answer"] if v["parsed"] else None
        rows.append(f"</table><p>answer written: <b>{html.escape(str(answer))}</b> (right: {a + b}); well formed: "
                    f"{'yes' if v['well_formed'] else 'no'}; answer follows from the steps: "
                    f"{'yes' if v['answer_follows'] else 'no'}</p><table><tr><th>verifier</th><th>reward</th></tr>")
        for name, fn in verifiers.items():
            r = fn([text.value], answer=[str(a + b)], a=[a], b=[b])[0]
            color = "#c8e6c9" if r >= 1.0 else "#fff9c4" if r > 0 else "#ffcdd2"
            rows.append(f"<tr><td><b>{html.escape(name)}</b></td>"
                        f"<td style='background:{color};padding:2px 8px'>{r:.2f}</td></tr>")
        out.value = "".join(rows) + "</table>"

    def choose(_=None):
        if pick.value in examples:
            p, c = examples[pick.value]
            prob.unobserve(run, names="value")  # one redraw, not two
            prob.value = p
            prob.observe(run, names="value")
            text.value = c
            run()

    pick.observe(choose, names="value")
    prob.observe(run, names="value")
    text.observe(run, names="value")
    run()
    return w.VBox([pick, w.HBox([prob]), text, out])


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
            ax.set_title(f"fitted sigmoids; {model.value} at {budget.value} completions: "
                         f"{rows[model.value]['accuracy']:.3f}")
            ax.legend(loc="lower right", fontsize=8)
            plt.show()
        cells = "".join(
            f"<tr style='font-weight:{'bold' if n == model.value else 'normal'}'><td>{html.escape(n)}</td>"
            f"<td>{r['accuracy']:.3f}</td><td>{r['gain_if_doubled']:+.3f}</td><td>{r['share_of_gain']:.0%}</td>"
            f"<td>{fits[n]['A']:.3f}</td><td>{'yes' if r['extrapolated'] else 'no'}</td></tr>"
            for n, r in rows.items())
        table.value = (f"<table><tr><th>model</th><th>pass@1 at {budget.value}</th><th>doubling adds</th>"
                       f"<th>share of A - R0 reached</th><th>asymptote A</th><th>extrapolated</th></tr>{cells}"
                       f"</table>")

    for widget in (model, budget):
        widget.observe(draw, names="value")
    draw()
    return w.VBox([w.HBox([model, budget]), out, table])


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


def episode_rows(model, tokenizer, problem, k=8, tool=True, seed=0, max_new_tokens=64):
    """k sampled episodes of `problem` ('a+b'; the scratchpad task's prompt 'a+b:'), with a fresh calculator when
    tool=True: a list of k lists of (token text, who: 'policy' or 'env') in the order written (EOS shown as '<eos>').
    Raises ValueError for a problem that is not 'a+b'."""
    import torch

    from utils.models.policy import sample
    from utils.tasks.tools import Calculator

    checks.model("episode_rows", "model", model)
    checks.tokenizer("episode_rows", "tokenizer", tokenizer)
    m = _SUM.match(problem) if isinstance(problem, str) else None
    if not m:
        raise ValueError(f"episode_rows: problem={checks._short(problem)} must be 'a+b' (two non-negative numbers of "
                         f"up to six digits)")
    k = checks.number("episode_rows", "k", k, lo=1, hi=64, integer=True)
    checks.flag("episode_rows", "tool", tool)
    seed = checks.number("episode_rows", "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    prompt = f"{int(m[1])}+{int(m[2])}:"
    max_new_tokens = checks.number("episode_rows", "max_new_tokens", max_new_tokens, lo=1, hi=10_000, integer=True)
    from utils.models.policy import fits
    fits("episode_rows", "problem", model, tokenizer, [prompt], max_new_tokens)
    env = Calculator(tokenizer, k) if tool else None
    ro = sample(model, tokenizer, [prompt], k=k, max_new_tokens=max_new_tokens,
                generator=torch.Generator().manual_seed(seed), env=env)
    loss = ro.loss_mask if ro.loss_mask is not None else ro.completion_mask
    rows = []
    for i in range(k):
        n = int(ro.completion_mask[i].sum())
        ids = ro.completion_ids[i, :n].tolist()
        rows.append([("<eos>" if t == tokenizer.eos_token_id else tokenizer.decode([t]),
                      "policy" if loss[i, j] else "env") for j, t in enumerate(ids)])
    return rows


def episode_view(tokens, upto, a, b):
    """HTML for one episode (episode_rows' list of (token, who)) shown up to token `upto` (all once upto >= its
    length): the policy's tokens blue (they carry loss), the environment's grey (read, not trained on); once the
    episode is whole, what the gameable check (tool_echo_reward) and the task's check (outcome_reward) pay, and the
    truth a + b."""
    import html

    from utils.verifiers.tools import tool_echo_reward
    from utils.verifiers.traces import outcome_reward

    upto = checks.number("episode_view", "upto", upto, lo=0, integer=True)
    if isinstance(tokens, (str, bytes, dict)) or not isinstance(tokens, (list, tuple)) or not all(
            isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], str) and x[1] in ("policy", "env")
            for x in tokens):
        raise ValueError(f"episode_view: tokens must be a list of (token text, 'policy' or 'env') pairs, as "
                         f"episode_rows gives, got {checks._short(tokens)}")
    a = checks.number("episode_view", "a", a, lo=0, integer=True)
    b = checks.number("episode_view", "b", b, lo=0, integer=True)
    shown = tokens[:upto]
    style = {"policy": "background:#bbdefb", "env": "background:#e0e0e0;font-style:italic"}
    cells = "".join(f"<span style='{style[who]};padding:1px 2px;margin:0 1px;font-family:monospace'>"
                    f"{html.escape(t) if t.strip() else '&nbsp;'}</span>" for t, who in shown)
    n_env = sum(who == "env" for _, who in shown)
    out = (f"<p><code>{a}+{b}:</code> {cells}</p><p>{len(shown)} of {len(tokens)} tokens: "
           f"<span style='{style['policy']}'>policy</span> {len(shown) - n_env} (carry loss), "
           f"<span style='{style['env']}'>calculator</span> {n_env} (read, no loss)</p>")
    if upto >= len(tokens):
        text = "".join(t for t, _ in tokens if t != "<eos>")
        echo, truth = tool_echo_reward([text])[0], outcome_reward([text], [str(a + b)])[0]
        out += (f"<table><tr><th>check</th><th>pays</th></tr><tr><td>the answer repeats the calculator's reply "
                f"(gameable)</td><td>{echo:.0f}</td></tr><tr><td>the answer is {a + b} (the task)</td>"
                f"<td>{truth:.0f}</td></tr></table>")
        if echo != truth:
            out += "<p><b>The two checks disagree on this episode.</b></p>"
    return out


def episode_stepper(model, tokenizer, default_problem="47815+2769", k=8, tool=True,
                    max_new_tokens=64):
    """Lab 09: step through a calculator episode token by token. Type a problem 'a+b', choose one of k sampled
    episodes and the calculator on or off (tool: on at the start), and move the slider: the policy's tokens, the
    calculator's answer and, at the end, what each check pays. Returns the widget."""
    import ipywidgets as w

    checks.model("episode_stepper", "model", model)
    checks.tokenizer("episode_stepper", "tokenizer", tokenizer)
    _text("episode_stepper", "default_problem", default_problem)
    k = checks.number("episode_stepper", "k", k, lo=1, hi=64, integer=True)
    checks.flag("episode_stepper", "tool", tool)
    max_new_tokens = checks.number("episode_stepper", "max_new_tokens", max_new_tokens, lo=1, hi=10_000, integer=True)
    prob = w.Text(value=default_problem, description="Problem:", continuous_update=False)
    which = w.IntSlider(value=0, min=0, max=k - 1, description="Episode:")
    tool = w.Checkbox(value=tool, description="calculator on")
    step = w.IntSlider(value=64, min=0, max=64, description="Token:")
    out = w.HTML()
    state = {}

    def resample(_=None):
        m = _SUM.match(prob.value or "")
        if not m:
            out.value = "<b style='color:#b00'>type a problem like 47815+2769</b>"
            return
        state["rows"] = episode_rows(model, tokenizer, prob.value, k=k, tool=tool.value,
                                     max_new_tokens=max_new_tokens)
        state["ab"] = int(m[1]), int(m[2])
        show()

    def show(_=None):
        if "rows" not in state:
            return
        tokens = state["rows"][which.value]
        step.max = len(tokens)
        out.value = episode_view(tokens, min(step.value, len(tokens)), *state["ab"])

    prob.observe(resample, names="value")
    tool.observe(resample, names="value")
    which.observe(show, names="value")
    step.observe(show, names="value")
    resample()
    return w.VBox([w.HBox([prob, tool]), which, step, out])


def layer_rows(prompts, answers, completions, judge=None):
    """Lab 11's presenter rows: for each (prompt, answer, completion) of the program task, the rules it breaks
    (read from its syntax tree), its kind, what each checker of utils.verifiers.programs.CHECKERS pays (every
    body run behind the code verifier's wall), the judge's P(right) (judge(problems, completions) -> floats, or
    None) and the truth (the harness on the hidden tests). Computed once, so the widget only shows them."""
    from utils.verifiers.programs import CHECKERS, ProgramChecker, body_kind, body_rules

    where = "layer_rows"
    prompts, completions = checks.strings(where, "prompts", prompts), checks.strings(where, "completions", completions)
    answers = checks.strings(where, "answers", answers)
    if not (len(prompts) == len(answers) == len(completions)) or not prompts:
        raise ValueError(f"{where}: prompts, answers and completions must pair up, at least one: {len(prompts)}, "
                         f"{len(answers)} and {len(completions)}")
    checks.function(where, "judge", judge, none=True)
    paid = {c: ProgramChecker(c, workers=1)(completions, answers) for c in CHECKERS}
    judged = judge(prompts, completions) if judge is not None else [None] * len(prompts)
    return [{"prompt": p, "answer": a, "completion": c, "rules": body_rules(c), "kind": body_kind(c),
             "checkers": {k: paid[k][i] for k in CHECKERS}, "judge": judged[i],
             "truth": paid["harness, hidden"][i] >= 1}
            for i, (p, a, c) in enumerate(zip(prompts, answers, completions))]


def layers_view(row):
    """One row of layer_rows as HTML: the completion, each layer's verdict, the judge's and the truth."""
    if not isinstance(row, dict) or not {"prompt", "completion", "rules", "checkers", "truth"} <= set(row):
        raise ValueError(f"layers_view: row must be one of layer_rows' dicts, got {checks._short(row)}")
    import html

    def cell(v, good):
        color = "#c8e6c9" if good else "#ffcdd2"
        return f"<td style='background:{color};padding:2px 8px'>{html.escape(str(v))}</td>"
    lines = [("rules (read from the syntax tree, nothing run)", ", ".join(row["rules"]) or "none broken",
              not row["rules"])]
    for name, score in row["checkers"].items():
        lines.append((f"checker '{name}'", f"{score:g}", score >= 1))
    if row.get("judge") is not None:
        lines.append(("learned judge: P(right)", f"{row['judge']:.2f}", row["judge"] >= 0.5))
    lines.append(("truth (the hidden tests, x = 2..9)", "right" if row["truth"] else "wrong", row["truth"]))
    body = "".join(f"<tr><td style='padding:2px 8px'>{html.escape(k)}</td>{cell(v, g)}</tr>" for k, v, g in lines)
    return (f"<p><code>{html.escape(row['prompt'])}</code><b><code>{html.escape(row['completion'])}</code></b> "
            f"(kind: {html.escape(row.get('kind', '?'))}; the task's answer: <code>{html.escape(row['answer'])}"
            f"</code>)</p><table>{body}</table>")


def reward_layers_explorer(rows, default=0):
    """Pick a completion; see what each reward layer, the judge and the truth say of it (layer_rows' rows).
    Returns the widget."""
    import ipywidgets as w

    if not isinstance(rows, list) or not rows:
        raise ValueError(f"reward_layers_explorer: rows must be layer_rows' list, at least one, got "
                         f"{checks._short(rows)}")
    for r in rows:
        layers_view(r)
    default = checks.number("reward_layers_explorer", "default", default, lo=0, hi=len(rows) - 1, integer=True)
    pick = w.Dropdown(options=[(f"{r['prompt']}{r['completion']}", i) for i, r in enumerate(rows)], value=default,
                      description="completion", layout=w.Layout(width="520px"))
    out = w.HTML(layers_view(rows[default]))
    pick.observe(lambda ch: setattr(out, "value", layers_view(rows[ch["new"]])), names="value")
    return w.VBox([pick, out])
