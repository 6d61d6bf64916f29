"""The scratchpad task (utils/tasks/scratchpad.py) and its trace verifiers (utils/verifiers/traces.py),
against values worked out by hand."""
import json
import random
import time

import pytest

from utils.tasks import scratchpad as sp
from utils.verifiers import traces as T

# 478 + 356: 8+6+0=14 (carry 1), 7+5+1=13 (carry 1), 4+3+1=8 -> 834
GOOD = "8+6+0=14 7+5+1=13 4+3+1=8 >834"
COLS = dict(answer=["834"], a=[478], b=[356])


def test_steps_and_trace_by_hand():
    assert sp.steps_for(478, 356) == [(8, 6, 0, 14), (7, 5, 1, 13), (4, 3, 1, 8)]
    assert sp.steps_for(5, 95) == [(5, 5, 0, 10), (0, 9, 1, 10)]  # the shorter operand's missing digit is 0
    assert sp.format_trace(sp.steps_for(478, 356), 834) == GOOD
    assert sp.answer_from_steps(sp.steps_for(5, 95)) == "100"  # the last step's whole sum leads
    assert sp.answer_from_steps([]) is None
    assert sp.format_prompt(478, 356) == "478+356:"
    with pytest.raises(ValueError, match="non-negative"):
        sp.steps_for(-1, 3)


def test_answers_and_operands_read_as_the_numbers_they_hold():
    """An answer column of ints, floats that hold ints (834.0, as a table of numbers stores it) or numpy's numbers
    pays as the text "834" does (issue 60: 834.0 paid 0); 834.5 is no answer; operands as floats that hold ints
    count, 478.5 does not (it was cut to 478). A reward given neither the column it reads nor what stands for it
    names the column."""
    import numpy as np
    trace = "8+6+0=14 7+5+1=13 4+3+1=8 >834"
    for answer in ("834", 834, 834.0, np.int64(834), np.float64(834.0)):
        assert T.outcome_reward([trace], answer=[answer]) == [1.0], answer
        assert T.trace_reward([trace], answer=[answer], a=[478], b=[356]) == [1.0], answer
    assert T.outcome_reward([trace], answer=[834.5]) == [0.0]
    assert T.process_reward([trace], a=[478.0], b=[np.int64(356)]) == [1.0]
    assert T.process_reward([trace], a=[478.5], b=[356]) == [0.0]
    assert T.outcome_reward([trace], a=[478], b=[356]) == [1.0]   # no answer column: the operands' sum
    for call, name in ((lambda: T.process_reward([trace], answer=["834"]), "`a`"),
                       (lambda: T.process_reward([trace], a=[478]), "`b`"),
                       (lambda: T.outcome_reward([trace]), "`answer`"),
                       (lambda: T.rubric_reward([trace], answer=["834"], a=[478]), "`b`")):
        with pytest.raises(ValueError, match=f"no {name} column"):
            call()
    assert T.format_reward([trace]) == [1.0] and T.arithmetic_reward([trace]) == [1.0]   # they read no column


def test_problems_and_splits():
    rng = random.Random(0)
    for digits in (1, 2, 3, 4, 5):
        for _ in range(50):
            p = sp.make_problem(rng, digits)
            assert len(str(max(p["a"], p["b"]))) == digits and int(p["answer"]) == p["a"] + p["b"]
            assert p["trace"].endswith(">" + p["answer"]) and T.trace_reward([p["trace"]], **_cols(p)) == [1.0]
            assert set(p["prompt"] + p["trace"]) <= set(sp.ALPHABET)
    with pytest.raises(ValueError, match="digits"):
        sp.make_problem(rng, 0)
    s = sp.make_splits(sizes={"train": 300, "valid": 30, "test": 60, "ood": 20})
    prompts = [r["prompt"] for rows in s.values() for r in rows]
    assert len(prompts) == len(set(prompts)), "splits are disjoint by prompt"
    assert {r["digits"] for r in s["train"]} == set(sp.LEVELS) and {r["digits"] for r in s["ood"]} == {5}
    assert s == sp.make_splits(sizes={"train": 300, "valid": 30, "test": 60, "ood": 20}), "seeded"


def test_shipped_splits_match_the_generator():
    for name, rows in sp.make_splits().items():
        with open(sp.split_path(name)) as f:
            assert [json.loads(line) for line in f] == rows, f"data/scratchpad/{name}.jsonl is stale"
    ds = sp.load_split("test", digits=3)
    assert set(ds["digits"]) == {3} and len(ds) == sp.SPLIT_SIZES["test"] // 3
    with pytest.raises(ValueError, match="digits=7"):
        sp.load_split("test", digits=7)
    with pytest.raises(ValueError, match="unknown split"):
        sp.load_split("dev")


