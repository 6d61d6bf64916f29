"""A verifier you call rather than run (Lab 11): a learned judge, an LLM behind an API. It is slow, it costs, and
it fails, so it goes behind the rules practitioners use for API verifiers (SOURCE_NOTES: cache, time out, fall
back, watch the cost):

- identical requests are scored once (a cache keyed by the request's text: the problem and the completion);
- a call that raises, returns the wrong number of scores or no finite score at all, or takes longer than timeout_s
  is a failure: its requests get the fallback's score (the rule verifier, say) or the stated default;
- a request the judge answers with a score that is not a finite number (NaN: it could not judge that one) gets
  the fallback's score, alone: its neighbours keep theirs, and the call is not a failure;
- after max_failures failed calls in a row the circuit opens: the next `cooldown` calls go straight to the
  fallback without waiting on the judge, then one call tries the judge again;
- stats() counts requests, cache hits, judge calls, failures, fallback scores and the seconds spent waiting.

JudgeClient has the shared reward signature (utils.verifiers.signature), so our loop and TRL's GRPOTrainer both
take it as a reward function. The scorer it wraps, score_fn(problems, completions) -> list of floats, sees one
batch of the requests not yet cached. A timed-out call is abandoned, not killed: a Python thread cannot be
stopped from outside, so a scorer that never returns keeps its thread (a real client sets its HTTP timeout
too). flaky() wraps a scorer so that it fails and stalls at chosen rates, seeded, to show all this working.
"""
import math
import random
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from utils import checks
from utils.verifiers.signature import column as needs_column
from utils.verifiers.signature import per_completion, truth

STAT_KEYS = ("requests", "cache_hits", "judge_calls", "judged", "failures", "timeouts", "fallback_scores",
             "circuit_open_calls", "seconds")


class JudgeClient:
    """A reward function around score_fn(problems, completions) -> [score per pair], an expensive and fallible
    scorer. The problem each completion answers arrives as the column `problem` (a list aligned with
    completions, or one value for all), as TRL passes a dataset column. fallback: a reward function with the
    shared signature, called with the same arguments for the requests the judge did not score (None: `default`
    for each). timeout_s: the most one judge call may take; max_failures, cooldown: the circuit breaker's
    thresholds (see the module docstring). cache=False sends every request, repeats included (to measure what
    the cache saves). Never raises on what it is asked to score: a completion or a problem that is not text scores
    `default` unasked. Called without the `problem` column at all, it raises a ValueError naming it: every
    completion would otherwise get the default."""

    def __init__(self, score_fn, fallback=None, default=0.0, timeout_s=5.0, max_failures=3, cooldown=10,
                 cache=True, name="judge"):
        where = "JudgeClient"
        self.score_fn = checks.function(where, "score_fn", score_fn)
        self.fallback = checks.function(where, "fallback", fallback, none=True)
        self.default = checks.number(where, "default", default)
        self.timeout_s = checks.number(where, "timeout_s", timeout_s, lo=0, hi=3600, lo_open=True)
        self.max_failures = checks.number(where, "max_failures", max_failures, lo=1, hi=10_000, integer=True)
        self.cooldown = checks.number(where, "cooldown", cooldown, lo=0, hi=1_000_000, integer=True)
        self.use_cache = checks.flag(where, "cache", cache)
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: name must be a non-empty str (the reward's name in logs), got "
                             f"{checks._short(name)}")
        self.__name__ = name
        self.cache, self.failed_in_a_row, self.skip = {}, 0, 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.reset_stats()

    def reset_stats(self):
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._stats["seconds"] = 0.0

    def stats(self):
        """{requests, cache_hits, judge_calls, judged (requests the judge scored), failures (failed calls),
        timeouts, fallback_scores, circuit_open_calls (calls that skipped the judge), seconds (waiting on it)}
        since the last reset_stats(). cache_hits counts the requests answered without asking the judge again: a
        repeat of an earlier request, or of one in the same batch."""
        return dict(self._stats)

    @property
    def circuit_open(self):
        return self.skip > 0

    def __call__(self, completions, answer=None, problem=None, **columns):
        """One score per completion. answer (the dataset's column) never reaches the judge: only the fallback,
        a rule verifier, reads it."""
        if problem is None:
            raise ValueError(f"{self.__name__}: no `problem` column: the judge reads each completion's problem; pass "
                             f"the dataset's column (TRL passes every column by its name) or one problem for all")
        rows = per_completion(completions, problem)
        n = len(rows)
        self._stats["requests"] += n
        out = [self.default] * n
        todo = {}                                  # request key -> indices of the completions that ask it
        for i, (text, prob) in enumerate(rows):
            if not isinstance(text, str) or not isinstance(prob, str):
                continue
            key = (prob, text) if self.use_cache else (prob, text, i)
            if self.use_cache and key in self.cache:
                out[i] = self.cache[key]
                self._stats["cache_hits"] += 1
            else:
                todo.setdefault(key, []).append(i)
        if not todo:
            return out
        keys = list(todo)
        scores = self._ask(keys) or [None] * len(keys)   # None: failed or skipped; a None score: that one unjudged
        for k, s in zip(keys, scores):
            if s is None:
                continue
            if self.use_cache:
                self.cache[k] = s
            for i in todo[k]:
                out[i] = s
            self._stats["judged"] += 1
            self._stats["cache_hits"] += len(todo[k]) - 1   # repeats within this batch
        idx = [i for k, s in zip(keys, scores) if s is None for i in todo[k]]   # the fallback scores these
        self._stats["fallback_scores"] += len(idx)
        if idx and self.fallback is not None:   # the rule verifier: trusted, so a bad return is an error, named
            texts = [rows[i][0] for i in idx]
            cols = {k: _pick(v, idx, n) for k, v in dict(columns, problem=problem).items()}
            answers = _pick(answer, idx, n) if answer is not None else [None] * len(idx)
            for i, s in zip(idx, checks.reward_scores(self.fallback, "fallback", texts, answers, cols)):
                out[i] = float(s)
        return out

    def _ask(self, keys):
        """The judge's scores for the request keys (a float, or None for one it could not judge: not a finite
        number), or None when the call failed or the circuit is open."""
        if self.skip > 0:
            self.skip -= 1
            self._stats["circuit_open_calls"] += 1
            return None
        self._stats["judge_calls"] += 1
        t = time.perf_counter()
        fut = self._pool.submit(self.score_fn, [k[0] for k in keys], [k[1] for k in keys])
        try:
            scores = [_finite(s) for s in fut.result(timeout=self.timeout_s)]
            if len(scores) != len(keys) or all(s is None for s in scores):
                raise ValueError("wrong number of scores, or not one finite score")
        except FutureTimeout:
            self._stats["timeouts"] += 1
            self._pool.shutdown(wait=False, cancel_futures=True)   # abandon the call: its thread ends when it does
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.__name__)
            return self._failed(t)
        except Exception:   # a judge's failure of any kind is a failed call, never the trainer's crash
            return self._failed(t)
        self._stats["seconds"] += time.perf_counter() - t
        self.failed_in_a_row = 0
        return scores

    def _failed(self, t):
        self._stats["seconds"] += time.perf_counter() - t
        self._stats["failures"] += 1
        self.failed_in_a_row += 1
        if self.failed_in_a_row >= self.max_failures:
            self.skip, self.failed_in_a_row = self.cooldown, 0
        return None


