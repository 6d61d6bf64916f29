"""Lab 01's widget (GRPO from scratch): compare_models, a typed problem sampled from each model, and
answer_table, the answers it shows."""
from collections import Counter

from utils import checks
from utils.eval.metrics import sample_in_batches
from utils.notebook.widgets.common import _models, _text, parse_problem
from utils.verifiers.arithmetic import strict_match


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
