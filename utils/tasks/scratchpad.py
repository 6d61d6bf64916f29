"""The scratchpad task (Labs 06-07): column addition with the working written out.

A problem is "478+356:"; the completion is one step per column, right to left, then the answer:

    8+6+0=14 7+5+1=13 4+3+1=8 >834

Step i reads "x+y+c=s": x and y are the two operands' digits in column i (0 where an operand has no
digit there), c is the carry into the column (the tens digit of the step before; 0 for the first)
and s = x + y + c. After the last step, ">" and the answer. Why this design:

- every step can be checked on its own (is x+y+c=s true?) and against the problem (are x, y and c the
  right digits and carry for column i?): the gap between those two checks is what a process reward
  that only checks the arithmetic leaves open (Lab 06);
- the number of steps is the number of digits of the longer operand, so difficulty has one knob
  (`digits`) and completion length grows with it: about 9 tokens a step with the character
  tokenizer, 20 to 60 tokens a completion;
- the answer follows from the steps (the last step's sum, then each earlier step's units digit), so
  a trace whose steps are right and whose answer is not is a visible kind of error, and so is a trace
  with a right answer and wrong or missing steps.

Splits (written by `python -m utils.tasks.scratchpad`, seed SPLITS_SEED), disjoint by prompt:
  train  operands of 2 to 4 digits (the longer one sets the level); the only split anything trains on
  valid  the same distribution; used only to stop base-model pre-training
  test   the same distribution: held-out accuracy, per level
  ood    5-digit operands: longer traces than training ever shows
"""
import numbers
import os
import random

from utils import DATA_DIR, checks
from utils.tasks import read_jsonl, split_args, split_sizes, write_jsonl

ALPHABET = "0123456789+=>: "  # the character tokenizer's alphabet for this task
LEVELS = (2, 3, 4)            # digits of the longer operand, in train / valid / test
OOD_LEVELS = (5,)
SPLIT_SIZES = {"train": 6000, "valid": 300, "test": 600, "ood": 300}
SPLITS_SEED = 4321


