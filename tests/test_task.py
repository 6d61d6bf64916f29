"""utils.tasks.arithmetic: prompt format, solver, seeded generator, the splits on disk."""
import json
import random

import pytest

from utils.tasks import arithmetic as task


def test_format_prompt_hand_examples():
    assert task.format_prompt(37, "+", 29) == "37+29="
    assert task.format_prompt(3, "-", 15) == "3-15="
    assert task.format_prompt(0, "-", 0) == "0-0="


@pytest.mark.parametrize("a, op, b, want", [
    (37, "+", 29, 66),    # 37 + 29 = 66
    (3, "-", 15, -12),    # 3 - 15 = -12
    (12, "-", 111, -99),  # 12 - 111 = -99
    (0, "-", 0, 0),
    (999, "+", 99, 1098),
])
def test_solve_hand_values(a, op, b, want):
    assert task.solve(a, op, b) == want


@pytest.mark.parametrize("op", ["/", "%", "x", "", "*"])
def test_solve_unknown_operator(op):
    with pytest.raises(ValueError, match="unknown operator"):
        task.solve(1, op, 2)


def test_make_problem_deterministic_and_consistent():
    a = [task.make_problem(random.Random(7)) for _ in range(3)]
    r1, r2 = random.Random(7), random.Random(7)
    seq1 = [task.make_problem(r1) for _ in range(50)]
    seq2 = [task.make_problem(r2) for _ in range(50)]
    assert seq1 == seq2                        # same seed -> same sequence
    assert a[0] == a[1] == a[2] == seq1[0]     # a fresh Random(7) always gives the same first problem
    r3 = random.Random(8)
    assert seq1 != [task.make_problem(r3) for _ in range(50)]  # another seed, another sequence
    for p in seq1:
        assert set(p) == {"prompt", "answer", "a", "op", "b"}
        assert 0 <= p["a"] <= 99 and 0 <= p["b"] <= 99 and p["op"] in task.OPS
        assert p["prompt"] == f"{p['a']}{p['op']}{p['b']}="
        assert p["answer"] == str(task.solve(p["a"], p["op"], p["b"]))


def test_make_problem_ranges_and_ops():
    rng = random.Random(0)
    ps = [task.make_problem(rng, lo=5, hi=6, ops="-") for _ in range(100)]
    assert {p["op"] for p in ps} == {"-"}
    assert {p["a"] for p in ps} | {p["b"] for p in ps} <= {5, 6}
    # 5-5=0, 6-6=0, 5-6=-1, 6-5=1: the only possible answers, and all of them come up
    assert {p["answer"] for p in ps} == {"0", "-1", "1"}
    for bad in ("", "*", "+/"):
        with pytest.raises(ValueError, match="ops must name"):
            task.make_problem(rng, ops=bad)


def test_make_problem_big_operand():
    rng = random.Random(3)
    for _ in range(200):
        p = task.make_problem(rng, big_lo=100, big_hi=999)
        big, small = (p["a"], p["b"]) if p["a"] >= 100 else (p["b"], p["a"])
        assert 100 <= big <= 999 and 0 <= small <= 99


@pytest.fixture(scope="module")
def splits():
    return task.make_splits()


def test_make_splits_sizes_disjoint_deterministic(splits):
    assert {k: len(v) for k, v in splits.items()} == task.SPLIT_SIZES
    prompts = {k: {r["prompt"] for r in v} for k, v in splits.items()}
    for k, v in splits.items():
        assert len(prompts[k]) == len(v), f"duplicate prompts inside {k}"
    names = sorted(prompts)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            assert not prompts[x] & prompts[y], f"{x} and {y} share prompts"
    assert task.make_splits() == splits                 # deterministic
    assert task.make_splits(seed=1)["test"] != splits["test"]


def test_make_splits_small_sizes():
    s = task.make_splits(seed=5, sizes={"train": 10, "valid": 3, "test": 4, "ood": 2})
    assert {k: len(v) for k, v in s.items()} == {"train": 10, "valid": 3, "test": 4, "ood": 2}


def test_shipped_files_equal_make_splits(splits):
    for name, rows in splits.items():
        with open(task.split_path(name)) as f:
            on_disk = [json.loads(line) for line in f if line.strip()]
        assert on_disk == rows, (f"data/arithmetic/{name}.jsonl differs from make_splits(); "
                                 "run python -m utils.tasks.arithmetic")


def test_ood_has_one_three_digit_operand(splits):
    for r in splits["ood"]:
        assert (100 <= r["a"] <= 999) != (100 <= r["b"] <= 999)  # exactly one is 3-digit
        assert min(r["a"], r["b"]) <= 99
    for name in ("train", "valid", "test"):
        assert all(r["a"] <= 99 and r["b"] <= 99 for r in splits[name])


def test_answers_are_correct(splits):
    for rows in splits.values():
        for r in rows:
            assert int(r["answer"]) == task.solve(r["a"], r["op"], r["b"])


def test_pretrain_problem_never_heldout(splits):
    heldout = {r["prompt"] for name in ("test", "valid", "ood") for r in splits[name]}
    train_rows = splits["train"]
    ood_prompts = {r["prompt"] for r in splits["ood"]}
    rng = random.Random(0)
    # p_big=0.5 stresses the fresh 3-digit branch (the build uses 0.05)
    drawn = [task.pretrain_problem(rng, train_rows, ood_prompts, p_big=0.5) for _ in range(20000)]
    assert not {p["prompt"] for p in drawn} & heldout
    n_big = sum(max(p["a"], p["b"]) >= 100 for p in drawn)
    assert 9000 < n_big < 11000       # about half of 20000 come from the 3-digit branch
    # with p_big=0 every problem is a train row
    train_prompts = {r["prompt"] for r in train_rows}
    assert all(task.pretrain_problem(rng, train_rows, ood_prompts, p_big=0.0)["prompt"] in train_prompts
               for _ in range(500))


def test_load_split():
    ds = task.load_split("test", n=5)
    assert len(ds) == 5
    assert set(ds.column_names) >= {"prompt", "answer", "a", "op", "b"}
    assert list(ds["prompt"]) == [r["prompt"] for r in task.make_splits()["test"][:5]]
    assert len(task.load_split("valid")) == task.SPLIT_SIZES["valid"]


def test_load_split_unknown_name():
    with pytest.raises(ValueError, match="unknown split"):
        task.load_split("training")


def test_load_split_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="utils.tasks.arithmetic"):
        task.load_split("test", data_dir=str(tmp_path))


def test_write_splits_roundtrip(tmp_path):
    s = task.write_splits(data_dir=str(tmp_path), seed=9)
    ds = task.load_split("ood", data_dir=str(tmp_path))
    assert list(ds["prompt"]) == [r["prompt"] for r in s["ood"]]
