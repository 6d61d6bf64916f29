"""The arithmetic task: a seeded problem generator, one prompt format, and the splits.

A problem is "a+b=" or "a-b="; the completion the model should write is the answer
followed by end-of-sequence, e.g. prompt "37+29=" -> completion "66".

Splits (written by `python -m utils.tasks.arithmetic`, loadable with `datasets`):
  train  two-operand problems with operands 0..99; the only split anything trains on
  valid  same distribution, disjoint; used only to decide when base-model pre-training stops
  test   same distribution, disjoint from train and valid: held-out accuracy
  ood    a 3-digit operand against a 1-2 digit one (100..999 op 0..99): out of distribution.
         Pre-training sees a small share of *other* 3-digit problems, so the base model
         solves these sometimes.

The problem grammar (Lab 12's proposer): KINDS, each (digits of a, digits of b, operator) with 1 to 3 digits an
operand; kind_problems draws problems of one kind, kind_name names it.
"""
import os
import random

from utils import DATA_DIR, checks
from utils.tasks import read_jsonl, split_args, split_sizes, write_jsonl

OPS = "+-"
SPLIT_SIZES = {"train": 6000, "valid": 300, "test": 500, "ood": 500}
SPLITS_SEED = 1234


def format_prompt(a, op, b):
    """'37+29=' : the one prompt format every lab uses."""
    a, b = (checks.number("format_prompt", name, v, integer=True) for name, v in (("a", a), ("b", b)))
    if op not in OPS:
        raise ValueError(f"format_prompt: op={checks._short(op)}; allowed: {OPS}")
    return f"{a}{op}{b}="


def solve(a, op, b):
    """The answer to a op b, for op in OPS ('+' or '-')."""
    a, b = (checks.number("solve", name, v, integer=True) for name, v in (("a", a), ("b", b)))
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    raise ValueError(f"unknown operator {op!r}; allowed: '+', '-'")


def make_problem(rng, lo=0, hi=99, ops=OPS, big_lo=None, big_hi=None):
    """One problem as a dict {prompt, answer, a, op, b}; answer is a string like '-12'.

    Operands are drawn uniformly from [lo, hi]. If big_lo/big_hi are given, one operand
    (chosen at random) is drawn from [big_lo, big_hi] instead: the OOD family.
    """
    if not ops or set(ops) - set(OPS):
        raise ValueError(f"ops must name one or more of the operators {OPS!r}, got {ops!r}")
    a, b = rng.randint(lo, hi), rng.randint(lo, hi)
    if big_lo is not None:
        if rng.random() < 0.5:
            a = rng.randint(big_lo, big_hi)
        else:
            b = rng.randint(big_lo, big_hi)
    op = rng.choice(ops)
    return {"prompt": format_prompt(a, op, b), "answer": str(solve(a, op, b)), "a": a, "op": op, "b": b}


DIGITS = (1, 2, 3)   # an operand's digits in the problem grammar (one digit: 0-9)
KINDS = tuple((da, db, op) for da in DIGITS for db in DIGITS for op in OPS)   # 18 kinds: (digits a, digits b, op)


def kind_name(kind):
    """'2+1 digits' for (2, 1, '+')."""
    if kind not in KINDS:
        raise ValueError(f"kind_name: kind must be one of KINDS, (digits of a, digits of b, op), got "
                         f"{checks._short(kind)}")
    return f"{kind[0]}{kind[2]}{kind[1]} digits"


def _operand(rng, digits):
    return rng.randint(0, 9) if digits == 1 else rng.randint(10 ** (digits - 1), 10 ** digits - 1)


def kind_problems(kind, n, seed=0, exclude=frozenset()):
    """n distinct problems {prompt, answer, a, op, b} of `kind` (digits of a, digits of b, op; one digit: 0-9),
    drawn with random.Random(seed), none of them a prompt in `exclude`. Fewer than n exist for the smallest kinds
    (1+1 digits: 100): then all that are not excluded, in drawn order."""
    where = "kind_problems"
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of KINDS, (digits of a, digits of b, op), got "
                         f"{checks._short(kind)}")
    n = checks.number(where, "n", n, lo=0, hi=1_000_000, integer=True)
    rng = random.Random(checks.number(where, "seed", seed, lo=0, integer=True))
    if isinstance(exclude, (str, bytes)) or not hasattr(exclude, "__contains__"):
        raise ValueError(f"{where}: exclude must be a set of prompts (or any collection), got {checks._short(exclude)}")
    da, db, op = kind
    possible = (10 if da == 1 else 9 * 10 ** (da - 1)) * (10 if db == 1 else 9 * 10 ** (db - 1))
    out, seen = [], set()
    for _ in range(50 * n + 1000):
        if len(out) == n or len(seen) == possible:
            break
        a, b = _operand(rng, da), _operand(rng, db)
        prompt = format_prompt(a, op, b)
        if prompt in seen:
            continue
        seen.add(prompt)
        if prompt not in exclude:
            out.append({"prompt": prompt, "answer": str(solve(a, op, b)), "a": a, "op": op, "b": b})
    return out



