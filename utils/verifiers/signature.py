"""The one reward-function signature every verifier and reward here shares, TRL's:

    reward_fn(completions, <column>, **other_columns) -> list[float], one score per completion

`completions` is a list of strings, or in TRL's conversational format lists of {"role", "content"}
messages (the last message's content is judged); one completion passed bare (a str or one message
list) is judged as one. Each dataset column arrives as a keyword argument, a list as long as
`completions`; a verifier also accepts one value shared by all completions. A verifier never
raises: anything it cannot judge scores 0.0. `per_completion` is the one adapter that turns these
arguments into rows, `reward_from_match` wraps a per-text check into the signature, and
`verifier_report` measures a verifier against a labelled adversarial suite.
"""
import numbers

from utils import checks


class Shared:
    """A column value meant for every completion (where a list could also be a column)."""

    def __init__(self, value):
        self.value = value


def completion_text(c):
    """The text of one completion: a str as is, TRL's message list -> last message's content,
    anything else -> None."""
    if isinstance(c, str):
        return c
    if isinstance(c, (list, tuple)) and c and isinstance(c[-1], dict):
        content = c[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def per_completion(completions, *columns):
    """[(text, value of each column), ...], one row per completion.

    completions as TRL passes them (see the module docstring); text is completion_text's (None when
    there is no text). Each column is a list or tuple, a numpy array or a datasets Column (one value per
    completion: a short column is padded with None, a long one cut), or any other value (a str, an int,
    Shared(x)), shared by all.
    Never raises: completions that are not a list give no rows."""
    if isinstance(completions, str) or (isinstance(completions, (list, tuple)) and completions
                                        and isinstance(completions[0], dict) and "role" in completions[0]):
        completions = [completions]  # one completion passed bare: a text, or one list of chat messages
    try:
        comps = list(completions)
    except TypeError:
        return []
    n, spread = len(comps), []
    for col in columns:
        if isinstance(col, Shared):
            spread.append([col.value] * n)
        elif isinstance(col, (list, tuple)) or _sequence(col):  # numpy, a datasets Column: not imported
            spread.append((list(col) + [None] * n)[:n])
        else:
            spread.append([col] * n)
    return [(completion_text(c), *vals) for c, *vals in zip(comps, *spread)] if spread else \
        [(completion_text(c),) for c in comps]


def column(where, name, value, what):
    """value, or a ValueError naming the dataset column `name` when it is missing (None: the dataset has no such
    column, so TRL passes none): a reward that needs it would otherwise give every completion the same score and
    say nothing. what: what the reward reads it for."""
    if value is None:
        raise ValueError(f"{where}: no `{name}` column: it reads {what}; give the dataset that column (TRL passes "
                         f"every column by its name) or pass it yourself")
    return value


def truth(value):
    """A dataset column's truth value: True or False for a bool, a numpy bool or the integers 1 and 0 (as a table
    stores a flag); None for anything else (a missing entry, a string), which no reward takes for True or False."""
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    if isinstance(value, bool) or numpy_bool or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    return None


def _sequence(col):
    """True for a column of values that is not a list: a numpy array, a datasets Column (ds["answer"] in
    datasets 4 and later), which a reward would otherwise read as one value shared by every completion."""
    return type(col).__name__ == "ndarray" or (type(col).__name__ == "Column"
                                               and type(col).__module__.startswith("datasets"))


def reward_from_match(match, name=None):
    """Wrap a per-text check match(text, answer) -> float into the shared signature, with `answer`
    the column it reads: reward(completions, answer, **columns) -> [match(text, answer) per completion].
    name: the reward's __name__ (default: match's, with _match -> _reward); its module is match's."""
    if not callable(match):
        raise ValueError(f"reward_from_match: match must be a function match(text, answer) -> float, got "
                         f"{checks._short(match)}")
    if name is not None and (not isinstance(name, str) or not name):
        raise ValueError(f"reward_from_match: name must be a non-empty str or None, got {checks._short(name)}")

    def reward(completions, answer, **kwargs):
        return [match(text, a) for text, a in per_completion(completions, answer)]
    reward.__name__ = reward.__qualname__ = name or getattr(match, "__name__", "match").replace("_match", "_reward")
    reward.__module__ = getattr(match, "__module__", None) or reward.__module__
    reward.__doc__ = f"{match.__doc__}\n(TRL reward signature: completions, answer, **kw -> list of 0.0/1.0)"
    return reward


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
    checks.function("verifier_report", "reward_fn", reward_fn)
    if not isinstance(output_key, str):
        raise ValueError(f"verifier_report: output_key must be the name of the cases' output field (a str), got "
                         f"{checks._short(output_key)}")
    if isinstance(cases, (list, tuple)) and not cases:
        raise ValueError("verifier_report needs at least one case: cases is empty")
    if isinstance(cases, (str, bytes, dict)) or not isinstance(cases, (list, tuple)):
        raise ValueError(f"verifier_report: cases must be a non-empty list of labelled cases (dicts), got "
                         f"{checks._short(cases)}")
    for i, c in enumerate(cases):
        if not isinstance(c, dict) or any(k not in c for k in (output_key, "label", "id")) or \
                c["label"] not in (0, 1) or isinstance(c["label"], bool):
            raise ValueError(f"verifier_report: cases[{i}] must be a dict with id, label (0.0 or 1.0) and the "
                             f"output field output_key={output_key!r}, got {checks._short(c)}")
    got = []
    for c in cases:  # one call per case: a verifier must judge each output on its own
        kw = {k: [v] for k, v in c.items() if k not in (output_key, "label")}
        r = reward_fn([c[output_key]], **kw)
        got.append(float(r[0]) if r else 0.0)
    labels = [float(c["label"]) for c in cases]
    wrong = [(g >= 0.5) != (lab == 1.0) for g, lab in zip(got, labels)]
    pos, neg = [g for g, lab in zip(got, labels) if lab == 1.0], [g for g, lab in zip(got, labels) if lab == 0.0]
    share = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {"coverage": 1 - share(wrong),
            "fpr": share([g >= 0.5 for g in neg]) if neg else 0.0,
            "fnr": share([g < 0.5 for g in pos]) if pos else 0.0,
            "n": len(cases), "misses": [c["id"] for c, w in zip(cases, wrong) if w],
            "by_kind": {k: 1 - share([w for c, w in zip(cases, wrong) if c.get("kind") == k])
                        for k in dict.fromkeys(c.get("kind") for c in cases)}}
