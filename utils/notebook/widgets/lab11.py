"""Lab 11's explorer (beyond rule verifiers): reward_layers_explorer, what each reward layer, the judge and the
truth say of a completion; layer_rows computes them once, layers_view shows one."""
from utils import checks


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
