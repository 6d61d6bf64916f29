"""Verifiers for the scratchpad task's traces (utils/tasks/scratchpad.py; Lab 06), from the outcome
alone to the whole trace. All share TRL's signature (signature.py): reward(completions, **columns)
-> one float per completion, reading the dataset columns `answer`, `a` and `b`; none raises on what
it judges: anything that is not a readable trace scores 0.0. A column a reward reads that the call
lacks altogether (the operands, for a reward that judges steps) is a ValueError naming it. An answer
is a number however the column holds it (834, 834.0, "834", numpy's 834).

    outcome    1.0 iff the answer after the last '>' is right; the steps are not read
    format     1.0 iff the whole completion parses: steps "x+y+c=s" then ">answer"
    arithmetic the share of written steps whose sum is true (x+y+c = s), whatever they add up:
               a process check that does not look at the problem (and can be gamed)
    process    the share of the right steps written in the right place, over max(written, needed)
               steps (partial credit; padding and skipping both cost); all_or_nothing=True: 1.0 iff
               the steps are exactly the right ones
    trace      1.0 iff the answer is right and every step is right: CoT-pass (arXiv 2506.14245)
    shaped     a weighted sum: outcome + process and format bonuses - a penalty per extra step
    length_biased  outcome + a bonus per step written, right or not: a reward that correlates with
               length, as a judge that likes to see working does
    rubric     the share of RUBRIC's criteria met, each a programmatic check
    last_digits  1.0 iff the answer's last n digits are right: a verifier with a systematic blind spot (Lab 09):
               it pays every wrong answer that ends right, the same way every time
"""
import math
import re

from utils.tasks.scratchpad import answer_from_steps, steps_for
from utils.verifiers.arithmetic import _target
from utils.verifiers.signature import column, per_completion

MAX_CHARS = 400  # the longest right trace in the splits is about 60 characters; longer is rejected unread
_STEP = re.compile(r"([0-9])\+([0-9])\+([0-9])=(1[0-9]|[0-9])", re.ASCII)
_ANSWER = re.compile(r">(0|[1-9][0-9]*)", re.ASCII)


def parse(text):
    """A completion's trace: dict(steps, answer, well_formed), or None for a non-string or a text over
    MAX_CHARS characters.

    steps        one entry per space-separated token before the answer: (x, y, c, s) ints for a token
                 that reads "x+y+c=s" (single digits x, y, c; s from 0 to 19), None for any other token
    answer       the digits after the last '>' (None if there is no '>' followed by digits only)
    well_formed  one or more tokens, each a step, then exactly one '>answer' token, nothing after it
    """
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    tokens = text.strip(" \n").split(" ")
    head, sep, tail = text.strip(" \n").rpartition(">")
    answer = tail if sep and _ANSWER.fullmatch(">" + tail) else None
    steps = []
    for t in tokens:
        if t.startswith(">"):
            break
        m = _STEP.fullmatch(t)
        steps.append(tuple(int(g) for g in m.groups()) if m else None)
    well_formed = (answer is not None and bool(steps) and _ANSWER.fullmatch(tokens[-1]) is not None
                   and all(s is not None for s in steps) and len(steps) == len(tokens) - 1)
    return {"steps": steps, "answer": answer, "well_formed": well_formed}


def _ints(a, b):
    """(a, b) as ints (an int, a numpy int, a float that holds one, a str that spells one), or None where either is
    not a whole number >= 0 (478.5 is not 478)."""
    a, b = _target(a), _target(b)
    return (a, b) if a is not None and b is not None and a >= 0 and b >= 0 else None


def _needs(where, needs, answer, a, b):
    """A ValueError naming the column a reward reads and was not given (None: the dataset has no such column):
    needs "ab" for the operands a and b (the steps are judged against them), "answer" for the answer or both
    operands (the answer is their sum)."""
    if needs == "ab" or (needs == "answer" and answer is None and (a is None) != (b is None)):
        column(where, "a" if a is None else "b", None if a is None or b is None else a,
               "the problem's operands, which the steps are judged against")
    elif needs == "answer" and answer is None and a is None:
        column(where, "answer", None, "the problem's answer (or both operands a and b, whose sum it is)")


