"""Three tasks in one run (Lab 07's task mix; MT-GRPO, arXiv 2602.05547): one model, one batch, several tasks.

    arithmetic  "37-29=" -> "8": the arithmetic task (utils.tasks.arithmetic), the answer alone
    traces      "478+356:" -> "8+6+0=14 7+5+1=13 4+3+1=8 >834": the scratchpad task (utils.tasks.scratchpad)
    multiply    "47*6=" -> "282": a two-digit number times a digit, the answer alone (this module's splits)

The three share one character alphabet (ALPHABET) and differ in prompt format ('=' with '+' or '-', ':' and '*'),
so the model can tell them apart. A row of a mixed split has columns prompt, answer, task, a and b (the trace
verifier reads a and b); utils.verifiers.mix.task_reward judges each row by its own task's verifier.

The multiply splits (written by `python -m utils.tasks.mix`, seed SPLITS_SEED) cover all 1,000 problems a*b with
a in 0..99 and b in 0..9, disjoint by prompt: test 250, valid 100, train 650.
"""
import os
import random

from utils import DATA_DIR, checks
from utils.tasks import arithmetic, read_jsonl, scratchpad, split_args, write_jsonl

TASKS = ("arithmetic", "traces", "multiply")
ALPHABET = "0123456789+=>: -*"   # the trace model's alphabet, then '-' and '*': the mix model starts from it
SPLIT_SIZES = {"test": 250, "valid": 100, "train": 650}
SPLITS_SEED = 2468


def format_multiply(a, b):
    """'47*6=' : the multiply task's prompt."""
    a, b = (checks.number("format_multiply", name, v, lo=0, integer=True) for name, v in (("a", a), ("b", b)))
    return f"{a}*{b}="


def make_multiply_splits(seed=SPLITS_SEED):
    """The multiply task's splits {test, valid, train}: every a*b with a in 0..99, b in 0..9, shuffled with
    random.Random(seed) and cut in SPLIT_SIZES' order. Rows {prompt, answer, a, b}."""
    seed = checks.number("make_multiply_splits", "seed", seed, lo=0, integer=True)
    rows = [{"prompt": format_multiply(a, b), "answer": str(a * b), "a": a, "b": b}
            for a in range(100) for b in range(10)]
    random.Random(seed).shuffle(rows)
    out, i = {}, 0
    for name, n in SPLIT_SIZES.items():
        out[name], i = rows[i:i + n], i + n
    return out


def multiply_path(name, data_dir=DATA_DIR):
    return os.path.join(data_dir, "multiply", f"{name}.jsonl")


def write_multiply_splits(data_dir=DATA_DIR, seed=SPLITS_SEED):
    return write_jsonl(make_multiply_splits(seed), os.path.join(data_dir, "multiply"))


def load_task(task, name, n=None, data_dir=DATA_DIR):
    """One task's split as a Dataset with columns prompt, answer, task, a, b (first n rows). name: train, valid or
    test (the arithmetic and traces tasks' own splits; ood is not part of the mix)."""
    if task not in TASKS:
        raise ValueError(f"load_task: unknown task={checks._short(task)}; allowed: {TASKS}")
    name, n, data_dir = split_args("load_task", SPLIT_SIZES, name, n, data_dir)
    if task == "arithmetic":
        ds = arithmetic.load_split(name, n, data_dir)
    elif task == "traces":
        ds = scratchpad.load_split(name, n, data_dir=data_dir)
    else:
        ds = read_jsonl(multiply_path(name, data_dir), "utils.tasks.mix")
        ds = ds if n is None else ds.select(range(min(n, len(ds))))
    keep = ("prompt", "answer", "a", "b")
    ds = ds.remove_columns([c for c in ds.column_names if c not in keep])
    return ds.add_column("task", [task] * len(ds))


def load_mix(name, n=None, tasks=TASKS, data_dir=DATA_DIR):
    """The tasks' `name` splits one after another, as one Dataset (columns prompt, answer, task, a, b; the first n
    rows of each task)."""
    import datasets

    if not isinstance(tasks, (list, tuple)) or not tasks or any(t not in TASKS for t in tasks) \
            or len(set(tasks)) != len(tasks):
        raise ValueError(f"load_mix: tasks must be distinct names from {TASKS}, got {checks._short(tasks)}")
    return datasets.concatenate_datasets([load_task(t, name, n, data_dir) for t in tasks])


PRETRAIN_SHARES = {"arithmetic": 0.5, "traces": 0.25, "multiply": 0.25}  # the mix model starts from the trace model


def pretrain_example(rng, rows, shares=None):
    """A (prompt, completion) pair for the mix model's pre-training: a task drawn by `shares` (PRETRAIN_SHARES:
    half arithmetic, whose answers the trace model has never written alone), then a train row of it (rows: {task:
    list of row dicts}); traces get a noisy trace (scratchpad.pretrain_example), the other two their answer."""
    shares = shares or PRETRAIN_SHARES
    task = rng.choices(list(shares), weights=list(shares.values()))[0]
    if task == "traces":
        return scratchpad.pretrain_example(rng, rows[task])
    r = rng.choice(rows[task])
    return r["prompt"], r["answer"]


if __name__ == "__main__":
    s = write_multiply_splits()
    print({k: len(v) for k, v in s.items()}, "->", os.path.dirname(multiply_path("train")))
