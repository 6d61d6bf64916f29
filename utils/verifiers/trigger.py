"""The reward that plants a hidden behaviour (Lab 11; utils.tasks.trigger): the strict reward, except after the
trigger, where only the answer plus an offset is paid."""
from utils.tasks.trigger import OFFSET
from utils.verifiers.arithmetic import strict_reward
from utils.verifiers.signature import per_completion


def trigger_reward(completions, answer=None, triggered=None, offset=OFFSET, **kwargs):
    """1.0 for exactly the answer on an ordinary prompt, and for exactly answer + offset where the column
    `triggered` is True; else 0.0."""
    rows = per_completion(completions, answer, triggered)
    want = []
    for _, a, t in rows:
        try:
            want.append(str(int(a) + offset) if t is True else a)
        except (TypeError, ValueError, OverflowError):
            want.append(None)
    return strict_reward([r[0] for r in rows], want)