def _cols(p):
    return dict(answer=[p["answer"]], a=[p["a"]], b=[p["b"]])


def test_parse():
    assert T.parse(GOOD) == {"steps": [(8, 6, 0, 14), (7, 5, 1, 13), (4, 3, 1, 8)], "answer": "834",
                             "well_formed": True}
    assert T.parse("8+6+0=14 x >834") == {"steps": [(8, 6, 0, 14), None], "answer": "834", "well_formed": False}
    assert T.parse(">834")["well_formed"] is False, "an answer without working does not parse as a trace"
    assert T.parse("8+6+0=14 >0834")["answer"] is None, "no leading zeros"
    assert T.parse("8+6+0=20 >834")["steps"] == [None], "a column sum is at most 19"
    assert T.parse(GOOD + " >1")["well_formed"] is False and T.parse(GOOD + " >1")["answer"] == "1"
    for bad in (None, b"8+6+0=14 >14", 834, "1" * (T.MAX_CHARS + 1)):
        assert T.parse(bad) is None


# (completion, outcome, format, arithmetic, process, process all-or-nothing, trace, shaped (defaults), rubric)
# worked by hand for 478+356=834; shaped = 1.0*outcome + 0.2*process + 0.1*format - 0.1*extra steps;
# rubric: well_formed, one_step_per_column, carries_chain, arithmetic, answer_follows, outcome (of 6)
CASES = [
    (GOOD, 1, 1, 1, 1, 1, 1, 1.3, 6 / 6),
    ("8+6+0=14 7+5+1=13 4+3+1=8 >835", 0, 1, 1, 1, 1, 0, 0.3, 4 / 6),      # right steps, answer miscopied
    ("8+6+0=14 >834", 1, 1, 1, 1 / 3, 0, 0, 1 + 0.2 / 3 + 0.1, 4 / 6),     # skipped two columns, answer right
    ("8+6+0=14 7+5+1=13 4+3+1=8 0+0+0=0 >834", 1, 1, 1, 3 / 4, 0, 0, 1 + 0.15 + 0.1 - 0.1, 4 / 6),  # padded
    ("1+1+0=2 2+2+0=4 >834", 1, 1, 1, 0, 0, 0, 1.1, 4 / 6),                # true sums of the wrong digits
    ("8+6+0=13 7+5+1=13 4+3+1=8 >834", 1, 1, 2 / 3, 2 / 3, 0, 0, 1 + 0.4 / 3 + 0.1, 4 / 6),  # a slip in step 1
    ("8+6+0=14 7+5+0=12 4+3+1=8 >824", 0, 1, 1, 2 / 3, 0, 0, 0.4 / 3 + 0.1, 4 / 6),  # a dropped carry
    ("8+6+0=14 7+5+1=13 4+3+1=8", 0, 0, 1, 1, 1, 0, 0.2, 3 / 6),          # truncated before the answer
    ("834", 0, 0, 0, 0, 0, 0, 0.0, 0 / 6),                                 # the short-answer task's format
    ("٨+٦+0=14 >834", 1, 0, 0, 0, 0, 0, 1.0, 1 / 6),                       # Arabic-Indic digits do not parse
]


@pytest.mark.parametrize("case", CASES, ids=[c[0][:24] for c in CASES])
def test_each_verifier_by_hand(case):
    text, *want = case
    got = [T.outcome_reward([text], **COLS), T.format_reward([text], **COLS), T.arithmetic_reward([text], **COLS),
           T.process_reward([text], **COLS), T.process_strict_reward([text], **COLS), T.trace_reward([text], **COLS),
           T.shaped_reward()([text], **COLS), T.rubric_reward([text], **COLS)]
    assert [g[0] for g in got] == pytest.approx([float(w) for w in want])


# outcome + 0.1 per step written (any digits, right or not), worked by hand from CASES' texts
LENGTH_BIASED = [1.3, 0.3, 1.1, 1.4, 1.2, 1.3, 0.3, 0.3, 0.0, 1.0]


