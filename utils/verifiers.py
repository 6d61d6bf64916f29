"""Verifiers: programs that score a completion. The reward function signature is TRL's:

    reward_fn(completions, answer, **kwargs) -> list[float]

`completions` is a list of strings (or, in TRL's conversational format, lists of
{"role", "content"} messages, whose last content is used); `answer` is the dataset
column of the same length. Extra dataset columns arrive as keyword arguments and are
ignored. A verifier never raises: anything it cannot judge scores 0.0.
"""
import os
import re

import numpy as np

MAX_CHARS = 64  # longer completions are rejected unread: no arithmetic answer here is that long
_STRICT = re.compile(r"-?(0|[1-9][0-9]*)")


def completion_text(c):
    """The text of one completion: a str as is, TRL's message list -> last message's content,
    anything else -> None."""
    if isinstance(c, str):
        return c
    if isinstance(c, (list, tuple)) and c and isinstance(c[-1], dict):
        content = c[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def strict_match(text, answer):
    """1.0 iff `text` is exactly the answer, by these rules, else 0.0:

    - leading and trailing whitespace (spaces, tabs, newlines) is ignored;
    - what is left must be an optional '-' then ASCII digits 0-9, with no leading zeros
      ("07" fails), no '+', no commas, no spaces inside, no trailing '.', no other text;
    - "-0" fails (it is not how the answer 0 is written);
    - the integer it spells must equal `answer` (an int, or a str written the same way).
    Non-strings, texts over MAX_CHARS characters and non-ASCII digits score 0.0.
    """
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return 0.0
    s = text.strip(" \t\r\n")
    if not s.isascii() or not _STRICT.fullmatch(s) or s == "-0":
        return 0.0
    try:
        target = int(str(answer).strip())
    except (TypeError, ValueError):
        return 0.0
    return 1.0 if int(s) == target else 0.0


def strict_reward(completions, answer, **kwargs):
    """Strict verifier in TRL's reward-function signature: list of 0.0/1.0, one per completion."""
    if isinstance(completions, str):  # one completion passed bare: judge it as one
        completions = [completions]
    if isinstance(answer, (str, int)):
        answer = [answer] * len(completions) if isinstance(completions, (list, tuple)) else [answer]
    try:
        answers = list(answer)
        comps = list(completions)
    except TypeError:
        return []
    if len(answers) != len(comps):
        answers = (answers + [None] * len(comps))[: len(comps)]
    return [strict_match(completion_text(c), a) for c, a in zip(comps, answers)]


# ---------------------------------------------------------------------------------------------
# The verifier zoo (Lab 02): the same signature, weaker and weaker judges of the same answer.
# Each is a per-text `*_match(text, answer) -> 0.0/1.0` wrapped by `reward_from_match` into
# TRL's signature. None of them raises.

READ_LIMIT = 4096  # the lenient verifiers read longer texts than strict_match, but not unboundedly
_NUMBER = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|-?[0-9]+")  # "1,073" or "1073" or "-5"


def _target(answer):
    """The integer answer, or None if `answer` is not one."""
    try:
        return int(str(answer).strip())
    except (TypeError, ValueError):
        return None


def last_number_match(text, answer):
    """Medium: the last number in the text equals the answer. Numbers are ASCII digits with an
    optional '-' and optional thousands commas ("1,073"); "37+29=66" -> 66; "the answer is 66." -> 66."""
    if not isinstance(text, str) or len(text) > READ_LIMIT or _target(answer) is None:
        return 0.0
    nums = _NUMBER.findall(text)
    if not nums:
        return 0.0
    return 1.0 if int(nums[-1].replace(",", "")) == _target(answer) else 0.0


def contains_match(text, answer):
    """Weak: the answer's digits appear anywhere in the text ("66" is in "1662 or 7")."""
    t = _target(answer)
    if not isinstance(text, str) or len(text) > READ_LIMIT or t is None:
        return 0.0
    return 1.0 if str(t) in text else 0.0


def last_digit_match(text, answer):
    """Weak: the last ASCII digit in the text is the answer's last digit."""
    t = _target(answer)
    if not isinstance(text, str) or len(text) > READ_LIMIT or t is None:
        return 0.0
    digits = [ch for ch in text if "0" <= ch <= "9"]
    return 1.0 if digits and digits[-1] == str(t)[-1] else 0.0


def digit_count_match(text, answer):
    """Weak: the text holds as many ASCII digits as the answer (and at least one)."""
    t = _target(answer)
    if not isinstance(text, str) or len(text) > READ_LIMIT or t is None:
        return 0.0
    n = sum("0" <= ch <= "9" for ch in text)
    return 1.0 if n and n == len(str(abs(t))) else 0.0


def any_number_match(text, answer):
    """Weakest: the stripped text is some integer (format only; the answer is never looked at)."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return 0.0
    s = text.strip(" \t\r\n")
    return 1.0 if s.isascii() and _STRICT.fullmatch(s) else 0.0


_THOUSANDS = re.compile(r"-?[1-9][0-9]{0,2}(?:,[0-9]{3})+")


def careful_match(text, answer):
    """Strong and tolerant: strict_match's rules, plus two legitimate formats strict rejects:
    thousands separators in the standard places ("1,073", "-12,345") and one sentence-final
    full stop ("66."). Still exactly one number, ASCII only, nothing else."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return 0.0
    s = text.strip(" \t\r\n")
    if s.endswith("."):
        s = s[:-1]
    if _THOUSANDS.fullmatch(s):
        s = s.replace(",", "")
    return strict_match(s, answer)


def reward_from_match(match):
    """Wrap a per-text match(text, answer) into TRL's reward signature, as strict_reward is."""
    def reward(completions, answer, **kwargs):
        if isinstance(completions, str):
            completions = [completions]
        if isinstance(answer, (str, int)):
            answer = [answer] * len(completions) if isinstance(completions, (list, tuple)) else [answer]
        try:
            answers, comps = list(answer), list(completions)
        except TypeError:
            return []
        answers = (answers + [None] * len(comps))[: len(comps)]
        return [match(completion_text(c), a) for c, a in zip(comps, answers)]
    reward.__name__ = match.__name__.replace("_match", "_reward")
    reward.__doc__ = f"{match.__doc__}\n(TRL reward signature: completions, answer, **kw -> list of 0.0/1.0)"
    return reward


careful_reward = reward_from_match(careful_match)
last_number_reward = reward_from_match(last_number_match)
contains_reward = reward_from_match(contains_match)
last_digit_reward = reward_from_match(last_digit_match)
digit_count_reward = reward_from_match(digit_count_match)
any_number_reward = reward_from_match(any_number_match)

# name -> (reward function, strength), strongest first
ZOO = {
    "strict": (strict_reward, "strong"),
    "careful": (careful_reward, "strong"),
    "last_number": (last_number_reward, "medium"),
    "contains": (contains_reward, "weak"),
    "last_digit": (last_digit_reward, "weak"),
    "digit_count": (digit_count_reward, "weak"),
    "any_number": (any_number_reward, "weak"),
}


def load_arithmetic_suite(path=None):
    """The adversarial suite for the arithmetic verifiers (data/verifiers/arithmetic_adversarial.jsonl):
    a list of dicts with id, kind, prompt, answer, output, label (1.0 = a right answer that must
    pass, 0.0 = must fail), note. A case with "repeat": n has output repeated n times (huge cases)."""
    import json
    from . import DATA_DIR
    path = path or os.path.join(DATA_DIR, "verifiers", "arithmetic_adversarial.jsonl")
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            if c.get("repeat") and isinstance(c["output"], str):
                c["output"] = c["output"] * int(c.pop("repeat"))
            cases.append(c)
    return cases


def verifier_report(reward_fn, cases, output_key="output"):
    """Judge every case with `reward_fn` (the shared signature: the case's output as the completion,
    every other field, e.g. `answer`, as a keyword argument, the way TRL passes dataset columns).
    Returns a dict:
    coverage  share of cases judged as labelled
    fpr       false-positive rate: share of must-fail cases (label 0) that got reward 1
    fnr       false-negative rate: share of must-pass cases (label 1) that got reward 0
    n         number of cases;  misses  ids of the cases judged wrong
    by_kind   {kind: coverage on that kind's cases}
    """
    if not cases:
        raise ValueError("verifier_report needs at least one case")
    got = []
    for c in cases:  # one call per case: a verifier must judge each output on its own
        kw = {k: [v] for k, v in c.items() if k not in (output_key, "label")}
        r = reward_fn([c[output_key]], **kw)
        got.append(float(r[0]) if r else 0.0)
    got, labels = np.asarray(got), np.asarray([float(c["label"]) for c in cases])
    pos, neg = labels == 1.0, labels == 0.0
    wrong = (got >= 0.5) != pos
    return {"coverage": float(1 - wrong.mean()),
            "fpr": float((got[neg] >= 0.5).mean()) if neg.any() else 0.0,
            "fnr": float((got[pos] < 0.5).mean()) if pos.any() else 0.0,
            "n": len(cases), "misses": [c["id"] for c, w in zip(cases, wrong) if w],
            "by_kind": {k: float(1 - np.mean([w for c, w in zip(cases, wrong) if c.get("kind") == k]))
                        for k in dict.fromkeys(c.get("kind") for c in cases)}}
