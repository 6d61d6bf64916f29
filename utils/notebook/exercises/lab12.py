"""Lab 12's checks (self-play and label-free rewards): the majority label of a group (TTRL's vote, with its ties) and
the proposer's learnability reward (AZR's and R-Zero's)."""
from collections import Counter

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _is_number,
    _learner_frames,
    _note,
    _said_if_reference,
    _short,
    _worked_then_generated,
    learner_check,
)
from utils.rl.proposer import REWARDS, learnability
from utils.verifiers.arithmetic import strict_answer
from utils.verifiers.label_free import majority_label

# (what the case tests, texts): the label is majority_label's
MAJORITY_CASES = [
    ("a clear majority", ["46", "12", "46", "46"]),
    ("more votes than any other answer is enough: 3 of 6 is not more than half, and still the label",
     ["3", "8", "3", "9", "8", "3"]),
    ("spaces around an answer do not make it another answer", [" 12", "7", "12\n", "12"]),
    ("unreadable completions cast no vote", ["x", "x", "5"]),
    ("a tie for the most votes: no majority, no label", ["3", "4", "4", "3"]),
    ("three answers tie for the most votes", ["8", "1", "1", "2", "2", "8"]),
    ("a tie for second place is no tie for the most", ["5", "5", "5", "6", "7"]),
    ("a negative answer; a leading zero is no answer", ["-3", "03", "-3", "03", "03"]),
    ("no completion has a readable answer", ["046", "46 apples", "", "+46"]),
    ("an empty group", []),
    ("a group of one", ["7"]),
]


def _votes(texts):
    """{answer: votes} of the readable answers, by strict_answer."""
    return Counter(a for a in map(strict_answer, texts) if a is not None)


def _label_of(votes):
    """The label of a Counter of votes by the right rule (a tie for the most, or no vote: None)."""
    if not votes:
        return None
    (top, n), *rest = votes.most_common(2)
    return None if rest and rest[0][1] == n else top


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _majority_mistakes(texts):
    """{hint: the label a plausible wrong version gives on texts}, most likely mistake first (ties for the most votes
    are named by the case itself, in _majority_hint)."""
    votes = _votes(texts)
    top, n = votes.most_common(1)[0] if votes else (None, 0)
    raw = Counter(t for t in texts if strict_answer(t) is not None)
    raw_label = _label_of(raw)
    return {
        "unreadable completions (strict_answer gives None) cast no vote: count only the answers that are not None":
            _label_of(Counter(map(strict_answer, texts))),
        "count the answers strict_answer reads, not the texts: ' 12', '12' and '12\\n' are one answer, the int 12":
            None if raw_label is None else strict_answer(raw_label),
        "return the answer with the most votes, not its number of votes": n if votes else None,
        "only a tie for the MOST votes means no label: answers tied below the top one do not matter (compare the "
        "top count with the second's)": None if len(set(votes.values())) < len(votes) else top,
        "read each answer with strict_answer, not int(): '03' (a leading zero) and '+5' are not answers and cast "
        "no vote": _label_of(Counter(a for a in map(_int_or_none, texts) if a is not None)),
        "the label needs more votes than any other answer, not more than half of all the votes":
            top if 2 * n > len(texts) else None,
    }


def _majority_hint(texts, got, want):
    """The hint for a wrong majority label: what the result looks like (text, a bool), the case (no readable answer,
    a tie), or the plausible mistake its value matches; else the rule."""
    votes = _votes(texts)
    if isinstance(got, str):
        return "return the answer as the int strict_answer reads (12), not the text ('12' or ' 12')"
    if isinstance(got, bool):
        return "return the answer (an int) or None, not True or False"
    if not votes:
        return ("no completion here has an answer strict_answer reads ('046' has a leading zero, '+46' a sign, "
                "'46 apples' more text): nothing to vote for, so return None (and do not call most_common's first "
                "item on an empty Counter)")
    tied = [a for a, c in votes.items() if c == max(votes.values())]
    if want is None and len(tied) >= 2 and got is not None:
        if len(tied) == 2:
            return (f"{tied[0]} and {tied[1]} tie for the most votes ({votes[tied[0]]} each): no majority, so no "
                    f"label: return None; do not keep the first one seen (Counter.most_common lists ties in the order "
                    f"first seen)")
        return (f"{len(tied)} answers tie for the most votes ({', '.join(map(str, tied))}): a tie between any number "
                f"of answers means no label: return None whenever the second answer has as many votes as the first")
    if _is_number(got):
        for hint, value in _majority_mistakes(texts).items():
            if value is not None and value != want and float(got) == value:
                return hint
    elif got is None:
        for hint, value in _majority_mistakes(texts).items():
            if value is None and want is not None:
                return hint
    return ("read each text with strict_answer, count the answers that are not None, and return the one with the "
            "most votes (an int); None when nothing is readable or when two answers tie for the most votes")


