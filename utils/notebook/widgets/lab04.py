"""Lab 04's explorer (entropy collapse): answer_distribution_explorer, the answers a run sampled to a problem,
step by step."""
from utils import checks
from utils.notebook.widgets.common import _default


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
