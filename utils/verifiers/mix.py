"""The task mix's verifier (utils/tasks/mix.py): each completion judged by its own task's verifier, chosen by the
row's `task` column. TRL's signature (signature.py): reward(completions, answer, task, a, b, **columns) -> one
float per completion; it never raises.

    arithmetic, multiply   arithmetic.strict_match (the answer alone, exactly)
    traces                 traces.judge's outcome (the answer after the last '>'; the steps are not read)

A row whose task is not one of JUDGES' scores 0.0; a call without the column `task` or `answer` at all is a
ValueError naming it.
"""
from utils.verifiers import arithmetic, traces
from utils.verifiers.signature import column, per_completion

JUDGES = {"arithmetic": lambda text, answer, a, b: arithmetic.strict_match(text, answer),
          "multiply": lambda text, answer, a, b: arithmetic.strict_match(text, answer),
          "traces": lambda text, answer, a, b: traces.outcome_reward([text], answer=[answer], a=[a], b=[b])[0]}


def task_reward(completions, answer=None, task=None, a=None, b=None, **kwargs):
    """1.0 iff the completion is right by its own task's verifier (JUDGES), else 0.0."""
    column("task_reward", "task", task, "which task's verifier judges each completion")
    column("task_reward", "answer", answer, "each problem's answer")
    out = []
    for text, ans, t, x, y in per_completion(completions, answer, task, a, b):
        judge = JUDGES.get(t) if isinstance(t, str) else None
        out.append(float(judge(text, ans, x, y)) if judge and text is not None else 0.0)
    return out
