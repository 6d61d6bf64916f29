"""Lab 11's checks (beyond rule verifiers): a judge's false-positive rate, the layered checker's rules, and the
shift between two samples of answers (the probe that knows nothing of the behaviour it looks for)."""
import math

from utils.eval.probes import answer_shift
from utils.models.judge import false_positive_rate, verdict_rates
from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _short,
    _worked_then_generated,
    learner_check,
)
from utils.verifiers.programs import MAX_BODY_CHARS, obeys_rules

# (what the case tests, probs, right, threshold)
FPR_CASES = [
    ("two wrong completions, one passed", [0.9, 0.7, 0.2, 0.3], [1, 0, 0, 1], 0.5),
    ("a score exactly at the threshold passes", [0.5, 0.1, 0.8], [0, 0, 1], 0.5),
    ("another threshold: 0.3", [0.35, 0.25, 0.9, 0.1], [0, 0, 0, 1], 0.3),
    ("right completions never count, however the judge scores them", [0.0, 0.0, 0.9], [1, 1, 0], 0.5),
    ("three of four wrong ones passed", [0.6, 0.99, 0.51, 0.49, 0.2], [0, 0, 0, 0, 1], 0.5),
]


@learner_check("(probs, right, threshold)", "the false-positive rate, a number in [0, 1] (nan without wrong ones)")
def check_false_positive_rate(fn):
    """Check fn(probs, right, threshold) -> the share of wrong completions (right == 0) that the judge passes
    (P >= threshold; utils.models.judge.false_positive_rate), on FPR_CASES, and nan (or None) when there is no
    wrong completion. Returns the function to use."""
    try:
        fn(*FPR_CASES[0][1:])
    except NotImplementedError:
        return _note("my_false_positive_rate", false_positive_rate)
    hints = {"over all": "divide by the number of WRONG completions, not by all of them",
             ">": "a completion passes when P >= threshold: a score equal to the threshold passes",
             "right": "count the wrong completions the judge passes, not the right ones it fails",
             "0.5": "use the threshold you are given, not 0.5"}
    generated = _fpr_cases(_generator("check_false_positive_rate"))
    _worked_then_generated(lambda: _worked_fpr(fn, hints), lambda: _agree(
        "my_false_positive_rate", fn, false_positive_rate, generated,
        lambda p, r, t: f"my_false_positive_rate(probs={p}, right={r}, threshold={t})",
        lambda args, got, want: _fpr_hint(hints, *args, got, want)))
    _said_if_reference("my_false_positive_rate", fn, false_positive_rate, *FPR_CASES[0][1:])
    print(f"OK: my_false_positive_rate matches on {len(FPR_CASES)} worked cases and {len(generated)} generated ones, "
          f"and says nan without wrong ones.")
    return fn


def _fpr_cases(rng, n=50):
    """Generated (probs, right, threshold), fewest completions first: 1-8 scores in eighths with thresholds in eighths
    (scores exactly on the threshold among them), right as 0/1, and no wrong completion now and then (nan)."""
    out = []
    for _ in range(n):
        k = rng.randint(1, 8)
        probs = [rng.randint(0, 8) / 8 for _ in range(k)]
        right = [int(rng.random() < (0.4 if rng.random() < 0.9 else 1.0)) for _ in range(k)]
        thr = rng.choice(probs + [rng.randint(1, 7) / 8])
        out.append((probs, right, thr))
    return sorted(out, key=lambda c: len(c[0]))


def _fpr_hint(hints, probs, right, thr, got, want):
    """The hint for a wrong false-positive rate: the mistake its value matches, else the rule."""
    wrong = [p for p, r in zip(probs, right) if r == 0]
    if not wrong:
        return "with no wrong completion there is nothing to pass wrongly: return nan (float('nan'))"
    mistakes = {"over all": sum(p >= thr for p in wrong) / len(probs), ">": sum(p > thr for p in wrong) / len(wrong),
                "right": verdict_rates(probs, right, thr)["false_neg_rate"],
                "0.5": sum(p >= 0.5 for p in wrong) / len(wrong)}
    return next((h for k, h in hints.items() if isinstance(got, (int, float)) and not isinstance(got, bool)
                 and mistakes[k] == mistakes[k] and abs(got - mistakes[k]) < 1e-9 and abs(mistakes[k] - want) > 1e-9),
                "the rate is (wrong ones with P >= threshold) / (wrong ones), a float")


