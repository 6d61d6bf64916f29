"""Property-based checks of the public API (hypothesis): for each public function below, one argument at a
time is replaced by a random bad value (None, a string, NaN, inf, a negative or huge number, a bool, an empty
or nested list, an object) while the others stay good. The call must then either succeed, with a result of
the right kind, or raise ValueError or TypeError whose message names the argument: never an error from deep
inside numpy or torch, never a silent NaN.

The functions are those a learner or a lab calls directly without a model (the maths of the loss, pass@k,
the health check, the task and curation helpers, the verifiers, the scaling fit, the cost model, the random-reward
control's verdict, Lab 06's held-out curve); GRPOConfig is checked field by field. The exercise checks get the
same property for the learner's function they are passed (BAD_LEARNER: not a function, the wrong arguments, None
or the wrong kind back, an error inside it): one ExerciseError naming my_<name>, never an error from inside.
Those that take a model (sample, completion_logprobs, evaluate and the other
sampling functions of utils/eval/metrics.py, train_grpo) get the same property, with BAD and the mistakes of
a call with a model, in tests/test_properties_models.py (the shipped model loaded once); tests/test_bad_input.py
checks chosen cases of them by hand, with the exact message each gives.
"""
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils.eval import control, health, metrics, scaling
from utils.eval import traces as trace_eval
from utils.models import cost
from utils.notebook import exercises
from utils.rl import grpo
from utils.tasks import arithmetic as tasks
from utils.tasks import curation
from utils.verifiers import arithmetic as verifiers

BAD = st.sampled_from([None, "x", "", b"1", math.nan, math.inf, -math.inf, -1, -0.5, 0, 10**30, True, False, [],
                       [[1, 2], [3]], {}, {"a": 1}, object(), (1,), [None], ["a", "b"], [math.nan, 1.0]])
T = lambda *v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
HIST = [dict(step=i + 1, reward_mean=0.5, group_reward_std=0.3, entropy=1.0, kl=0.01, zero_spread_frac=0.2,
             truncated_frac=0.0, completions_sampled=64, train_seconds=2.0 * (i + 1),
             **{"heldout_pass@1": 0.4 if i % 2 else None}) for i in range(6)]
RUN = lambda acc, lr=1e-3: {"config": {"steps": 1, "lr": lr, "seed": 0}, "after": {"pass@1": acc}}  # noqa: E731

