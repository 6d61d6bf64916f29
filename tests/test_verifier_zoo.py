"""The Lab 02 verifier zoo: each verifier's rule on hand-worked cases, the adversarial suite and
its report, robustness (fuzz: never raises, always 0.0 or 1.0) and speed."""
import statistics
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils.verifiers.arithmetic import (
    ZOO,
    any_number_match,
    careful_match,
    contains_match,
    digit_count_match,
    last_digit_match,
    last_number_match,
    load_arithmetic_suite,
    strict_reward,
)
from utils.verifiers.signature import reward_from_match, verifier_report

MATCHES = [careful_match, last_number_match, contains_match, last_digit_match, digit_count_match,
           any_number_match]

# (text, answer, careful, last_number, contains, last_digit, digit_count, any_number), worked by hand
TABLE = [
    ("66", 66,            1, 1, 1, 1, 1, 1),
    (" 66\n", 66,         1, 1, 1, 1, 1, 1),
    ("1,073", 1073,       1, 1, 0, 1, 1, 0),   # careful and last_number read the separator
    ("66.", 66,           1, 1, 1, 1, 1, 0),
    ("67", 66,            0, 0, 0, 0, 1, 1),   # wrong: only the format-level verifiers pass it
    ("56", 66,            0, 0, 0, 1, 1, 1),   # right last digit, wrong tens
    ("1662", 66,          0, 0, 1, 0, 0, 1),   # the answer buried in a longer number
    ("67 66", 66,         0, 1, 1, 1, 0, 0),   # several numbers, the right one last
    ("66 67", 66,         0, 0, 1, 0, 0, 0),
    ("-33", -33,          1, 1, 1, 1, 1, 1),
    ("33", -33,           0, 0, 0, 1, 1, 1),   # sign dropped: "-33" is not in "33"; digits and last digit fit
    ("", 66,              0, 0, 0, 0, 0, 0),
    ("\uff16\uff16", 66,  0, 0, 0, 0, 0, 0),   # fullwidth digits are not ASCII digits
    ("xx66yy", 66,        0, 1, 1, 1, 1, 0),
    ("6*6=36 66", 66,     0, 1, 1, 1, 0, 0),
]


@pytest.mark.parametrize("row", TABLE, ids=[repr(r[0]) for r in TABLE])
def test_zoo_rules(row):
    text, answer, *want = row
    got = [m(text, answer) for m in MATCHES]
    assert got == [float(w) for w in want]


def test_thousands_separator_only_in_standard_places():
    assert careful_match("1,073", 1073) == 1.0
    assert careful_match("-12,345", -12345) == 1.0
    assert careful_match("10,73", 1073) == 0.0
    assert careful_match("1,0730", 10730) == 0.0
    assert careful_match("01,073", 1073) == 0.0
    assert careful_match("66..", 66) == 0.0      # one full stop only


def test_last_number_takes_the_last():
    assert last_number_match("37+29=66", 66) == 1.0
    assert last_number_match("the answer is 1,073.", 1073) == 1.0
    assert last_number_match("66 or 67", 66) == 0.0


def test_any_number_ignores_the_answer():
    assert any_number_match("12345", 66) == 1.0
    assert any_number_match("12345", None) == 1.0


def test_reward_wrapper_signature_and_name():
    r = reward_from_match(last_digit_match)
    assert r.__name__ == "last_digit_reward"
    assert r(["56", "67", [{"role": "assistant", "content": "66"}]], [66, 66, 66], prompts=["x"] * 3) == [1.0, 0.0, 1.0]
    assert r("56", 66) == [1.0]
    assert r(["56", "66"], [66]) == [1.0, 0.0]  # missing answers score 0
    assert r(None, None) == []


def test_zoo_order_and_strengths():
    assert list(ZOO)[:2] == ["strict", "careful"]
    assert {v[1] for v in ZOO.values()} == {"strong", "medium", "weak"}
    assert sum(v[1] == "weak" for v in ZOO.values()) >= 2


def test_suite_loads_and_expands_huge_cases():
    cases = load_arithmetic_suite()
    kinds = {c["kind"] for c in cases}
    assert {"correct", "format", "wrong", "no_answer", "several", "buried", "huge", "non_ascii"} <= kinds
    assert len({c["id"] for c in cases}) == len(cases)
    assert max(len(c["output"] or "") for c in cases) >= 1_000_000
    assert all(c["label"] in (0.0, 1.0) for c in cases)


def test_report_by_hand():
    cases = [{"id": "a", "kind": "k", "output": "66", "answer": 66, "label": 1.0},
             {"id": "b", "kind": "k", "output": "56", "answer": 66, "label": 0.0},
             {"id": "c", "kind": "j", "output": "67", "answer": 66, "label": 0.0},
             {"id": "d", "kind": "j", "output": "1,066", "answer": 1066, "label": 1.0}]
    r = verifier_report(ZOO["last_digit"][0], cases)  # passes a, b, d; fails c
    assert r["coverage"] == 0.75 and r["fpr"] == 0.5 and r["fnr"] == 0.0 and r["misses"] == ["b"]
    assert r["by_kind"] == {"k": 0.5, "j": 1.0}
    r = verifier_report(strict_reward, cases)  # passes a only
    assert r["coverage"] == 0.75 and r["fpr"] == 0.0 and r["fnr"] == 0.5 and r["misses"] == ["d"]
    with pytest.raises(ValueError, match="at least one case"):
        verifier_report(strict_reward, [])


def test_suite_coverage_claims():
    """The numbers Lab 02 prints: strong verifiers >= 95%, at least two weak ones under 70%."""
    cases = load_arithmetic_suite()
    rep = {name: verifier_report(fn, cases) for name, (fn, _) in ZOO.items()}
    assert rep["strict"]["coverage"] >= 0.95 and rep["strict"]["fpr"] == 0.0
    assert rep["careful"]["coverage"] >= 0.95 and rep["careful"]["fpr"] == 0.0
    assert sum(rep[n]["coverage"] < 0.70 for n, (_, s) in ZOO.items() if s == "weak") >= 2


@pytest.mark.parametrize("match", MATCHES, ids=lambda m: m.__name__)
def test_fast_on_huge_and_ordinary(match):
    huge = "6" * 1_000_000
    for text in (huge, "66"):
        times = []
        for _ in range(5):
            t = time.thread_time()   # this thread's CPU time: a busy machine delays a call, it adds no work
            match(text, 66)
            times.append(time.thread_time() - t)
        assert statistics.median(times) < 0.01  # 10 ms; ordinary outputs take microseconds


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=80), st.text(alphabet="0123456789-,. \n", max_size=20), st.none(),
                      st.integers(), st.binary(max_size=10)),
       answer=st.one_of(st.integers(-10**6, 10**6), st.text(max_size=8), st.none(), st.floats()))
def test_fuzz_never_raises(text, answer):
    for match in MATCHES:
        assert match(text, answer) in (0.0, 1.0)
    for fn, _ in ZOO.values():
        assert fn([text], [answer]) in ([0.0], [1.0])
