"""Verifiers: programs that score a completion. The reward function signature is TRL's:

    reward_fn(completions, answer, **kwargs) -> list[float]

`completions` is a list of strings (or, in TRL's conversational format, lists of
{"role", "content"} messages, whose last content is used); `answer` is the dataset
column of the same length. Extra dataset columns arrive as keyword arguments and are
ignored. A verifier never raises: anything it cannot judge scores 0.0.
"""
import re

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
