"""Rewards without a verifier (Lab 12): the policy's own majority answer as the label (TTRL, arXiv 2504.16084).

No one checks the answers. The G completions of a prompt vote; the answer most of them give becomes the label, and
each completion is paid 1.0 when it gives that answer. Where the majority is right this teaches the truth; where
it is wrong it teaches the wrong answer as firmly, and nothing in the reward can tell the two apart.

    majority_label(texts)        the strictly-written answer more texts give than any other, or None: no readable
                                 answer, a tie for the most votes, or a winner under min_share of the texts
    majority_vote_reward(...)    pays a completion whose answer is its prompt's majority label (TRL's signature;
                                 the `problem` column says which completions share a prompt); with a `gold` column,
                                 the prompts marked True are paid by the strict verifier instead (a budget of gold
                                 labels)

Answers are read by utils.verifiers.arithmetic.strict_answer, as the strict verifier reads them ("07" and "12 "
+ text are not answers, so they cast no vote and are never paid). Nothing here raises on what a policy writes.
"""
from collections import Counter

from utils import checks
from utils.verifiers.arithmetic import strict_answer, strict_match
from utils.verifiers.signature import column, per_completion, truth


def majority_label(texts, min_share=0.0):
    """The answer (an int) that more of `texts` give than any other, by strict_answer; None if no text holds a
    readable answer, if two answers tie for the most votes (no majority: no label), or if the winner's votes are
    under min_share of len(texts) (unreadable texts count in that share: they are votes for nothing)."""
    where = "majority_label"
    texts = per_completion(texts)
    min_share = checks.number(where, "min_share", min_share, lo=0, hi=1)
    votes = Counter(a for a in (strict_answer(t) for t, in texts) if a is not None)
    if not votes:
        return None
    (top, n), *rest = votes.most_common(2)
    if rest and rest[0][1] == n:
        return None
    return top if n >= min_share * len(texts) else None


def _key(value):
    """A problem column's value as a dict key (a value that cannot be one is read by its repr)."""
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def majority_vote_reward(completions, answer=None, problem=None, gold=None, min_share=0.0, **kwargs):
    """1.0 for a completion whose strict answer is the majority label of all completions in this call with the same
    `problem` (the prompt), else 0.0; the true `answer` is not read, except where `gold` (optional) is True: there
    the strict verifier pays against `answer`. Columns are read as every reward here reads them (signature.py:
    one value per completion, a short column padded with None, a single value shared); a gold flag that is not
    True or False (truth()) is not gold. Two groups of the same prompt in one call vote together. A prompt with no
    label (a tie, no readable answer) pays 0.0 to all. A missing `problem` column (or `answer`, with gold) is a
    ValueError that names it: without it the reward would pay nothing and say nothing."""
    where = "majority_vote_reward"
    column(where, "problem", problem, "which prompt each completion answers (the prompt text)")
    if gold is not None:
        column(where, "answer", answer, "each prompt's answer (for the gold prompts)")
    min_share = checks.number(where, "min_share", min_share, lo=0, hi=1)
    rows = [(text, _key(p), truth(g) is True, a) for text, p, g, a in per_completion(completions, problem, gold,
                                                                                       answer)]
    by_problem = {}
    for text, p, _, _ in rows:
        by_problem.setdefault(p, []).append(text)
    labels = {p: majority_label(ts, min_share) for p, ts in by_problem.items()}
    out = []
    for text, p, is_gold, a in rows:
        if is_gold:
            out.append(strict_match(text, a))
        else:
            got, label = strict_answer(text), labels[p]
            out.append(float(label is not None and got == label))
    return out