def _worked_fpr(fn, hints):
    """FPR_CASES and the case without wrong completions, each with its message."""
    for what, probs, right, thr in FPR_CASES:
        want, got = false_positive_rate(probs, right, thr), fn(probs, right, thr)
        if not isinstance(got, (int, float)) or isinstance(got, bool) or not abs(got - want) <= 1e-9:  # nan too
            wrong = [p for p, r in zip(probs, right) if r == 0]
            mistakes = {"over all": sum(p >= thr for p in wrong) / len(probs),
                        ">": sum(p > thr for p in wrong) / len(wrong),
                        "right": verdict_rates(probs, right, thr)["false_neg_rate"],
                        "0.5": sum(p >= 0.5 for p in wrong) / len(wrong)}
            hint = next((h for k, h in hints.items() if isinstance(got, (int, float)) and abs(got - mistakes[k]) < 1e-9
                         and abs(mistakes[k] - want) > 1e-9), "the rate is (wrong ones passed) / (wrong ones)")
            raise ExerciseError(f"my_false_positive_rate on {what}:\n  probs {probs}, right {right}, threshold {thr}\n"
                                f"  expected {want:.4f}, got {_short(repr(got))}\nHint: {hint}.")
    got = fn([0.9, 0.2], [1, 1], 0.5)
    if not (got is None or (isinstance(got, float) and math.isnan(got))):
        raise ExerciseError(f"my_false_positive_rate with no wrong completion ([0.9, 0.2], right [1, 1]) must return "
                            f"nan (or None): there is nothing to pass wrongly. Got {_short(repr(got))}")


# (body, obeys the rules?): arithmetic in x only, read from the syntax tree
RULE_CASES = [
    ("6*x+57", True), ("57+6*x", True), ("x", True), ("-x+3", True), ("x*x-2", True), ("  6*x+5 ", True),
    ("exit(0)", False), ("print('all passed')", False), ("{0:57,1:63}[x]", False), ("[57,63][x]", False),
    ("sys.exit(0)", False), ("x.real", False), ("y+1", False), ("__import__('os')", False),
    ("1.5*x", False), ("'57'", False), ("x**2", False), ("x if x else 1", False), ("x==0", False),
    ("6*x+", False), ("", False), ("x\nimport os", False), (None, False), (7, False),
]
RULE_MISTAKES = {
    "exit(0)": "a call (exit, print, __import__) is never arithmetic: refuse any ast.Call",
    "print('all passed')": "a call (exit, print, __import__) is never arithmetic: refuse any ast.Call",
    "{0:57,1:63}[x]": "a table (a dict or list indexed by x) hard-codes the shown values: refuse ast.Subscript",
    "sys.exit(0)": "refuse attributes (ast.Attribute: sys.exit, x.real) and calls",
    "x.real": "refuse attributes (ast.Attribute: sys.exit, x.real)",
    "y+1": "the only name a body may use is x",
    "1.5*x": "constants must be int (type(value) is int): no floats, strings or bools",
    "'57'": "constants must be int (type(value) is int): no floats, strings or bools",
    "x**2": "only +, - and * (and a leading minus): ** can build huge numbers",
    "6*x+": "text that does not parse is not a body: catch SyntaxError and return False",
    "x\nimport os": "parse with ast.parse(body.strip(), mode='eval'): one expression, nothing else",
    None: "a completion that is not text is not a body: return False",
}


@learner_check("(body)", "True if the body is arithmetic in x only (numbers, x, +, -, *), else False")
def check_obeys_rules(fn):
    """Check fn(body) -> bool on RULE_CASES: the layered checker's rules (utils.verifiers.programs.obeys_rules),
    read from the syntax tree, with each plausible hole (calls, attributes,
    tables, other names, float or string constants, **, unparsable text, text that is not a str) covered. Returns
    the function to use."""
    try:
        fn("6*x+57")
    except NotImplementedError:
        return _note("my_obeys_rules", obeys_rules)
    generated = _rule_cases(_generator("check_obeys_rules"))
    _worked_then_generated(lambda: _worked_rules(fn), lambda: _agree(
        "my_obeys_rules", fn, obeys_rules, generated, lambda body: f"my_obeys_rules({body!r})", _rule_hint))
    _said_if_reference("my_obeys_rules", fn, obeys_rules, "6*x+57")
    print(f"OK: my_obeys_rules agrees with the layered checker's rules on {len(RULE_CASES)} bodies, each hack "
          f"among them, and {len(generated)} generated ones.")
    return fn


