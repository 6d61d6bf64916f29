"""utils.verifiers.api: the judge behind an API's rules (cache, timeout, fallback, circuit breaker, stats), each
against counts worked out by hand."""
import math
import time

import pytest

from utils.verifiers.api import JudgeClient, flaky
from utils.verifiers.arithmetic import strict_reward


class Counting:
    """A judge that pays 1.0 when the completion's digits sum to an even number, and records each call."""

    def __init__(self):
        self.calls = []

    def __call__(self, problems, completions):
        self.calls.append(list(zip(problems, completions)))
        return [float(sum(map(int, c)) % 2 == 0) for c in completions]


def test_identical_requests_are_scored_once():
    judge = Counting()
    client = JudgeClient(judge)
    assert client(["12", "13", "12"], problem=["1+2=", "1+2=", "1+2="]) == [0.0, 1.0, 0.0]   # 1+2 odd, 1+3 even
    assert judge.calls == [[("1+2=", "12"), ("1+2=", "13")]]                                 # "12" asked once
    assert client(["12", "12"], problem=["1+2=", "5+7="]) == [0.0, 0.0]   # a new problem is a new request
    assert judge.calls[1] == [("5+7=", "12")]
    s = client.stats()
    assert (s["requests"], s["cache_hits"], s["judge_calls"], s["judged"], s["failures"]) == (5, 2, 2, 3, 0)
    uncached = JudgeClient(Counting(), cache=False)
    uncached(["12", "12"], problem="1+2=")
    assert uncached.stats()["judged"] == 2 and uncached.stats()["cache_hits"] == 0   # every request is sent
    uncached(["12"], problem="1+2=")
    assert uncached.stats()["judge_calls"] == 2


def test_a_failed_call_falls_back_to_the_rule_or_the_default():
    def broken(problems, completions):
        raise ConnectionError("no route to the judge")
    with_rule = JudgeClient(broken, fallback=strict_reward)
    assert with_rule(["66", "65"], problem=["37+29=", "37+29="], answer=["66", "66"]) == [1.0, 0.0]
    alone = JudgeClient(broken, default=0.5)
    assert alone(["66", "65"], problem="37+29=") == [0.5, 0.5]
    s = alone.stats()
    assert (s["failures"], s["fallback_scores"], s["judged"]) == (1, 2, 0)
    assert JudgeClient(broken).cache == {}, "a failure is never cached"


@pytest.mark.parametrize("bad", [lambda p, c: [1.0], lambda p, c: [math.nan, math.inf], lambda p, c: None,
                                 lambda p, c: ["yes", "no"]], ids=["short", "no finite score", "none", "text"])
def test_a_bad_answer_from_the_judge_is_a_failure(bad):
    client = JudgeClient(bad, default=0.25)
    assert client(["1", "2"], problem="0+1=") == [0.25, 0.25]
    assert client.stats()["failures"] == 1


def test_a_score_the_judge_cannot_give_falls_back_alone():
    """A NaN for one request (the judge could not judge that one) sends that request alone to the fallback: its
    neighbours keep the judge's scores, only the judged ones are cached, and the call is not a failure (issue 60)."""
    def nan_for_x(problems, completions):   # Counting's rule, and NaN for a completion it cannot read
        return [math.nan if c == "x" else float(sum(map(int, c)) % 2 == 0) for c in completions]
    client = JudgeClient(nan_for_x, fallback=strict_reward, max_failures=1, cooldown=5)
    assert client(["12", "x", "13"], problem="1+2=", answer=["12", "x", "3"]) == [0.0, 0.0, 1.0]
    assert client(["12", "3"], problem="1+2=", answer="3") == [0.0, 0.0]   # "3": the judge's 0.0, not the rule's 1.0
    s = client.stats()
    assert (s["failures"], s["judged"], s["fallback_scores"], s["cache_hits"]) == (0, 3, 1, 1)
    assert not client.circuit_open and set(client.cache) == {("1+2=", "12"), ("1+2=", "13"), ("1+2=", "3")}


def test_a_call_without_the_problem_column_is_named():
    """No `problem` column at all: every completion would get the default, silently (issue 60); a ValueError
    naming the column instead. A problem that is not text, in a column that is there, still scores the default."""
    client = JudgeClient(Counting(), default=-1.0)
    with pytest.raises(ValueError, match="no `problem` column"):
        client(["2"])
    assert client(["2", "2"], problem=[None, "0+2="]) == [-1.0, 1.0]


def test_hybrid_reads_numpy_and_integer_flags_and_names_a_missing_column():
    """The column that sends a row to the rule: True, numpy's True and 1 all do (issue 60: `is True` sent numpy's
    bools to the judge); False, 0, None and "yes" go to the judge; no such column at all is a ValueError."""
    import numpy as np

    from utils.verifiers.api import hybrid_reward
    rule = lambda completions, answer=None, **kw: [1.0] * len(completions)  # noqa: E731
    judge = lambda completions, answer=None, **kw: [0.5] * len(completions)  # noqa: E731
    h = hybrid_reward(rule, judge)
    flags = [True, np.True_, np.int64(1), 1, False, np.False_, 0, None, "yes"]
    assert h(["a"] * 9, answer=["1"] * 9, checkable=flags) == [1.0] * 4 + [0.5] * 5
    assert h(["a", "b"], answer=["1", "2"], checkable=np.array([True, False])) == [1.0, 0.5]
    with pytest.raises(ValueError, match="no `checkable` column"):
        h(["a", "b"], answer=["1", "2"], checkble=[True, True])
    with pytest.raises(ValueError, match="no `answer` column"):   # the rule's rows would all score 0
        h(["a", "b"], checkable=[True, False])