def _finite(score):
    """A judge's score as a float, or None where it is not a finite number (NaN: it could not judge that one)."""
    try:
        score = float(score)
    except (TypeError, ValueError, OverflowError):
        return None
    return score if math.isfinite(score) else None


def _pick(col, idx, n):
    """The values of a column for the completions idx (a list aligned with n completions, or one shared value)."""
    if isinstance(col, (list, tuple)) and len(col) == n:
        return [col[i] for i in idx]
    return col


def flaky(score_fn, p_fail=0.0, p_slow=0.0, slow_s=1.0, seed=0):
    """score_fn made unreliable, for demonstrations and tests: each call raises (RuntimeError) with probability
    p_fail, else stalls slow_s seconds first with probability p_slow; seeded, so the same calls fail each run."""
    where = "flaky"
    checks.function(where, "score_fn", score_fn)
    p_fail = checks.number(where, "p_fail", p_fail, lo=0, hi=1)
    p_slow = checks.number(where, "p_slow", p_slow, lo=0, hi=1)
    slow_s = checks.number(where, "slow_s", slow_s, lo=0, hi=60)
    rng = random.Random(checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True))

    def unreliable(problems, completions):
        r = rng.random()
        if r < p_fail:
            raise RuntimeError("the judge's service failed (flaky)")
        if r < p_fail + p_slow:
            time.sleep(slow_s)
        return score_fn(problems, completions)
    unreliable.__name__ = f"flaky_{getattr(score_fn, '__name__', 'judge')}"
    return unreliable


def hybrid_reward(rule, judge, column="checkable"):
    """One reward from two: rule's score on the rows whose `column` is True (where a rule verifier applies), the
    judge's on the others, each asked only about its own rows (so a costly judge is asked about fewer). Both have
    the shared signature. True is a bool, a numpy bool or 1 (signature.truth); a row whose value is anything else
    (False, 0, None) goes to the judge; a call without the column at all is a ValueError naming it (every row would
    go to the judge unseen). (In TRL the same split is two reward functions, each returning None on the other's
    rows.)"""
    where = "hybrid_reward"
    checks.function(where, "rule", rule)
    checks.function(where, "judge", judge)
    if not isinstance(column, str) or not column.isidentifier():
        raise ValueError(f"{where}: column must name a dataset column, got {checks._short(column)}")

    def hybrid(completions, answer=None, **columns):
        rows = per_completion(completions, answer, needs_column(hybrid.__name__, column, columns.get(column),
                                                                "which rows the rule verifier judges"))
        n = len(rows)
        out = [0.0] * n
        ruled = [truth(r[2]) is True for r in rows]
        if any(ruled):   # a rule verifier reads the answer: without the column, its rows would all score 0
            needs_column(hybrid.__name__, "answer", answer, "each problem's answer, for the rule verifier's rows")
        for fn, mine in ((rule, [i for i in range(n) if ruled[i]]), (judge, [i for i in range(n) if not ruled[i]])):
            if mine:
                cols = {k: _pick(v, mine, n) for k, v in columns.items()}
                ans = _pick(answer, mine, n) if answer is not None else None
                for i, s in zip(mine, checks.reward_scores(fn, where, [rows[i][0] for i in mine], ans, cols)):
                    out[i] = float(s)
        return out
    hybrid.__name__ = f"hybrid_{getattr(rule, '__name__', 'rule')}_{getattr(judge, '__name__', 'judge')}"
    return hybrid
