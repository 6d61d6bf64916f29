"""utils.verifiers.arithmetic and .signature: the strict verifier's rules, TRL's reward signature, robustness, speed."""
import statistics
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils.verifiers.arithmetic import MAX_CHARS, strict_match, strict_reward
from utils.verifiers.signature import completion_text

# (text, answer, expected): the rules table from strict_match's docstring
RULES = [
    ("66", "66", 1.0),
    (" 66", "66", 1.0),          # leading/trailing whitespace is stripped...
    ("66\n", "66", 1.0),
    ("\t66 \r\n", "66", 1.0),
    ("66", 66, 1.0),             # answer may be an int
    ("-12", "-12", 1.0),         # negative answers
    ("-12", -12, 1.0),
    ("0", "0", 1.0),
    ("0", 0, 1.0),
    ("1073", "1073", 1.0),
    ("066", "66", 0.0),          # leading zero
    ("00", "0", 0.0),
    ("66.", "66", 0.0),          # trailing dot
    ("66.0", "66", 0.0),
    ("6 6", "66", 0.0),          # space inside
    ("+66", "66", 0.0),          # explicit plus
    ("-0", "0", 0.0),            # not how 0 is written
    ("-0", 0, 0.0),
    ("1,073", "1073", 0.0),      # thousands separator
    ("12", "-12", 0.0),          # wrong sign
    ("-12", "12", 0.0),
    ("67", "66", 0.0),           # wrong value
    ("", "66", 0.0),
    ("   ", "66", 0.0),
    ("66 66", "66", 0.0),
    ("the answer is 66", "66", 0.0),
    ("66<eos>", "66", 0.0),
    ("--12", "-12", 0.0),
    ("0x42", "66", 0.0),
    ("6e1", "60", 0.0),
    ("66", "not a number", 0.0),  # unjudgeable answer column
    ("66", None, 0.0),
]


@pytest.mark.parametrize("text, answer, want", RULES)
def test_strict_match_rules(text, answer, want):
    assert strict_match(text, answer) == want


def test_strict_reward_plain_strings():
    # hand: "66" right, "65" wrong, " -12\n" right after stripping, "066" leading zero
    assert strict_reward(["66", "65", " -12\n", "066"], ["66", "66", "-12", "66"]) == [1.0, 0.0, 1.0, 0.0]


def test_strict_reward_trl_conversational_format():
    comps = [
        [{"role": "assistant", "content": "66"}],
        [{"role": "user", "content": "37+29="}, {"role": "assistant", "content": "66"}],
        [{"role": "assistant", "content": "67"}],
        [{"role": "assistant", "content": None}],
        [{"role": "assistant"}],
        [],
    ]
    # last message's content is judged: right, right, wrong, then three unjudgeable -> 0
    assert strict_reward(comps, ["66"] * 6) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_strict_reward_ignores_extra_columns():
    assert strict_reward(["5"], ["5"], prompt=["2+3="], a=[2], op=["+"], b=[3]) == [1.0]


def test_strict_reward_length_mismatch_scores_missing_as_zero():
    assert strict_reward(["1", "2"], ["1"]) == [1.0, 0.0]


def test_completion_text():
    assert completion_text("x") == "x"
    assert completion_text([{"role": "assistant", "content": "7"}]) == "7"
    assert completion_text(7) is None
    assert completion_text([]) is None


BAD = [None, 66, 66.0, b"66", "6" * 1_000_000, "1" * (MAX_CHARS + 1), "٦٦", "６６", "66\x00",
       ["66"], {"content": "66"}, [{"content": 66}], float("nan")]


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__ + str(len(b) if hasattr(b, "__len__") else ""))
def test_never_raises_and_scores_zero(bad):
    # answers chosen so a lenient parser would say "right": "66", and 666...6 for the long one
    assert strict_match(bad, "66") == 0.0
    assert strict_reward([bad], ["66"]) == [0.0]