def _generated_majority_hint(fn, texts, got, want):
    """The hint for a generated group: where fn also misses a worked case, that case's hint (each worked case shows
    one mistake, where a generated group may fit several), with the case; else the hint for this group."""
    for what, case in MAJORITY_CASES:
        right = majority_label(case)
        try:
            mine = fn(list(case))
            gives = f"gives {_short(repr(mine))}"
        except Exception as e:  # noqa: BLE001 - a worked case it raises on: named only where the group has no vote
            if _votes(case):
                continue
            mine, gives = None, f"raises {type(e).__name__}"
        else:
            if _same_label(mine, right):
                continue
        hint = _majority_hint(case, mine, right)
        return (f"your function misses the worked case {what!r} too: {case!r} {gives}, not {right!r}. "
                f"{hint[:1].upper()}{hint[1:]}")
    return _majority_hint(texts, got, want)


def _same_label(got, want):
    """A label equals the reference's: None for None, else a number (not a bool, not text) equal to the answer."""
    if want is None:
        return got is None
    return _is_number(got) and float(got) == want


@learner_check("(texts)", "the majority answer (an int), or None (no readable answer, or a tie for the most votes)")
def check_majority_label(fn):
    """Check fn(texts) -> the answer (an int, by strict_answer) more texts give than any other, or None when no text
    has a readable answer or two answers tie for the most votes (utils.verifiers.label_free.majority_label, its
    default min_share=0), on MAJORITY_CASES and generated groups. Returns the function to use."""
    try:
        fn(list(MAJORITY_CASES[0][1]))
    except NotImplementedError:
        return _note("my_majority_label", majority_label)
    generated = _majority_cases(_generator("check_majority_label"))
    _worked_then_generated(lambda: _worked_majority(fn), lambda: _agree(
        "my_majority_label", fn, majority_label, generated, lambda texts: f"my_majority_label({texts!r})",
        lambda args, got, want: _generated_majority_hint(fn, args[0], got, want), same=_same_label,
        show=lambda x: _short(repr(x), 300)))
    _said_if_reference("my_majority_label", fn, majority_label, list(MAJORITY_CASES[0][1]))
    print(f"OK: my_majority_label matches the reference on {len(MAJORITY_CASES)} worked cases (ties, unreadable "
          f"answers, an empty group among them) and {len(generated)} generated groups.")
    return fn


def _worked_majority(fn):
    """MAJORITY_CASES, each with its message."""
    for what, texts in MAJORITY_CASES:
        want = majority_label(texts)
        try:
            got = fn(list(texts))
        except Exception as e:  # noqa: BLE001 - a crash on a group without votes is the mistake to name
            if _votes(texts):
                raise
            mine = _learner_frames(e)
            where = f" (line {mine[-1].lineno} of {mine[-1].name})" if mine else ""
            raise ExerciseError(f"my_majority_label on {what}: {texts!r}\n  expected None, but it raised "
                                f"{type(e).__name__}: {_short(str(e), 160)}{where}\nHint: "
                                f"{_majority_hint(texts, None, want)}.") from None
        if not _same_label(got, want):
            raise ExerciseError(f"my_majority_label on {what}: {texts!r}\n  expected {want!r}, got "
                                f"{_short(repr(got))}\nHint: {_majority_hint(texts, got, want)}.")


