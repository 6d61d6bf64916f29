"""Lab 02's checks (weak vs strong verifiers): a careful match, cases that break last_number_match."""
from utils.notebook.exercises.common import ExerciseError, _generator, _note, _worked_then_generated, learner_check

# Cases the shipped suite does not hold: a written verifier is also judged on these, so that
# fitting the suite case by case shows up as a lower score here.
HIDDEN_ARITHMETIC_CASES = [
    ("-12,345", -12345, 1.0), ("  7 ", 7, 1.0), ("100.", 100, 1.0), ("2,000", 2000, 1.0),
    ("7 7", 77, 0.0), ("77 78", 77, 0.0), ("1,00", 100, 0.0), ("+7", 7, 0.0), ("7..", 7, 0.0),
    ("0.", 0, 1.0), ("\u0667", 7, 0.0), ("12,3456", 123456, 0.0), ("--7", -7, 0.0), ("", 0, 0.0),
]


def _suite_errors(fn, cases):
    """[(case, got)] where fn(output, answer) disagrees with the label; an exception counts as an error."""
    bad = []
    for c in cases:
        try:
            got = float(fn(c["output"], c["answer"]))
        except Exception as e:  # a verifier must never raise: report it as a miss
            got = f"raised {type(e).__name__}: {e}"
        if got != c["label"]:
            bad.append((c, got))
    return bad


@learner_check("(text, answer)", "1.0 or 0.0")
def check_careful_match(fn, min_coverage=0.95):
    """Check a learner's match(text, answer) -> 0.0/1.0 verifier on the adversarial suite and on
    hidden cases: no false positives anywhere (a wrong answer must never score 1), coverage at least
    min_coverage on each. Returns the function to use (the reference careful_match if not written)."""
    from utils.verifiers.arithmetic import careful_match, load_arithmetic_suite

    suite = load_arithmetic_suite()
    hidden = [{"id": f"hidden-{i}", "output": o, "answer": a, "label": label}
              for i, (o, a, label) in enumerate(HIDDEN_ARITHMETIC_CASES)]
    try:
        fn("66", 66)
    except NotImplementedError:
        return _note("my_careful_match", careful_match)
    generated = [{"id": f"generated-{i}", "output": o, "answer": a, "label": careful_match(o, a)}
                 for i, (o, a) in enumerate(_match_cases(_generator("check_careful_match")))]
    parts = [("the shipped suite", suite), ("hidden cases", hidden), ("generated cases", generated)]
    _worked_then_generated(lambda: _judge_suites(fn, parts[:2], min_coverage),
                           lambda: _judge_suites(fn, parts[2:], min_coverage))
    return fn


def _match_cases(rng, n=120):
    """Generated (output, answer) pairs, shortest first: each answer written right (plain, with its thousands
    separators, a final '.', spaces around) and wrong (leading zeros, inner spaces, '+', misplaced commas, '-0', a
    float, an exponent, Unicode digits, two numbers, another number, words, not a str)."""
    out = []
    for _ in range(n):
        a = rng.choice([0, rng.randint(1, 9), rng.randint(10, 999), rng.randint(1000, 99999), -rng.randint(1, 9999)])
        d = str(abs(a))
        sign = "-" if a < 0 else ""
        commas = sign + f"{abs(a):,}"
        text = rng.choice([
            str(a), str(a), commas, commas + ".", f"  {a}\n", f"\t{commas} ",                    # right
            sign + "0" + d, sign + "00" + d, f"{sign}{d[:1]} {d[1:]}" if len(d) > 1 else f"{a} {a}",  # wrong
            "+" + d if a >= 0 else "--" + d, sign + d[:-1] + "," + d[-1:] if len(d) > 1 else f"{a}..",
            "-0" if a == 0 else f"{a}.0", f"{a}e0", str(a).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
            f"{a} {a + 1}", str(a + rng.choice([-10, -1, 1, 100])), f"{a}abc", "abc", "", "six", f"{a},",
            None, a, f"{a}!", f"({a})", f"{sign}{d}_0"])
        out.append((text, a))
    return sorted(out, key=lambda c: len(c[0]) if isinstance(c[0], str) else 0)