def test_per_completion_spreads_columns_over_completions():
    """The one adapter every verifier goes through (arithmetic, SQL, code)."""
    from utils.verifiers.signature import Shared, per_completion
    chat = [{"role": "assistant", "content": "7"}]
    assert per_completion(["a", "b"], [1, 2]) == [("a", 1), ("b", 2)]            # a column: one value each
    assert per_completion(["a", "b"], 5) == [("a", 5), ("b", 5)]                   # one value: shared
    assert per_completion(["a", "b"], "x", [1]) == [("a", "x", 1), ("b", "x", None)]  # short column padded
    assert per_completion(["a"], [1, 2, 3]) == [("a", 1)]                           # long column cut
    assert per_completion(["a", "b"], Shared([1, 2])) == [("a", [1, 2]), ("b", [1, 2])]  # a list meant for all
    assert per_completion("a", [1]) == [("a", 1)]                                   # one bare text
    assert per_completion(chat, 3) == [("7", 3)]                                    # one bare chat completion
    assert per_completion([chat, chat]) == [("7",), ("7",)]                         # TRL's conversational batch
    assert per_completion([{"content": "7"}, 7]) == [(None,), (None,)]              # not completions: no text
    assert per_completion(None, [1]) == [] and per_completion(7) == []              # not a list: no rows
    import datasets
    import numpy as np
    ds = datasets.Dataset.from_dict({"answer": ["1", "2"]})
    # a dataset's column is a column, not one shared value (datasets 4 and later hand out a Column, not a list)
    assert per_completion(["a", "b"], ds["answer"]) == [("a", "1"), ("b", "2")]
    assert per_completion(["a", "b"], np.array([3, 4])) == [("a", 3), ("b", 4)]
    assert strict_reward(["1", "2"], ds["answer"]) == [1.0, 1.0]


def test_non_ascii_digits_rejected_even_if_int_accepts_them():
    # int() accepts Arabic-Indic and fullwidth digits; the verifier must not
    assert int("٦٦") == 66 and int("６６") == 66
    assert strict_match("٦٦", 66) == 0.0
    assert strict_match("６６", "66") == 0.0


def test_unusual_arguments_do_not_raise():
    assert strict_reward(None, None) == []
    assert strict_reward(["66"], None) == [0.0]          # one score per completion, even without an answer
    assert strict_reward([], []) == []


def test_fast():
    # a verifier is called on every completion of every step: an ordinary call is microseconds
    for _ in range(100):
        strict_match(" -123\n", "-123")
    # CPU time of this thread, not wall time: a busy machine (CI runs other checks beside the suite) delays a call
    # without making it more work
    times = []
    for _ in range(2000):
        t = time.thread_time()
        strict_match(" -123\n", "-123")
        times.append(time.thread_time() - t)
    assert statistics.median(times) < 0.5e-3
    t = time.thread_time()
    strict_match("7" * 1_000_000, "7")  # long inputs are rejected unread
    assert time.thread_time() - t < 0.05


anything = st.one_of(st.text(max_size=80), st.integers(), st.none(), st.binary(max_size=16),
                     st.floats(allow_nan=True), st.lists(st.text(max_size=5), max_size=3))


@settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(st.text(max_size=80), st.from_regex(r"\s*-?[0-9]{1,5}\s*", fullmatch=True)),
       answer=anything)
def test_fuzz_strict_match(text, answer):
    assert strict_match(text, answer) in (0.0, 1.0)
    assert strict_reward([text, [{"role": "assistant", "content": text}]], [answer, answer]) in (
        [0.0, 0.0], [1.0, 1.0])


@settings(max_examples=500, deadline=None, database=None)
@given(n=st.integers(-10**6, 10**6), m=st.integers(-10**6, 10**6),
       pad_l=st.sampled_from(["", " ", "\n", "\t "]), pad_r=st.sampled_from(["", " ", "\n", "\r\n"]))
def test_fuzz_integers_round_trip(n, m, pad_l, pad_r):
    # str(n) is the canonical spelling: it always matches n, and never matches any other m
    assert strict_match(pad_l + str(n) + pad_r, n) == 1.0
    assert strict_match(str(n), str(n)) == 1.0
    assert strict_match(str(n), m) == (1.0 if n == m else 0.0)