# fn, good keyword arguments, a check on a successful result
CASES = {
    "grpo.group_advantages": (grpo.group_advantages, dict(rewards=T(1, 0, 1, 1), group_size=2),
                              lambda r: r.dim() == 1 and torch.isfinite(r).all()),
    "grpo.zero_spread": (grpo.zero_spread, dict(rewards=T(1, 0, 1, 1), G=2), lambda r: r.dim() == 1),
    "grpo.kl_k3": (grpo.kl_k3, dict(logp=T(-1, -2), ref_logp=T(-1.5, -2)), lambda r: (r >= 0).all()),
    "grpo.aggregate": (grpo.aggregate, dict(per_token=torch.ones(2, 3), mask=torch.ones(2, 3)),
                       lambda r: r.dim() == 0 and torch.isfinite(r)),
    "grpo.policy_loss": (grpo.policy_loss, dict(logp=torch.zeros(2, 3), old_logp=torch.zeros(2, 3),
                                                ref_logp=torch.zeros(2, 3), adv=T(1, -1), mask=torch.ones(2, 3)),
                         lambda r: r.dim() == 0 and torch.isfinite(r)),
    "grpo.high_entropy_mask": (grpo.high_entropy_mask, dict(entropy=torch.rand(2, 3), mask=torch.ones(2, 3),
                                                            frac=0.5), lambda r: r.shape == (2, 3)),
    "metrics.pass_at_k": (metrics.pass_at_k, dict(n=8, c=3, k=2), lambda r: 0 <= r <= 1),
    "metrics.pass_at_k_table": (metrics.pass_at_k_table, dict(n=8, ks=[1, 2]), None),
    "metrics.bootstrap_pass_at_k": (metrics.bootstrap_pass_at_k,
                                    dict(correct=[3, 5], n=8, ks=[1, 2], n_boot=20), None),
    "metrics.guess_rate": (metrics.guess_rate, dict(answer="42"), lambda r: 0 <= r <= 1),
    "metrics.largest_k_under": (metrics.largest_k_under, dict(curve=[0.01, 0.02, 0.2], ks=[1, 2, 4]), None),
    "metrics.compression_ratio": (metrics.compression_ratio, dict(before_1=0.3, before_k=0.8, after_1=0.5), None),
    "health.health_check": (health.health_check, dict(history=HIST), lambda r: isinstance(r["ok"], bool)),
    "health.summarize": (health.summarize, dict(history=HIST), lambda r: isinstance(r, dict)),
    "health.expected_zero_spread": (health.expected_zero_spread, dict(p=0.3, group_size=8),
                                    lambda r: 0 <= r <= 1),
    "tasks.format_prompt": (tasks.format_prompt, dict(a=12, op="+", b=34),
                            lambda r: isinstance(r, str) and r.endswith("=")),
    "tasks.solve": (tasks.solve, dict(a=12, op="+", b=34), lambda r: isinstance(r, int)),
    "tasks.make_splits": (tasks.make_splits, dict(seed=0, sizes={"train": 10, "test": 5}), None),
    "curation.sweet_spot": (curation.sweet_spot, dict(rates=[0.1, 0.5, 0.9], lo=0.3, hi=0.7), None),
    "curation.random_subset": (curation.random_subset, dict(n_total=10, size=3, seed=0), lambda r: len(r) == 3),
    "curation.curriculum": (curation.curriculum, dict(schedule=[(2, [1]), (4, [1, 2])], steps=4),
                            lambda r: len(r) == 4),
    "scaling.fit_sigmoid": (scaling.fit_sigmoid, dict(C=[1.0, 2, 4, 8, 16, 32], R=[0.1, 0.2, 0.35, 0.5, 0.6, 0.62],
                                                      R0=0.05, grid=8, rounds=1), None),
    "cost.rate_from": (cost.rate_from, dict(seconds=2.0, flops=1e9), lambda r: r > 0),
    "cost.predict_seconds": (cost.predict_seconds, dict(flops=1e9, rate=5e8), lambda r: r >= 0),
    "control.control_check": (control.control_check, dict(before={"pass@1": 0.25}, true_runs=[RUN(0.5), RUN(0.375)],
                                                          random_runs=[RUN(0.3)], threshold=0.05, key="pass@1"),
                              lambda r: r["verdict"] in control.VERDICTS and math.isfinite(r["random_gain"])),
    "control.check_same_config": (control.check_same_config, dict(runs={"true": [RUN(0.5)], "random": [RUN(0.3)]}),
                                  lambda r: r is None),
    "traces.heldout_curve": (trace_eval.heldout_curve, dict(history=HIST, start=0.2, x="completions"),
                             lambda r: len(r) == 2 and len(r[0]) == len(r[1]) >= 1),
}


def _names_it(err, name):
    return name in str(err)


NAMED = object()  # what call_or_named returns when the call raised an error that names the argument


def call_or_named(shown, fn, kwargs, name, names_it=_names_it):
    """fn(**kwargs)'s result, or NAMED if it raised ValueError/TypeError whose message names `name` (names_it
    decides); any other error fails the test, from inside numpy or torch as much as a message without the name.
    shown: the call as the failure message writes it."""
    try:
        return fn(**kwargs)
    except (ValueError, TypeError) as e:
        assert names_it(e, name), f"{shown} raised {type(e).__name__} without naming {name}: {e}"
        return NAMED
    except Exception as e:  # noqa: BLE001 - the point: nothing else may come out
        pytest.fail(f"{shown} raised {type(e).__name__} from inside: {e}")


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bad_arguments_fail_by_name(case, data):
    fn, good, check = CASES[case]
    name = data.draw(st.sampled_from(sorted(good)), label="argument")
    bad = data.draw(BAD, label="value")
    out = call_or_named(f"{case}({name}={bad!r})", fn, dict(good, **{name: bad}), name)
    if out is not NAMED and check is not None:
        assert check(out), f"{case}({name}={bad!r}) returned {out!r} without complaint"


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_good_call_is_good(case):
    """The baseline each property varies: the good arguments give a good result."""
    fn, good, check = CASES[case]
    out = fn(**good)
    assert check is None or check(out), out


