"""Widgets for live demos."""
import re
from collections import Counter

import torch

from .policy import sample
from .task import solve
from .verifiers import strict_match

_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*([+\-])\s*(\d{1,3})\s*=?\s*$")


def parse_problem(text):
    """'37 + 29' or '37+29=' -> (prompt '37+29=', answer '66'); anything else -> ValueError."""
    m = _PROBLEM.match(text or "")
    if not m:
        raise ValueError("type a problem like 37+29 or 512-48 (operands up to 3 digits, + or -: the task has no other operators)")
    a, op, b = int(m[1]), m[2], int(m[3])
    return f"{a}{op}{b}=", str(solve(a, op, b))


def answer_table(models, tokenizer, text, k=8, temperature=1.0, seed=0):
    """For each named model, k sampled answers to the problem and how many are right.
    Returns {name: (answers list, n_correct, most common answer)}."""
    prompt, answer = parse_problem(text)
    out = {}
    for name, model in models.items():
        g = torch.Generator().manual_seed(seed)
        texts = sample(model, tokenizer, [prompt], k=k, temperature=temperature, generator=g).texts
        n_ok = sum(strict_match(t, answer) for t in texts)
        out[name] = (texts, int(n_ok), Counter(texts).most_common(1)[0][0])
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
            rows.append(f"<tr><td><b>{html.escape(name)}</b></td><td>{n_ok}/{len(texts)} right</td><td>{cells}</td></tr>")
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
