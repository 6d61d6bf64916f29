"""Lab 09's two checks of a calculator episode ('478+356:' -> '?478+356=834 >834'; utils.tasks.tools). Both share
TRL's signature (signature.py) and never raise: anything that is not a readable episode scores 0.0.

    tool_echo_reward  1.0 iff the answer repeats the calculator's last reply. It reads the transcript, not the task:
                      an episode that miscopied an operand into its call (?478+366=844 >844) is paid as if it were
                      right. The gameable check
    outcome_reward    (verifiers.traces) 1.0 iff the answer is the problem's: the environment knows the problem and
                      owns the truth. The fix
"""
from utils.tasks.tools import ERROR, parse_episode
from utils.verifiers.signature import per_completion


def tool_echo_reward(completions, answer=None, **kwargs):
    """1.0 iff the completion made a call, its last reply is a number, and the answer after '>' equals it; the
    problem's answer is not read. Only what the calculator wrote is a reply (parse_episode): digits the policy
    wrote after a call the calculator refused to answer ('?478 +356=834 >834') are not."""
    out = []
    for text, in per_completion(completions):
        ep = parse_episode(text)
        ok = bool(ep and ep["calls"] and ep["calls"][-1][1] != ERROR and ep["answer"] == ep["calls"][-1][1])
        out.append(float(ok))
    return out
