"""Lab 02's widget (weak vs strong verifiers): verifier_playground, every verifier's reward on a typed output."""
from utils.notebook.widgets.common import _text, _verifiers, parse_problem


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