def _judge_suites(fn, parts, min_coverage):
    """Judge fn on each (name, cases) part: no false positive, no exception, coverage >= min_coverage."""
    for name, cases in parts:
        bad = _suite_errors(fn, cases)
        fp = [(c, g) for c, g in bad if c["label"] == 0.0 and g == 1.0]
        raised = [(c, g) for c, g in bad if isinstance(g, str)]  # a verifier must never raise
        coverage = 1 - len(bad) / len(cases)
        if fp or raised or coverage < min_coverage:
            shown = "\n".join(f"  {c['id']:12s} output {repr(c['output'])[:30]:32s} answer {c['answer']!r:8} "
                              f"label {c['label']}  got {g}" for c, g in (fp or raised or bad)[:6])
            raise ExerciseError(
                f"my_careful_match on {name}: coverage {coverage:.0%} (need >= {min_coverage:.0%}), "
                f"{len(fp)} false positive(s) (need 0), {len(raised)} exception(s) (need 0). "
                f"First disagreements:\n{shown}\n"
                f"Hint: start from strict_match's rules; accept '1,073' only with commas every three digits "
                f"and one final '.'; reject everything else, and never raise (check isinstance(text, str)).")
        print(f"OK: my_match on {name}: coverage {coverage:.0%}, no false positives ({len(cases)} cases).")


def breaking_cases():
    """The reference answer to Lab 02's exercise: (output, answer, label) cases last_number_match judges wrongly."""
    return [("67 66", 66, 0.0), ("xx66yy", 66, 0.0), ("066", 66, 0.0), ("-0", 0, 0.0)]


@learner_check("()", "a list of (output, answer, label) triples")
def check_breaking_cases(fn, target=None, min_cases=3):
    """fn() -> list of (output, answer, label) triples that `target` (default: last_number_match)
    judges wrongly. Labels are checked against careful_match, the lab's best arithmetic judge.
    Returns the list of cases to use (the reference's if fn is not written)."""
    from utils.verifiers.arithmetic import careful_match, last_number_match

    target = target or last_number_match
    reference = breaking_cases()
    try:
        cases = list(fn())
    except NotImplementedError:
        _note("my_breaking_cases", breaking_cases)  # graded mode: a failure
        print(f"  (the reference's cases: {reference})")
        return reference
    problems, seen = [], set()
    for i, case in enumerate(cases):
        if not (isinstance(case, (tuple, list)) and len(case) == 3):
            problems.append(f"case {i}: {case!r} is not an (output, answer, label) triple")
            continue
        out, ans, label = case
        if not isinstance(out, str):
            problems.append(f"case {i}: the output {out!r} is not a str (a model's output is text)")
            continue
        if isinstance(ans, bool) or not isinstance(ans, int):
            problems.append(f"case {i}: the answer {ans!r} must be an int, as the task's answers are (not a str or "
                            f"a bool)")
            continue
        if isinstance(label, bool) or label not in (0.0, 1.0):
            problems.append(f"case {i}: the label {label!r} must be the number 0.0 or 1.0 (a verifier's score, not "
                            f"True/False)")
            continue
        if careful_match(out, ans) != label:
            problems.append(f"case {i}: {out!r} for answer {ans!r} has label {label}, but careful_match says "
                            f"{careful_match(out, ans)} (if you think it is wrong, you broke careful_match too)")
        elif target(out, ans) == label:
            problems.append(f"case {i}: {target.__name__} judges {out!r} correctly ({label}): it does not break it")
        elif (out, ans) in seen:
            problems.append(f"case {i}: {out!r} for answer {ans} is already in your list: each case counts once")
        else:
            seen.add((out, ans))
    if len(seen) < min_cases or problems:
        raise ExerciseError(f"my_breaking_cases needs at least {min_cases} different cases that {target.__name__} "
                            f"gets wrong; got {len(seen)}.\n  " + "\n  ".join(problems)
                            + "\nHint: last_number_match only looks at the last number in the text.")
    print(f"OK: all {len(cases)} cases break {target.__name__}.")
    return cases