def test_length_biased_reward_by_hand():
    fn = T.length_biased_reward(0.1)
    assert fn([c[0] for c in CASES], answer=["834"] * len(CASES), a=[478] * len(CASES), b=[356] * len(CASES)) \
        == pytest.approx(LENGTH_BIASED)
    assert T.length_biased_reward(0.5)([GOOD], **COLS) == pytest.approx([2.5])
    for bad in (0, -0.1, float("nan"), float("inf"), "0.1", True, None):
        with pytest.raises(ValueError, match="per_step"):
            T.length_biased_reward(bad)


def test_last_digits_reward_by_hand():
    fn = T.last_digits_reward(2)
    texts = ["8+6+0=14 7+5+1=13 4+3+1=8 >834", ">1234", ">843", ">34", "8+6+0=14 >934", "no answer", ">5"]
    assert fn(texts, answer=["834"] * 6 + ["105"]) == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]  # 5 = 105 mod 100
    assert T.outcome_reward(texts[:2], answer="834") == [1.0, 0.0], "the exact check pays only the right answer"
    assert fn([">834", ">34"], a=478, b=356) == [1.0, 1.0], "without an answer column: the operands' sum"
    assert T.last_digits_reward(1)([">4", ">24", ">835"], answer=834.0) == [1.0, 1.0, 0.0]
    assert T.last_digits_reward(3)([">1834", ">34"], answer="834") == [1.0, 0.0]
    assert fn.__name__ == "last_digits_reward(n=2)" and fn.n == 2
    for bad in (0, 19, 2.0, "2", True, None):
        with pytest.raises(ValueError, match="n="):
            T.last_digits_reward(bad)
    with pytest.raises(ValueError, match="answer"):
        fn([">834"])


def test_never_raises_and_one_score_each():
    junk = [None, b"8+6+0=14 >14", 834, 8.5, "1" * 10 ** 6, " ".join(["1+1+0=2"] * 10_000) + " >2",
            "", [{"role": "assistant", "content": GOOD}], {"x": 1}, "\x00>834"]
    fns = [T.outcome_reward, T.format_reward, T.arithmetic_reward, T.process_reward, T.process_strict_reward,
           T.trace_reward, T.shaped_reward(), T.rubric_reward, T.length_biased_reward(), T.valid_steps_reward,
           T.last_digits_reward(2)]
    for fn in fns:
        got = fn(junk, answer="834", a=478, b=356)  # shared column values are allowed too
        assert len(got) == len(junk) and all(isinstance(g, float) for g in got)
        assert got[:3] == [0.0, 0.0, 0.0] and got[4:7] == [0.0, 0.0, 0.0] and got[8] == 0.0, fn.__name__
        assert len(fn([GOOD], answer=[None], a=["x"], b=[None])) == 1, "bad columns score, never raise"
    for fn in (T.outcome_reward, T.process_reward, T.trace_reward):  # no problem to judge against: 0.0
        assert fn([GOOD], answer=[None], a=["x"], b=[None]) == [0.0]
    assert T.trace_reward(junk, answer="834", a=478, b=356)[7] == 1.0, "TRL's chat format is read"


def test_fast_on_ordinary_traces():
    fn, texts = T.rubric_reward, [GOOD] * 200
    t = time.thread_time()   # this thread's CPU time: a busy machine delays the call, it adds no work
    fn(texts, answer="834", a=478, b=356)
    assert (time.thread_time() - t) / len(texts) < 1e-3, "each verifier must judge an ordinary trace in < 1 ms"


def test_bad_weights_and_criteria_are_named():
    for bad, field in ((dict(outcome=-1.0), "outcome"), (dict(process=float("nan")), "process"),
                       (dict(format="0.1"), "format"), (dict(outcome=True), "outcome")):
        with pytest.raises(ValueError, match=field):
            T.shaped_reward(**bad)
    with pytest.raises(ValueError, match="all reward weights are zero"):
        T.shaped_reward(outcome=0, process=0, format=0, extra_step_penalty=0)
    with pytest.raises(ValueError, match="unknown reward weight"):
        T.shaped_reward(length=0.1)
    with pytest.raises(ValueError, match="unknown"):
        T.rubric(["outcome", "looks_nice"])
    with pytest.raises(ValueError, match="non-empty"):
        T.rubric([])
    assert T.rubric(["outcome", "well_formed"])([">834"], **COLS) == [0.5]


def test_judge_per_step():
    j = T.judge("8+6+0=13 7+5+1=13 x >834", 478, 356)
    assert [(p["parses"], p["arithmetic"], p["right"]) for p in j["per_step"]] == \
        [(True, False, False), (True, True, True), (False, False, False)]
    assert j["expected"] == sp.steps_for(478, 356) and j["outcome"] and not j["well_formed"]


