"""Arithmetic verifiers: the strict one the labs train with, and the zoo of Lab 02, from strong to
weak. Each is a per-text `*_match(text, answer) -> 0.0/1.0`, wrapped by reward_from_match into the
shared signature (signature.py): reward(completions, answer, **columns) -> list of 0.0/1.0.
"""
import json
import math
import numbers
import os
import re

from utils import DATA_DIR, checks
from utils.verifiers.signature import reward_from_match

MAX_CHARS = 64  # longer completions are rejected unread: no arithmetic answer here is that long
_STRICT = re.compile(r"-?(0|[1-9][0-9]*)")


def _target(answer):
    """The integer answer, or None if `answer` is not one: an int, a str that spells one, or a float that holds
    one (66.0, as a dataset column of floats gives it; not 66.5, not "66.0")."""
    if isinstance(answer, numbers.Real) and not isinstance(answer, (bool, numbers.Integral)):
        return int(answer) if math.isfinite(answer) and float(answer).is_integer() else None
    try:
        return int(str(answer).strip())
    except (TypeError, ValueError):
        return None


def strict_answer(text):
    """The integer `text` spells by strict_match's rules (below), or None: a label-free reward reads answers this
    way, so that it counts as one answer exactly what the strict verifier would judge as one."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    s = text.strip(" \t\r\n")
    if not s.isascii() or not _STRICT.fullmatch(s) or s == "-0":
        return None
    return int(s)


def strict_match(text, answer):
    """1.0 iff `text` is exactly the answer, by these rules, else 0.0:

    - leading and trailing whitespace (spaces, tabs, newlines) is ignored;
    - what is left must be an optional '-' then ASCII digits 0-9, with no leading zeros
      ("07" fails), no '+', no commas, no spaces inside, no trailing '.', no other text;
    - "-0" fails (it is not how the answer 0 is written);
    - the integer it spells must equal `answer` (an int, a str written the same way, or a float holding an int).
    Non-strings, texts over MAX_CHARS characters and non-ASCII digits score 0.0.
    """
    got, target = strict_answer(text), _target(answer)
    return 1.0 if got is not None and target is not None and got == target else 0.0


# ---------------------------------------------------------------------------------------------
# The verifier zoo (Lab 02): the same signature, weaker and weaker judges of the same answer.
# None of them raises.

READ_LIMIT = 4096  # the lenient verifiers read longer texts than strict_match, but not unboundedly
_NUMBER = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|-?[0-9]+")  # "1,073" or "1073" or "-5"


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


strict_reward = reward_from_match(strict_match)
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
    path = os.path.join(DATA_DIR, "verifiers", "arithmetic_adversarial.jsonl") if path is None else \
        checks.path("load_arithmetic_suite", "path", path, "file")
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            if c.get("repeat") and isinstance(c["output"], str):
                c["output"] = c["output"] * int(c.pop("repeat"))
            cases.append(c)
    return cases