def test_a_slow_call_times_out():
    client = JudgeClient(lambda p, c: time.sleep(0.5) or [1.0] * len(c), fallback=strict_reward, timeout_s=0.05)
    t = time.perf_counter()
    assert client(["3"], problem="1+2=", answer="3") == [1.0]          # the rule's score, not the judge's
    assert time.perf_counter() - t < 0.4, "the client must not wait for the judge past its timeout"
    assert client.stats()["timeouts"] == 1 and client.stats()["failures"] == 1


def test_the_circuit_opens_after_failures_in_a_row_and_closes_after_cooldown():
    state = {"fail": True, "n": 0}

    def judge(problems, completions):
        state["n"] += 1
        if state["fail"]:
            raise RuntimeError("down")
        return [1.0] * len(completions)
    client = JudgeClient(judge, default=0.0, max_failures=2, cooldown=3, cache=False)
    for _ in range(2):
        assert client(["1"], problem="0+1=") == [0.0]
    assert state["n"] == 2 and client.circuit_open
    state["fail"] = False                                     # the judge is back, but the circuit is open
    for _ in range(3):
        assert client(["1"], problem="0+1=") == [0.0]
    assert state["n"] == 2, "an open circuit does not call the judge"
    assert not client.circuit_open
    assert client(["1"], problem="0+1=") == [1.0] and state["n"] == 3      # tried again, and it answered
    s = client.stats()
    assert (s["judge_calls"], s["failures"], s["circuit_open_calls"], s["fallback_scores"]) == (3, 2, 3, 5)


def test_one_success_resets_the_count_of_failures():
    seq = iter([RuntimeError, None, RuntimeError, None])

    def judge(problems, completions):
        e = next(seq)
        if e:
            raise e("down")
        return [1.0]
    client = JudgeClient(judge, max_failures=2, cooldown=5, cache=False)
    assert [client(["1"], problem="0+1=")[0] for _ in range(4)] == [0.0, 1.0, 0.0, 1.0]
    assert not client.circuit_open and client.stats()["circuit_open_calls"] == 0


def test_what_is_not_text_is_never_sent():
    judge = Counting()
    client = JudgeClient(judge, default=-1.0)
    assert client([None, "2", 3], problem=["0+2=", "0+2=", "0+2="]) == [-1.0, 1.0, -1.0]
    assert judge.calls == [[("0+2=", "2")]]
    assert client(["2"], problem=[None]) == [-1.0] and len(judge.calls) == 1   # no problem: nothing to judge
    assert client([[{"role": "assistant", "content": "4"}]], problem="2+2=") == [1.0]   # TRL's chat format


def test_flaky_is_seeded_and_at_its_rates():
    def pattern(seed):
        f = flaky(lambda p, c: [1.0] * len(c), p_fail=0.3, seed=seed)
        out = []
        for _ in range(200):
            try:
                f(["x"], ["y"])
                out.append(1)
            except RuntimeError:
                out.append(0)
        return out
    a = pattern(0)
    assert a == pattern(0) and a != pattern(1)
    assert 0.2 < 1 - sum(a) / len(a) < 0.4
    slow = flaky(lambda p, c: [1.0], p_slow=1.0, slow_s=0.05)
    t = time.perf_counter()
    assert slow(["x"], ["y"]) == [1.0] and time.perf_counter() - t >= 0.05


@pytest.mark.parametrize("kw, match", [
    (dict(score_fn=None), "score_fn"), (dict(fallback="rule"), "fallback"), (dict(timeout_s=0), "timeout_s"),
    (dict(max_failures=0), "max_failures"), (dict(cooldown=-1), "cooldown"), (dict(cache="yes"), "cache"),
    (dict(default=math.inf), "default"), (dict(name=""), "name")])
def test_bad_settings_are_refused_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        JudgeClient(**{"score_fn": Counting(), **kw})


def test_hybrid_asks_each_verifier_only_about_its_own_rows():
    """The rule scores the rows it applies to (the column True), the judge the rest; the judge is never asked
    about a rule's row; in the order of the completions."""
    from utils.verifiers.api import hybrid_reward

    judge = Counting()
    client = JudgeClient(judge)
    hybrid = hybrid_reward(strict_reward, client)
    got = hybrid(["3", "4", "12", "12"], ["3"] * 4, problem=["1+2="] * 4, checkable=[True, True, False, None])
    assert got == [1.0, 0.0, 0.0, 0.0]                # rule: right, wrong; judge: 1+2 odd (twice, asked once)
    assert judge.calls == [[("1+2=", "12")]]
    assert hybrid(["13"], ["3"], problem=["1+2="], checkable=[False]) == [1.0]   # the judge pays a wrong answer
    assert hybrid(["3", "13"], ["3", "3"], problem="1+2=", checkable=[True, True]) == [1.0, 0.0]
    assert len(judge.calls) == 2                       # the rule's rows never reached it
    with pytest.raises(ValueError, match="column"):
        hybrid_reward(strict_reward, client, column="not a column")