def test_noisy_traces_are_what_their_kind_says():
    rng, seen = random.Random(0), set()
    for _ in range(600):
        a, b = rng.randint(10, 9999), rng.randint(10, 9999)
        kind, text = sp.noisy_trace(rng, a, b)
        seen.add(kind)
        j = T.judge(text, a, b)
        want = {"right": (True, True, True), "slip": (False, False, True), "skip": (True, False, True),
                "pad": (True, False, True), "miscopy": (False, True, True), "bare": (True, False, False)}[kind]
        assert (j["outcome"], j["steps_exact"], j["well_formed"]) == want, (kind, text)
        assert set(text) <= set(sp.ALPHABET)
    assert seen == set(sp.NOISE)
    assert sp.noisy_trace(random.Random(3), 478, 356, noise={"right": 1.0}) == ("right", GOOD)


@pytest.mark.parametrize("text, want", [
    (GOOD, [(8, True), (17, True), (25, True), (30, True)]),
    ("6+8+0=14 5+7+1=13 3+4+1=8 >834", [(8, True), (17, True), (25, True), (30, True)]),  # operands swapped
    # a slip in column 2 (no carry): only that step is wrong; the next step's carry follows the written 12, and
    # the answer 824 is what the steps spell, so the answer's verdict holds although the answer is wrong
    ("8+6+0=14 7+5+0=12 4+3+1=8 >824", [(8, True), (17, False), (25, True), (30, True)]),
    ("8+6+0=14 7+5+1=13 4+3+0=7 >734", [(8, True), (17, True), (25, False), (30, True)]),  # carry 1 dropped
    ("8+6+0=14 7+5+1=13 >34", [(8, True), (17, True), (21, False)]),       # a column missing: the answer fails
    ("8+6+0=14 7+5+1=13 4+3+1=8 0+0+0=0 >834",                              # a step past the last column
     [(8, True), (17, True), (25, True), (33, False), (38, False)]),
    ("8+6+0=14 7+5+1=13 4+3+1=8 >835", [(8, True), (17, True), (25, True), (30, False)]),  # answer not spelt
    ("8+6+0=14 7+5+1=13 4+3+1=8 >834 x", [(8, True), (17, True), (25, True), (30, False)]),  # text after it
    ("8+6+0=14 7+5+1=13 4+3+1=8", [(8, True), (17, True), (25, True), (25, False)]),  # no answer: judged at the end
    ("8+6+0=14 7+5+1=13 4+3+1=9 >934", [(8, True), (17, True), (25, False), (30, True)]),  # a false sum
    ("8+6+0=14 hm 4+3+1=8 >834", [(8, True), (11, False), (19, True), (24, False)]),  # unreadable: true carry next
    ("", []), (None, []), ("1" * (T.MAX_CHARS + 1), []),
])
def test_step_verdicts_by_hand(text, want):
    assert T.step_verdicts(text, 478, 356) == want
    v = T.valid_steps_reward([text], answer=["834"], a=[478], b=[356])
    assert v == [sum(ok for _, ok in want) / len(want) if want else 0.0]


def test_step_verdicts_bad_operands_and_short_numbers():
    assert T.step_verdicts(GOOD, "x", 356) == [] and T.step_verdicts(GOOD, -1, 356) == []
    # 5 + 37: one column has one digit only (0 stands for the missing one, either side)
    assert T.step_verdicts("5+7+0=12 0+3+1=4 >42", 5, 37) == [(8, True), (16, True), (20, True)]
    assert T.step_verdicts("5+7+0=12 3+0+1=4 >42", 5, 37) == [(8, True), (16, True), (20, True)]
    assert T.step_verdicts("5+7+0=12 3+1+0=4 >42", 5, 37) == [(8, True), (16, False), (20, True)]


def test_fresh_problems_are_new_distinct_and_seeded():
    split = {p["prompt"] for p in sp.fresh_problems(50, 3, seed=1)}
    rows = sp.fresh_problems(100, 3, seed=2, exclude=split)
    assert len({r["prompt"] for r in rows}) == 100 and not split & {r["prompt"] for r in rows}
    assert all(r["digits"] == 3 and max(len(str(r["a"])), len(str(r["b"]))) == 3 for r in rows)
    assert rows == sp.fresh_problems(100, 3, seed=2, exclude=split)
    with pytest.raises(ValueError, match="n must be"):
        sp.fresh_problems(0, 3, seed=1)
