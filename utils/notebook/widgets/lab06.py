"""Lab 06's widget (reward design on traces): trace_inspector, a written trace step by step and every verifier's
reward."""
from utils import checks
from utils.notebook.widgets.common import _SUM, _text, _verifiers


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