def kind_sets(pool_n=3000, eval_n=40, pool_seed=1212, eval_seed=3434):
    """Lab 12's problems by kind: (pool, evals), lists of kind_problems rows with their "kind" index into KINDS.
    evals: eval_n problems of each kind (drawn first, with seed eval_seed + k: the smallest kinds cannot fill both),
    none a prompt of the test, valid, ood or train split (the base model saw the train split in pre-training);
    pool: up to pool_n more of each kind (seed pool_seed + k) to train on, none a held-out split's or an eval
    row's prompt (it may hold train prompts)."""
    where = "kind_sets"
    pool_n = checks.number(where, "pool_n", pool_n, lo=0, hi=1_000_000, integer=True)
    eval_n = checks.number(where, "eval_n", eval_n, lo=0, hi=1_000_000, integer=True)
    held = {p for s in ("test", "valid", "ood") for p in load_split(s)["prompt"]}
    train = set(load_split("train")["prompt"])
    pool, evals = [], []
    for k, kind in enumerate(KINDS):
        ev = kind_problems(kind, eval_n, seed=checks.number(where, "eval_seed", eval_seed, lo=0, integer=True) + k,
                           exclude=held | train)
        evals += [dict(r, kind=k) for r in ev]
        rows = kind_problems(kind, pool_n, seed=checks.number(where, "pool_seed", pool_seed, lo=0, integer=True) + k,
                             exclude=held | {r["prompt"] for r in ev})
        pool += [dict(r, kind=k) for r in rows]
    return pool, evals


def make_splits(seed=SPLITS_SEED, sizes=None):
    """All four splits as {name: [problem, ...]}, disjoint by prompt. Deterministic in seed."""
    seed = checks.number("make_splits", "seed", seed, lo=0, integer=True)
    sizes = split_sizes("make_splits", SPLIT_SIZES, sizes)
    rng = random.Random(seed)
    seen = set()
    out = {}

    def draw(n, **kw):
        rows = []
        while len(rows) < n:
            p = make_problem(rng, **kw)
            if p["prompt"] not in seen:
                seen.add(p["prompt"])
                rows.append(p)
        return rows

    # held-out splits first, so train can never take their prompts
    out["test"] = draw(sizes["test"])
    out["valid"] = draw(sizes["valid"])
    out["ood"] = draw(sizes["ood"], big_lo=100, big_hi=999)
    out["train"] = draw(sizes["train"])
    return out


def pretrain_problem(rng, train_rows, ood_prompts, p_big=0.05):
    """A problem for base-model pre-training: a train row (a dict with prompt and answer), or (with
    probability p_big) a fresh 3-digit problem that is not in the OOD split. Never a test/valid/ood prompt."""
    if rng.random() < p_big:
        while True:
            p = make_problem(rng, big_lo=100, big_hi=999)
            if p["prompt"] not in ood_prompts:
                return p
    return rng.choice(train_rows)


def split_path(name, data_dir=DATA_DIR):
    return os.path.join(data_dir, "arithmetic", f"{name}.jsonl")


def write_splits(data_dir=DATA_DIR, seed=SPLITS_SEED):
    return write_jsonl(make_splits(seed), os.path.join(data_dir, "arithmetic"))


def load_split(name, n=None, data_dir=DATA_DIR):
    """A split as a datasets.Dataset with columns prompt, answer, a, op, b (first n rows)."""
    name, n, data_dir = split_args("load_split", SPLIT_SIZES, name, n, data_dir)
    ds = read_jsonl(split_path(name, data_dir), "utils.tasks.arithmetic")
    return ds if n is None else ds.select(range(min(n, len(ds))))


if __name__ == "__main__":
    s = write_splits()
    print({k: len(v) for k, v in s.items()}, "->", os.path.dirname(split_path("train")))