VERIFIERS = [verifiers.strict_reward, verifiers.careful_reward, verifiers.last_number_reward,
             verifiers.contains_reward, verifiers.last_digit_reward]


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(completions=st.one_of(BAD, st.lists(st.one_of(st.text(max_size=30), BAD), max_size=5)),
       answer=st.one_of(BAD, st.lists(st.one_of(st.text(max_size=5), BAD), max_size=5)))
def test_verifiers_give_one_score_per_completion_whatever_they_get(completions, answer):
    """A verifier never raises: one float in [0, 1] per completion (a verifier judges what a model wrote, and
    a model writes anything)."""
    for fn in VERIFIERS:
        out = fn(completions, answer)
        n = len(completions) if isinstance(completions, list) else None
        assert isinstance(out, list) and all(isinstance(x, float) and 0.0 <= x <= 1.0 for x in out), (fn, out)
        assert n is None or len(out) == n, (fn.__name__, completions, out)


FIELDS = {f: v for f, v in vars(grpo.GRPOConfig()).items()}


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(sorted(FIELDS)), bad=BAD)
def test_config_fields_fail_by_name(field, bad):
    """GRPOConfig: a bad value is refused with the field's name, or taken only where it is a valid value."""
    try:
        cfg = grpo.GRPOConfig(**{field: bad})
    except (ValueError, TypeError) as e:
        assert f"GRPOConfig.{field}" in str(e) or field in str(e), f"{field}={bad!r}: {e}"
        return
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"GRPOConfig({field}={bad!r}) raised {type(e).__name__} from inside: {e}")
    value, default = getattr(cfg, field), FIELDS[field]
    assert not (isinstance(value, float) and not math.isfinite(value)), f"{field}={bad!r} was taken"
    if isinstance(default, bool):
        assert isinstance(value, bool), f"{field}={bad!r} became {value!r}"
    elif isinstance(default, (int, float)):  # a number stays a number (0 for 0.0 is the same setting)
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{field}={bad!r} became {value!r}"
    elif default is not None:
        assert type(value) is type(default), f"{field}={bad!r} became {value!r}"



def _raises(error):
    def learner_fn(*args, **kwargs):
        raise error
    return learner_fn


# a learner's function gone wrong: not a function at all, the wrong arguments, a result of the wrong kind, an error
BAD_LEARNER = [None, 3, "my_fn", [], lambda: 1.0, lambda *a: None, lambda *a: "x", lambda *a: [[1.0, 2.0], [3.0]],
               lambda *a: math.nan, lambda *a: math.inf, lambda *a: {"a": 1}, lambda *a: object(), lambda *a: {"kl"},
               lambda *a: (1.0, 2.0), lambda *a: -1, lambda *a: torch.full((3, 3), math.nan), lambda *a: [],
               _raises(RuntimeError("boom")), _raises(KeyError("reward")), _raises(ZeroDivisionError("division")),
               _raises(IndexError("index 3 is out of bounds")), _raises(AssertionError("my own assert")),
               _raises(TypeError("unsupported operand")), _raises(ValueError("bad")), _raises(RecursionError()),
               lambda *a: [1.0] * 10**6]
CHECKS = sorted(n for n in exercises.__all__ if n.startswith("check_"))


@pytest.mark.parametrize("check", CHECKS)
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(fn=st.sampled_from(BAD_LEARNER))
def test_exercise_checks_reject_a_bad_learner_function_clearly(check, fn):
    """An exercise check given a broken learner function (not callable, the wrong arguments, None or the wrong kind
    back, an error inside it) raises one ExerciseError that names the learner's function (my_<name>): never an
    error from inside the check, never a pass, and no chained traceback (the learner sees one message)."""
    name = "my_" + check.removeprefix("check_")
    try:
        out = getattr(exercises, check)(fn)
    except exercises.ExerciseError as e:
        assert name in str(e), f"{check}({fn!r}): the message does not name {name}: {e}"
        assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), f"{check}: chained: {e}"
        return
    except Exception as e:  # noqa: BLE001 - the point: nothing else may come out
        pytest.fail(f"{check}({fn!r}) raised {type(e).__name__} from inside the check: {e}")
    pytest.fail(f"{check} passed a broken function {fn!r} (returned {out!r})")
