"""Widgets for live demos."""
import re
from collections import Counter

from utils.eval.metrics import sample_in_batches
from utils.tasks.arithmetic import solve
from utils.verifiers.arithmetic import strict_match

_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*([+\-])\s*(\d{1,3})\s*=?\s*$")


def parse_problem(text):
    """'37 + 29' or '37+29=' -> (prompt '37+29=', answer '66'); anything else -> ValueError."""
    m = _PROBLEM.match(text or "")
    if not m:
        raise ValueError("type a problem like 37+29 or 512-48 "
                         "(operands up to 3 digits, + or -: the task has no other operators)")
    a, op, b = int(m[1]), m[2], int(m[3])
    return f"{a}{op}{b}=", str(solve(a, op, b))


def answer_table(models, tokenizer, text, k=8, temperature=1.0, seed=0):
    """For each named model, k sampled answers to the problem `text` (e.g. "37+29") and how many are right.
    Returns (prompt, answer, {name: (answers list, n_correct, most common answer)})."""
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

    names = [m for m, s in counts if s == split and m != "base"]
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

    runs = list(snapshots)
    if not runs or any(not snapshots[r] for r in runs):
        raise ValueError("snapshots must map each run name to a non-empty {step: [Counter per prompt]} dict")
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
