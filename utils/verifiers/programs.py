"""The program task's pattern check (Lab 11, in progress): a body is right when it is of the task's own family and
equals the answer on every hidden test. It reads the text with utils.tasks.programs.canonical_value's strict
pattern and runs nothing, so it misses right bodies written another way ('57+6*x'): a false negative that the
code verifier, which runs the body behind its wall, does not make. Used to stop the program model's pre-training,
where nothing may run in-process."""
from utils.tasks.programs import HIDDEN, canonical_value
from utils.verifiers.signature import per_completion


def canonical_reward(completions, answer, **kwargs):
    """1.0 where the body matches the answer's values at every hidden x, read by pattern; else 0.0."""
    out = []
    for text, a in per_completion(completions, answer):
        want = [canonical_value(a, x) for x in HIDDEN]
        got = [canonical_value(text.strip() if isinstance(text, str) else None, x) for x in HIDDEN]
        out.append(float(None not in want and got == want))
    return out