def _operands(where, a, b):
    """a and b as ints, after checking: operands are non-negative integers (ValueError naming the one that is not)."""
    out = []
    for name, v in (("a", a), ("b", b)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{where}: operands must be non-negative integers, got {name}={checks._short(v)}")
        out.append(int(v))
    return out


def format_prompt(a, b):
    """'478+356:' : the scratchpad prompt (':' where the arithmetic task has '=')."""
    a, b = _operands("format_prompt", a, b)
    return f"{a}+{b}:"


def steps_for(a, b):
    """The right steps for a + b, as a list of (x, y, c, s) tuples, right-most column first."""
    a, b = _operands("steps_for", a, b)
    da, db = str(a)[::-1], str(b)[::-1]
    out, c = [], 0
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        s = x + y + c
        out.append((x, y, c, s))
        c = s // 10
    return out


def _steps(where, name, steps):
    """steps after checking: a list of (x, y, c, s) steps, each four integers >= 0."""
    if isinstance(steps, (str, bytes, dict)) or not isinstance(steps, (list, tuple)) or not all(
            isinstance(st, (list, tuple)) and len(st) == 4 and all(isinstance(v, numbers.Integral) and
                                                                   not isinstance(v, bool) and v >= 0 for v in st)
            for st in steps):
        raise ValueError(f"{where}: {name} must be a list of (x, y, c, s) steps, four integers >= 0 each, got "
                         f"{checks._short(steps)}")
    return steps


def format_step(step):
    """(8, 6, 0, 14) -> '8+6+0=14'."""
    _steps("format_step", "step", [step])
    return "{}+{}+{}={}".format(*step)


def format_trace(steps, answer):
    """The completion text: the steps, space-separated, then ' >' and the answer (an integer >= 0, or its digits)."""
    _steps("format_trace", "steps", steps)
    if not (isinstance(answer, str) and answer.isascii() and answer.isdigit()):
        checks.number("format_trace", "answer", answer, lo=0, integer=True)
    return " ".join(format_step(s) for s in steps) + (" " if steps else "") + f">{answer}"


def answer_from_steps(steps):
    """The number a list of steps spells: each step's units digit, and the last step's full sum in
    front (8+6+0=14 7+5+1=13 4+3+1=8 -> 834). None for no steps."""
    if steps is None or not _steps("answer_from_steps", "steps", steps):
        return None
    return str(steps[-1][3]) + "".join(str(s[3] % 10) for s in reversed(steps[:-1]))


def make_problem(rng, digits):
    """One problem whose longer operand has `digits` digits: {prompt, answer, a, b, digits, trace}."""
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 30:
        raise ValueError(f"digits must be an int from 1 to 30, got {digits!r}")
    lo = 10 ** (digits - 1) if digits > 1 else 0
    a = rng.randint(lo, 10 ** digits - 1)
    b = rng.randint(0 if digits == 1 else 10 ** (rng.randint(1, digits) - 1), 10 ** digits - 1)
    if rng.random() < 0.5:
        a, b = b, a
    return {"prompt": format_prompt(a, b), "answer": str(a + b), "a": a, "b": b, "digits": digits,
            "trace": format_trace(steps_for(a, b), a + b)}


def fresh_problems(n, digits, seed, exclude=()):
    """n problems at level `digits` (make_problem's dicts), distinct, none of whose prompts is in `exclude` (e.g.
    a split's prompts), drawn with random.Random(seed): training problems beyond the shipped splits."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000:
        raise ValueError(f"fresh_problems: n must be an int from 1 to 1000000, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"fresh_problems: seed must be an int >= 0, got {seed!r}")
    if isinstance(exclude, (str, bytes)) or not hasattr(exclude, "__iter__"):
        raise ValueError(f"fresh_problems: exclude must be a collection of prompts, got {exclude!r:.60}")
    try:
        seen = {p for p in exclude if isinstance(p, str)}
    except TypeError:
        raise ValueError(f"fresh_problems: exclude must be a collection of prompts (strings), got {exclude!r:.60}") \
            from None
    rng, rows, tries = random.Random(seed), [], 0
    while len(rows) < n:
        tries += 1
        if tries > 100 * n + 10_000:
            raise ValueError(f"fresh_problems: could not find {n} new {digits}-digit problems (there are not that "
                             f"many outside exclude): ask for fewer")
        p = make_problem(rng, digits)
        if p["prompt"] not in seen:
            seen.add(p["prompt"])
            rows.append(p)
    return rows


def make_splits(seed=SPLITS_SEED, sizes=None):
    """All four splits as {name: [problem, ...]}, disjoint by prompt, levels drawn evenly."""
    seed = checks.number("make_splits", "seed", seed, lo=0, integer=True)
    sizes = split_sizes("make_splits", SPLIT_SIZES, sizes)
    rng, seen, out = random.Random(seed), set(), {}

    def draw(n, levels):
        rows = []
        while len(rows) < n:
            p = make_problem(rng, levels[len(rows) % len(levels)])
            if p["prompt"] not in seen:
                seen.add(p["prompt"])
                rows.append(p)
        return rows

    out["test"] = draw(sizes["test"], LEVELS)  # held-out splits first: train can never take their prompts
    out["valid"] = draw(sizes["valid"], LEVELS)
    out["ood"] = draw(sizes["ood"], OOD_LEVELS)
    out["train"] = draw(sizes["train"], LEVELS)
    return out


# The base model's pre-training text (utils/runs/build_base_model.py, task "scratchpad"): right traces,
# and the flaws of real working, so that RL finds length and trace quality that vary.
NOISE = {
    "right": 0.55,     # the right steps and answer
    "slip": 0.15,      # one step's sum off by one; the rest (carries, answer) follow the slip
    "skip": 0.10,      # one step left out; the right answer all the same
    "pad": 0.10,       # a step that adds nothing (0+0+0=0) or a step written twice; the right answer
    "miscopy": 0.05,   # the right steps; one digit of the answer wrong
    "bare": 0.05,      # no working: '>answer' alone
}


def noisy_trace(rng, a, b, noise=None):
    """(kind, completion text) for a + b, its kind drawn from `noise` (NOISE's shares by default)."""
    noise = noise or NOISE
    kind = rng.choices(list(noise), weights=list(noise.values()))[0]
    steps, answer = steps_for(a, b), str(a + b)
    if kind == "slip":
        i, c, out = rng.randrange(len(steps)), 0, []
        for j, (x, y, _, _) in enumerate(steps):
            s = x + y + c
            s = s + 1 if j == i and s < 19 else s - 1 if j == i else s
            out.append((x, y, c, s))
            c = min(s // 10, 1)
        steps, answer = out, answer_from_steps(out)
    elif kind == "skip" and len(steps) > 1:
        del steps[rng.randrange(len(steps))]
    elif kind == "pad":
        i = rng.randrange(len(steps) + 1)
        steps.insert(i, (0, 0, 0, 0) if rng.random() < 0.5 else steps[min(i, len(steps) - 1)])
    elif kind == "miscopy":
        i = rng.randrange(len(answer))
        digit = rng.choice([d for d in "0123456789" if d != answer[i] and (i or d != "0")])
        answer = answer[:i] + digit + answer[i + 1:]
    elif kind == "bare":
        return kind, f">{answer}"
    return kind, format_trace(steps, answer)


def with_check(text):
    """The same completion with a check pass: its working written a second time before the answer
    ('8+6+0=14 >14' -> '8+6+0=14 8+6+0=14 >14'). The outcome verifier reads only the answer, so a check pass
    costs length and changes no reward: the free-length variant of the task (Lab 06's length study). A
    completion without working ('>14') is returned unchanged."""
    if not isinstance(text, str) or " >" not in text:
        if isinstance(text, str) and text.startswith(">"):
            return text
        raise ValueError(f"with_check: text must be a trace 'steps >answer', got {checks._short(text)}")
    working, answer = text.rsplit(" >", 1)
    return f"{working} {working} >{answer}"


def pretrain_example(rng, train_rows, p_check=0.0):
    """A (prompt, completion) pair for base-model pre-training: a train problem and a noisy trace of it; with
    probability p_check (0 to 1) the trace carries a check pass (with_check). p_check=0 draws nothing more, so the
    trace model's recipe is unchanged."""
    p_check = checks.number("pretrain_example", "p_check", p_check, lo=0, hi=1)
    p = rng.choice(train_rows)
    text = noisy_trace(rng, p["a"], p["b"])[1]
    return p["prompt"], with_check(text) if p_check and rng.random() < p_check else text


def split_path(name, data_dir=DATA_DIR):
    return os.path.join(data_dir, "scratchpad", f"{name}.jsonl")


def write_splits(data_dir=DATA_DIR, seed=SPLITS_SEED):
    return write_jsonl(make_splits(seed), os.path.join(data_dir, "scratchpad"))


def load_split(name, n=None, digits=None, data_dir=DATA_DIR):
    """A split as a datasets.Dataset (columns prompt, answer, a, b, digits, trace): the first n rows,
    of one level if `digits` is given."""
    name, n, data_dir = split_args("load_split", SPLIT_SIZES, name, n, data_dir)
    ds = read_jsonl(split_path(name, data_dir), "utils.tasks.scratchpad")
    if digits is not None:
        levels = sorted(set(ds["digits"]))
        if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits not in levels:
            raise ValueError(f"split {name!r} has no problems with digits={digits!r}; it has {levels}")
        ds = ds.filter(lambda r: r["digits"] == digits)
    return ds if n is None else ds.select(range(min(n, len(ds))))


if __name__ == "__main__":
    s = write_splits()
    print({k: len(v) for k, v in s.items()}, "->", os.path.dirname(split_path("train")))