def _rule_hint(args, got, want):
    """The hint for a wrong verdict on a generated body."""
    body = args[0]
    if isinstance(body, str) and len(body) > MAX_BODY_CHARS:
        return f"a body over {MAX_BODY_CHARS} characters is False whatever it holds (MAX_BODY_CHARS)"
    if want:
        return "this body is plain arithmetic in x (+, -, * of ints and x, parentheses, a leading sign): True"
    return ("an allow-list, not a deny-list: every node must be one of Expression, BinOp with Add, Sub or Mult, "
            "UnaryOp with USub or UAdd, Load, Name 'x' or an int Constant (type(v) is int: True is a bool); anything "
            "else (/, //, %, **, <<, ~, a comparison, ...) is False, and so is text that does not parse ('07')")


def _rule_cases(rng, n=80):
    """Generated bodies, shortest first: random arithmetic in x (ints, +, -, *, unary signs, parentheses), each with a
    chance of one foreign piece (/, //, %, **, <<, >>, &, |, ^, ~, a comparison, a bool, float or str constant, another
    name, a call, an attribute, a subscript, a leading zero), bodies just over and at MAX_BODY_CHARS, and non-text."""
    def expr(depth):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(["x", "x", str(rng.randint(0, 99))])
        a, b = expr(depth - 1), expr(depth - 1)
        form = rng.choice(["{} + {}", "{}-{}", "{}*{}", "({}+{})", "-{}", "+({})*{}"])
        return form.format(a, b) if form.count("{}") == 2 else form.format(a)

    foreign = [" / ", "//", "%", "**", "<<", ">>", "&", "|", "^"]
    out = []
    for _ in range(n):
        body = expr(rng.randint(1, 3))
        roll = rng.random()
        if roll < 0.35:
            op = rng.choice(foreign)
            body = f"{body}{op}{expr(1)}"
        elif roll < 0.6:
            piece = rng.choice(["~x", "True", "False", "1.5", "'7'", "y", "X", "abs(x)", "x.real", "[1, 2][x]",
                                "(x<3)", "(x if x else 1)", "07", "0x1F", "1_000", "None", "(y:=x)", "1e3",
                                "x\nimport os\n", "x;1", "{0: 5}[x]"])
            body = f"{body}+{piece}" if rng.random() < 0.5 else f"{piece}*{body}"
        out.append(body if rng.random() < 0.85 else f"  {body} ")
    long = "x" + "+1" * ((MAX_BODY_CHARS - 1) // 2)          # MAX_BODY_CHARS characters or one fewer: allowed
    out += [long, long + "+1", None, 7, b"x+1", ["x"]]
    return [(b,) for b in sorted(out, key=lambda b: len(b) if isinstance(b, (str, bytes, list)) else 0)]


def _worked_rules(fn):
    """RULE_CASES, each with its message."""
    for body, want in RULE_CASES:
        try:
            got = fn(body)
        except (SyntaxError, ValueError, TypeError, AttributeError) as e:
            raise ExerciseError(f"my_obeys_rules({body!r}) raised {type(e).__name__}: {e}\nHint: a checker never "
                                f"raises on what a model wrote: {RULE_MISTAKES.get(body, 'return False')}") from None
        if not isinstance(got, bool):
            raise ExerciseError(f"my_obeys_rules({body!r}) must return True or False, got {_short(repr(got))}")
        if got != want:
            raise ExerciseError(f"my_obeys_rules({body!r}): expected {want}, got {got}\nHint: "
                                + (RULE_MISTAKES.get(body) or ("this body is plain arithmetic in x: +, -, * of ints "
                                                               "and x only must pass" if want else
                                                               "allow only ast.Expression, BinOp (Add, Sub, Mult), "
                                                               "UnaryOp (USub, UAdd), Name 'x' and int Constant")))


# (what the case tests, texts_a, texts_b)
SHIFT_CASES = [
    ("the same sample", ["66", "56", "66"], ["66", "56", "66"]),
    ("half the mass moved", ["66", "66", "56", "56"], ["66", "66", "66", "66"]),
    ("no answer in common", ["66", "66"], ["56", "57"]),
    ("samples of different sizes", ["1", "1", "2", "3"], ["1", "2"]),
    ("an answer only in the second sample", ["5", "5"], ["5", "7", "7", "5"]),
    ("spaces around an answer do not make it another answer", ["66 ", " 66"], ["66", "56"]),
]


@learner_check("(texts_a, texts_b)", "the total variation distance between the two samples' answers, in [0, 1]")
def check_answer_shift(fn):
    """Check fn(texts_a, texts_b) -> the total variation distance between the shares of each answer (stripped) in
    the two samples (utils.eval.probes.answer_shift) on SHIFT_CASES: equal samples, disjoint ones, different
    sizes, an answer in one sample only, spaces. Returns the function to use."""
    try:
        fn(*SHIFT_CASES[0][1:])
    except NotImplementedError:
        return _note("my_answer_shift", answer_shift)
    generated = _shift_cases(_generator("check_answer_shift"))
    _worked_then_generated(lambda: _worked_shift(fn), lambda: _agree(
        "my_answer_shift", fn, answer_shift, generated, lambda a, b: f"my_answer_shift({a}, {b})",
        lambda args, got, want: _shift_hint(got, want, *args)))
    _said_if_reference("my_answer_shift", fn, answer_shift, *SHIFT_CASES[0][1:])
    print(f"OK: my_answer_shift matches the reference on {len(SHIFT_CASES)} worked cases and {len(generated)} "
          f"generated ones.")
    return fn


def _shift_cases(rng, n=50):
    """Generated (texts_a, texts_b), smallest first: samples of 1-6 answers each, of different sizes, from answers that
    look alike but are not the same answer once stripped (leading zeros, a space inside), spaces around, words and the
    empty answer."""
    pool = ["66", "66", "066", "6 6", " 66", "66 ", "56", "7", "07", "abc", "", "-0", "0"]
    out = []
    for _ in range(n):
        a = [rng.choice(pool) for _ in range(rng.randint(1, 6))]
        b = [rng.choice(pool) for _ in range(rng.randint(1, 6))]
        out.append((a, b))
    return sorted(out, key=lambda c: len(c[0]) + len(c[1]))


def _worked_shift(fn):
    """SHIFT_CASES, each with its message."""
    for what, a, b in SHIFT_CASES:
        want, got = answer_shift(a, b), fn(a, b)
        if not isinstance(got, (int, float)) or isinstance(got, bool) or not abs(got - want) <= 1e-9:  # nan too
            hint = _shift_hint(got, want, a, b)
            raise ExerciseError(f"my_answer_shift on {what}:\n  a {a}\n  b {b}\n  expected {want:.4f}, got "
                                f"{_short(repr(got))}\nHint: {hint}.")


def _shift_hint(got, want, a, b):
    """The hint for a wrong answer_shift: the plausible mistake its value matches, else the rule."""
    from collections import Counter

    ca, cb = Counter(t.strip() for t in a), Counter(t.strip() for t in b)
    raw_a, raw_b = Counter(a), Counter(b)
    mistakes = {
        "the sum of |differences| counts every moved share twice: halve it": 2 * want,
        "shares are counts divided by each sample's own size (the samples may differ in size)":
            0.5 * sum(abs(ca[x] - cb[x]) for x in set(ca) | set(cb)),
        "sum over every answer in EITHER sample, not only the first's":
            0.5 * sum(abs(ca[x] / len(a) - cb[x] / len(b)) for x in ca),
        "strip spaces first: ' 66' and '66' are one answer":
            0.5 * sum(abs(raw_a[x] / len(a) - raw_b[x] / len(b)) for x in set(raw_a) | set(raw_b)),
    }
    if isinstance(got, (int, float)):
        for hint, value in mistakes.items():
            if abs(got - value) < 1e-9 and abs(value - want) > 1e-9:
                return hint
    return ("half the sum of |share in a - share in b| over every answer in EITHER sample; shares are counts "
            "divided by each sample's own size; strip spaces first")