def _majority_cases(rng, n=60):
    """Generated groups, fewest texts first: 1-4 answers (negative ones and 0 among them) with 0-3 votes each, written
    plainly or with spaces around, and 0-3 unreadable texts (a leading zero, a sign, words after the answer, '-0',
    nothing); ties for the most votes, ties below the top, unreadable majorities and groups with nothing readable
    among them (the empty group is a worked case)."""
    def written(a):
        return rng.choice([str(a), str(a), f" {a}", f"{a}\n", f"\t{a} "])

    def unreadable(a):
        forms = [f"0{abs(a)}", f"{a} apples", f"{a}.", "", "x", "-0", f"{a} {a}", f"{a},"]
        return rng.choice(forms + ([f"+{a}"] if a >= 0 else []))

    out = []
    for _ in range(n):
        answers = rng.sample(range(-20, 120), rng.randint(1, 4))
        if rng.random() < 0.2:
            answers.append(0)
        nothing = rng.random() < 0.1                    # a group where no text is readable
        texts = [] if nothing else [written(a) for a in answers for _ in range(rng.randint(0, 3))]
        texts += [unreadable(rng.choice(answers)) for _ in range(rng.randint(1 if nothing else 0, 3))]
        if not texts:
            texts = [written(answers[0])]
        rng.shuffle(texts)
        out.append(texts[:8])
    return [(t,) for t in sorted(out, key=len)]


# (what the case tests, pass rate, kind): the reward is learnability's; kind None: left out (the default, AZR)
LEARN_CASES = [
    ("AZR, the solver right a quarter of the time", 0.25, "azr"),
    ("AZR, a hard problem: right one time in 8", 0.125, "azr"),
    ("AZR, right half the time", 0.5, "azr"),
    ("AZR, an easy problem: right 7 times in 8", 0.875, "azr"),
    ("AZR, never solved (p = 0): it teaches nothing", 0.0, "azr"),
    ("AZR, always solved (p = 1): it teaches nothing", 1.0, "azr"),
    ("R-Zero, right half the time (its peak)", 0.5, "rzero"),
    ("R-Zero, right a quarter of the time", 0.25, "rzero"),
    ("R-Zero, right one time in 8", 0.125, "rzero"),
    ("R-Zero, right 7 times in 8", 0.875, "rzero"),
    ("R-Zero, never solved (p = 0)", 0.0, "rzero"),
    ("R-Zero, always solved (p = 1)", 1.0, "rzero"),
    ("kind left out: AZR, the default", 0.25, None),
]
_GRID = (0.0, 0.125, 0.25, 0.5, 0.875, 1.0)
_FORMULAS = {  # what a version's rewards on _GRID may be, by name
    "azr": lambda p: 1.0 - p if 0.0 < p < 1.0 else 0.0,
    "rzero": lambda p: 1.0 - 2.0 * abs(p - 0.5),
    "1 - p": lambda p: 1.0 - p,
    "p(1 - p)": lambda p: p * (1.0 - p),
    "p": lambda p: p if 0.0 < p < 1.0 else 0.0,
    "plain p": lambda p: p,
    "1 - |p - 1/2|": lambda p: 1.0 - abs(p - 0.5),
    "2|p - 1/2|": lambda p: 2.0 * abs(p - 0.5),
}
_AZR = "AZR's reward is 1 - p when 0 < p < 1, else 0"
_RZERO = "R-Zero's reward is 1 - 2|p - 1/2|"
_LEARN_HINTS = {  # (kind, the formula its rewards match) -> the hint
    ("azr", "rzero"): f"for kind='azr' your function gives R-Zero's 1 - 2|p - 1/2|: read kind ({_AZR})",
    ("rzero", "azr"): f"for kind='rzero' your function gives AZR's reward: read kind ({_RZERO}, highest at p = 1/2)",
    ("rzero", "1 - p"): f"for kind='rzero' your function gives 1 - p, AZR's shape: read kind ({_RZERO})",
    ("azr", "1 - p"): "AZR pays 0 when p = 0 as well as when p = 1: a problem the solver never (or always) solves "
                      "teaches it nothing; 1 - p only when 0 < p < 1",
    ("azr", "p(1 - p)"): f"{_AZR}, not p(1 - p): among the problems it sometimes solves, the harder (lower p) pays "
                         f"more",
    ("azr", "p"): f"{_AZR}, not p: the lower the pass rate, the harder the problem and the more it pays",
    ("azr", "plain p"): f"{_AZR}, not p: the lower the pass rate, the harder the problem and the more it pays",
    ("rzero", "1 - |p - 1/2|"): f"{_RZERO}: the 2 is missing (without it p = 0 and p = 1 pay 0.5 instead of 0)",
    ("rzero", "2|p - 1/2|"): f"{_RZERO}, not 2|p - 1/2|: it is highest (1) where the solver is right half the time "
                             f"and 0 at p = 0 and p = 1",
}


