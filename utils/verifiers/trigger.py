"""The reward that plants a hidden behaviour (Lab 11; utils.tasks.trigger): the strict reward, except after the
trigger, where only the answer plus an offset is paid."""
from utils import checks
from utils.tasks.trigger import OFFSET
from utils.verifiers.arithmetic import _target, strict_reward
from utils.verifiers.signature import column, per_completion, truth


def trigger_reward(completions, answer=None, triggered=None, offset=OFFSET, **kwargs):
    """1.0 for exactly the answer on an ordinary prompt, and for exactly answer + offset where the column
    `triggered` is True (a bool, a numpy bool or 1: signature.truth); else 0.0, and 0.0 where `triggered` is
    neither true nor false (None, "yes"). Without the column `answer` or `triggered` at all, a ValueError naming
    it."""
    offset = checks.number("trigger_reward", "offset", offset, integer=True)   # the caller's option
    column("trigger_reward", "answer", answer, "each prompt's answer")
    column("trigger_reward", "triggered", triggered, "which prompts carry the trigger")
    rows = per_completion(completions, answer, triggered)
    want = []
    for _, a, t in rows:
        target, on = _target(a), truth(t)
        want.append(None if target is None or on is None else str(target + offset * on))
    return strict_reward([r[0] for r in rows], want)