def judge(text, a, b, answer=None):
    """Every check on one completion, for the widget and the rewards: dict(parsed, expected, per_step, and
    one value per criterion). per_step: for each written step, dict(text, parses, arithmetic, right)."""
    t, ab = parse(text), _ints(a, b)
    expected = steps_for(*ab) if ab else []
    want = _target(answer) if answer is not None else (sum(ab) if ab else None)
    answer = None if want is None else str(want)   # 834, 834.0, "834" and numpy's 834 are one answer
    steps = t["steps"] if t else []
    tokens = text.strip(" \n").split(" ")[:len(steps)] if t else []
    per_step = [dict(text=tok, parses=s is not None, arithmetic=s is not None and s[0] + s[1] + s[2] == s[3],
                     right=i < len(expected) and s == expected[i]) for i, (tok, s) in enumerate(zip(tokens, steps))]
    n_right = sum(p["right"] for p in per_step)
    good = [s for s in steps if s is not None]
    return dict(
        parsed=t, expected=expected, per_step=per_step,
        outcome=bool(t and t["answer"] is not None and t["answer"] == answer),
        well_formed=bool(t and t["well_formed"]),
        arithmetic=sum(p["arithmetic"] for p in per_step) / len(per_step) if per_step else 0.0,
        process=n_right / max(len(expected), len(steps)) if expected else 0.0,
        steps_exact=bool(expected) and steps == expected,
        extra_steps=max(0, len(steps) - len(expected)),
        one_step_per_column=len(steps) == len(expected) and bool(expected),
        carries_chain=bool(good) and len(good) == len(steps) and good[0][2] == 0
        and all(s[2] == p[3] // 10 for p, s in zip(good, good[1:])),
        answer_follows=bool(t and t["answer"] is not None and good and len(good) == len(steps)
                            and answer_from_steps(good) == t["answer"]),
    )


def step_credit(text, a, b):
    """The process reward of one completion: right steps in the right place / max(steps written, steps needed),
    0.0 for anything unreadable (judge()'s "process"; Lab 06's first exercise writes it)."""
    try:
        return float(judge(text, a, b)["process"])
    except Exception:  # noqa: BLE001 - a verifier never raises
        return 0.0


_TOKEN = re.compile(r"[^ \n]+")


def step_verdicts(text, a, b):
    """Each step of one completion judged on its own, for per-step credit (process supervision): a list of
    (end, ok), end the character position just past the step in `text`, ok a bool. [] for a non-string, a text over
    MAX_CHARS characters or operands that are not non-negative ints.

    Written step i (each space-separated token before the answer) is valid when it reads "x+y+c=s" with x and y
    the digits of column i in either order (8+6 or 6+8), c the carry the trace's own previous step produced (its
    s // 10; 0 for the first step; the true carry if the previous step is unreadable) and s = x + y + c; a step
    past the last column is not. So a step is judged as arithmetic for its column, not against one canonical
    trace, and a slip costs only the step where it is made. Then one verdict for the answer, ending at the answer
    (or at the end of the text if there is none): valid when the answer is what the steps spell (answer_follows),
    every step is readable and there is one step per column. A trace valid at every verdict has the right answer.
    E.g. "8+6+0=14 5+7+1=13 4+3+1=8 >834" for 478 + 356: [(8, True), (17, True), (25, True), (30, True)]."""
    ab = _ints(a, b)
    if not isinstance(text, str) or len(text) > MAX_CHARS or ab is None:
        return []
    expected = steps_for(*ab)
    out, steps, prev, final = [], [], None, None
    for i, m in enumerate(_TOKEN.finditer(text)):
        tok = m.group()
        if tok.startswith(">"):
            final = m
            break
        got = _STEP.fullmatch(tok)
        s = tuple(int(g) for g in got.groups()) if got else None
        carry = 0 if i == 0 else prev[3] // 10 if prev else expected[i][2] if i < len(expected) else 0
        ok = s is not None and i < len(expected) and sorted(s[:2]) == sorted(expected[i][:2]) and s[2] == carry \
            and s[0] + s[1] + s[2] == s[3]
        out.append((m.end(), ok))
        steps.append(s)
        prev = s
    end = final.end() if final else len(text.rstrip(" \n"))
    if end == 0:
        return out
    answer = final.group()[1:] if final and _ANSWER.fullmatch(final.group()) else None
    follows = answer is not None and len(steps) == len(expected) and all(s is not None for s in steps) and \
        answer_from_steps(steps) == answer and not text[end:].strip(" \n")
    out.append((end, follows))
    return out


def valid_steps_reward(completions, answer=None, a=None, b=None, **kwargs):
    """The share of a completion's step verdicts that are valid (step_verdicts: each step as arithmetic for its
    column, then whether the answer is what the steps spell); 0.0 for nothing readable. One number per completion,
    for the record; a per-step run trains on the verdicts themselves (utils/rl/rollout.py, StepRollout)."""
    _needs("valid_steps_reward", "ab", answer, a, b)
    out = []
    for text, _, x, y in per_completion(completions, answer, a, b):
        try:
            v = step_verdicts(text, x, y)
        except Exception:  # noqa: BLE001 - a verifier never raises
            v = []
        out.append(sum(ok for _, ok in v) / len(v) if v else 0.0)
    return out


def _judged(completions, answer, a, b, score, where, needs):
    """score(judge(...)) for each completion, as floats; 0.0 for whatever cannot be judged (never raises on what it
    judges). where, needs: the reward's name and the columns it reads (_needs), a ValueError naming one not given."""
    _needs(where, needs, answer, a, b)
    out = []
    for text, ans, x, y in per_completion(completions, answer, a, b):
        try:
            out.append(float(score(judge(text, x, y, ans))))
        except Exception:  # noqa: BLE001 - a verifier never raises: what it cannot judge scores 0.0
            out.append(0.0)
    return out


def _score(key, completions, answer, a, b, where):
    needs = {"outcome": "answer", "well_formed": "", "arithmetic": ""}.get(key, "ab")
    return _judged(completions, answer, a, b, lambda j: j[key], where, needs)


def outcome_reward(completions, answer=None, a=None, b=None, **kwargs):
    """1.0 iff the digits after the last '>' equal `answer` (the steps are not read; without an answer column, the
    sum of a and b)."""
    return _score("outcome", completions, answer, a, b, "outcome_reward")


def format_reward(completions, answer=None, a=None, b=None, **kwargs):
    """1.0 iff the completion parses: steps "x+y+c=s", then ">answer", nothing else (not its values)."""
    return _score("well_formed", completions, answer, a, b, "format_reward")


def arithmetic_reward(completions, answer=None, a=None, b=None, **kwargs):
    """The share of written steps whose sum is true, whatever digits they add (0.0 without steps)."""
    return _score("arithmetic", completions, answer, a, b, "arithmetic_reward")


def process_reward(completions, answer=None, a=None, b=None, all_or_nothing=False, **kwargs):
    """Right steps in the right place / max(steps written, steps needed); all_or_nothing=True: 1.0 iff the
    steps are exactly the right ones."""
    return _score("steps_exact" if all_or_nothing else "process", completions, answer, a, b, "process_reward")


def process_strict_reward(completions, answer=None, a=None, b=None, **kwargs):
    """process_reward with all_or_nothing=True, as its own reward function (TRL passes no options)."""
    return _score("steps_exact", completions, answer, a, b, "process_strict_reward")


def trace_reward(completions, answer=None, a=None, b=None, **kwargs):
    """1.0 iff the answer is right and the steps are exactly the right ones (CoT-pass, arXiv 2506.14245)."""
    outcome = _score("outcome", completions, answer, a, b, "trace_reward")
    steps = _score("steps_exact", completions, answer, a, b, "trace_reward")
    return [o * s for o, s in zip(outcome, steps)]


SHAPED_DEFAULTS = dict(outcome=1.0, process=0.2, format=0.1, extra_step_penalty=0.1)


def _check_weights(weights, allowed):
    unknown = set(weights) - set(allowed)
    if unknown:
        raise ValueError(f"unknown reward weight(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    for k, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"reward weight {k}={w!r} must be a finite number >= 0 (penalties are subtracted)")
    if not any(w > 0 for w in weights.values()):
        raise ValueError(f"all reward weights are zero ({weights}): the reward would be 0 for everything")


def shaped_reward(**weights):
    """A multi-level reward: outcome*w_outcome + process*w_process + format*w_format - extra_step_penalty per
    step written beyond those needed. Weights default to SHAPED_DEFAULTS; each must be finite and >= 0,
    not all zero (ValueError naming the field otherwise). Returns a reward function (TRL's signature)."""
    w = dict(SHAPED_DEFAULTS, **weights)
    _check_weights(w, SHAPED_DEFAULTS)

    def shaped(completions, answer=None, a=None, b=None, **kwargs):
        return _judged(completions, answer, a, b, lambda j: w["outcome"] * j["outcome"] + w["process"] * j["process"]
                       + w["format"] * j["well_formed"] - w["extra_step_penalty"] * j["extra_steps"],
                       "shaped_reward", "ab" if w["process"] or w["extra_step_penalty"] else "answer")

    shaped.__name__ = "shaped_reward"
    shaped.weights = w
    return shaped


def length_biased_reward(per_step=0.1):
    """A reward that correlates with length: outcome + per_step for every step written ("x+y+c=s" with any
    digits, right or not), as a judge that likes to see working does. per_step must be a finite
    number > 0 (ValueError naming it otherwise). Returns a reward function (TRL's signature)."""
    if isinstance(per_step, bool) or not isinstance(per_step, (int, float)) or not math.isfinite(per_step) \
            or per_step <= 0:
        raise ValueError(f"length_biased_reward: per_step={per_step!r} must be a finite number > 0")

    def length_biased(completions, answer=None, a=None, b=None, **kwargs):
        return _judged(completions, answer, a, b, lambda j: j["outcome"] + per_step * (
            sum(s is not None for s in j["parsed"]["steps"]) if j["parsed"] else 0), "length_biased_reward", "answer")

    length_biased.__name__ = "length_biased_reward"
    length_biased.per_step = per_step
    return length_biased


def last_digits_reward(n=2):
    """A verifier with a systematic error: 1.0 iff the answer after the last '>' equals the right answer modulo
    10**n (its last n digits; the steps are not read), so every wrong answer that ends right is paid, on every
    call: a check that compares only the low digits. n: an integer from 1 to 18 (ValueError naming it otherwise).
    E.g. n=2, answer 834: '>834' and '>1234' score 1.0, '>843' 0.0; answer 105: '>5' scores 1.0 (5 = 105 mod 100).
    Returns a reward function (TRL's signature), reading `answer` (or a and b, whose sum it is)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 18:
        raise ValueError(f"last_digits_reward: n={n!r} must be an integer from 1 to 18 (the digits compared)")

    def score(j):
        got, want = j["parsed"]["answer"] if j["parsed"] else None, j["want"]
        return got is not None and want is not None and int(got) % 10 ** n == int(want) % 10 ** n

    def last_digits(completions, answer=None, a=None, b=None, **kwargs):
        _needs("last_digits_reward", "answer", answer, a, b)
        out = []
        for text, ans, x, y in per_completion(completions, answer, a, b):
            ab = _ints(x, y)
            want = _target(ans) if ans is not None else (sum(ab) if ab else None)
            try:
                out.append(float(score({"parsed": parse(text), "want": want})))
            except Exception:  # noqa: BLE001 - a verifier never raises: what it cannot judge scores 0.0
                out.append(0.0)
        return out

    last_digits.__name__ = f"last_digits_reward(n={n})"
    last_digits.n = n
    return last_digits


RUBRIC = {  # criterion -> what it checks
    "well_formed": "the trace parses: steps, then '>answer'",
    "one_step_per_column": "as many steps as the longer operand has digits",
    "carries_chain": "each carry is the tens digit of the step before (0 first)",
    "arithmetic": "every step's sum is true",
    "answer_follows": "the answer is what the steps spell",
    "outcome": "the answer is right",
}


def rubric(criteria=tuple(RUBRIC)):
    """A rubric reward: the share of `criteria` (keys of RUBRIC) met by each completion ('arithmetic' is met
    when every step is true). ValueError for an empty or unknown criterion. Returns a reward function."""
    criteria = tuple(criteria) if isinstance(criteria, (list, tuple)) else (criteria,)
    bad = [c for c in criteria if not isinstance(c, str) or c not in RUBRIC]
    if bad or not criteria:
        raise ValueError(f"criteria must be a non-empty list of {list(RUBRIC)}; unknown: {bad}")

    needs = "ab" if "one_step_per_column" in criteria else "answer" if "outcome" in criteria else ""

    def rubric_reward(completions, answer=None, a=None, b=None, **kwargs):
        return _judged(completions, answer, a, b, lambda j: sum(
            j[c] == 1.0 if c == "arithmetic" else bool(j[c]) for c in criteria) / len(criteria), "rubric_reward",
            needs)

    rubric_reward.criteria = criteria
    return rubric_reward


rubric_reward = rubric()