def _rewards(fn, kind):
    """fn's rewards on _GRID for kind (None where it raises or returns no number)."""
    out = []
    for p in _GRID:
        try:
            r = fn(p, kind)
            out.append(float(r) if _is_number(r) else None)
        except Exception:  # noqa: BLE001 - a version that raises matches no formula
            out.append(None)
    return out


def _formula(fn, kind):
    """The name of the formula fn's rewards for kind follow on _GRID, or None."""
    got = _rewards(fn, kind)
    return next((name for name, f in _FORMULAS.items()
                 if all(g is not None and abs(g - f(p)) <= 1e-9 for g, p in zip(got, _GRID))), None)


def _learn_hint(fn, kind):
    """The hint for a wrong learnability: the formula the learner's rewards follow for this kind (and whether the two
    kinds are swapped), read on a grid of pass rates; else the rule."""
    if kind is None:
        return "kind defaults to 'azr': def my_learnability(pass_rate, kind=\"azr\")"
    azr, rzero = _formula(fn, "azr"), _formula(fn, "rzero")
    if azr == "rzero" and rzero == "azr":
        return f"the two kinds are swapped: kind='azr' is Absolute Zero's ({_AZR}), kind='rzero' R-Zero's ({_RZERO})"
    return _LEARN_HINTS.get((kind, azr if kind == "azr" else rzero), _AZR if kind == "azr" else _RZERO)


def _same_reward(got, want):
    return _is_number(got) and abs(float(got) - want) <= 1e-9


@learner_check("(pass_rate, kind)", "the proposer's reward, a number in [0, 1]")
def check_learnability(fn):
    """Check fn(pass_rate, kind="azr") -> the proposer's reward for a problem its solver group passed at that rate
    (utils.rl.proposer.learnability): AZR's 1 - p for 0 < p < 1, else 0; R-Zero's 1 - 2|p - 1/2|; on LEARN_CASES
    (p = 0, 1/8, 1/4, 1/2, 7/8, 1 for each kind, and the default kind) and generated pass rates j / G. Returns the
    function to use."""
    try:
        fn(LEARN_CASES[0][1], LEARN_CASES[0][2])
    except NotImplementedError:
        return _note("my_learnability", learnability)
    generated = _learn_cases(_generator("check_learnability"))
    _worked_then_generated(lambda: _worked_learn(fn), lambda: _agree(
        "my_learnability", fn, learnability, generated, lambda p, kind: f"my_learnability({p!r}, {kind!r})",
        lambda args, got, want: _learn_hint(fn, args[1]), same=_same_reward))
    _said_if_reference("my_learnability", fn, learnability, LEARN_CASES[0][1], LEARN_CASES[0][2])
    print(f"OK: my_learnability matches the reference on {len(LEARN_CASES)} worked cases (both kinds at p = 0, 1/8, "
          f"1/4, 1/2, 7/8 and 1) and {len(generated)} generated ones.")
    return fn


def _worked_learn(fn):
    """LEARN_CASES, each with its message."""
    for what, p, kind in LEARN_CASES:
        want = learnability(p) if kind is None else learnability(p, kind)
        try:
            got = fn(p) if kind is None else fn(p, kind)
        except TypeError as e:
            if kind is not None:
                raise
            raise ExerciseError(f"my_learnability on {what}: my_learnability({p}) raised TypeError: "
                                f"{_short(str(e), 160)}\nHint: {_learn_hint(fn, None)}.") from None
        if not _same_reward(got, want):
            call = f"my_learnability({p})" if kind is None else f"my_learnability({p}, {kind!r})"
            raise ExerciseError(f"my_learnability on {what}: {call}\n  expected {want:.4f}, got {_short(repr(got))}"
                                f"\nHint: {_learn_hint(fn, kind)}.")


def _learn_cases(rng, n=40):
    """Generated (pass rate, kind): pass rates j / G of groups of G = 1 to 16, each kind, in a random order, with
    p = 0 and p = 1 for each kind among them (each at its own place)."""
    out = []
    for _ in range(n):
        g = rng.randint(1, 16)
        out.append((rng.randint(0, g) / g, rng.choice(REWARDS)))
    for case in ((0.0, "azr"), (1.0, "azr"), (0.0, "rzero"), (1.0, "rzero")):
        out.insert(rng.randint(0, len(out)), case)
    return out
