"""Lab 08's check (from the toy to a real model): diagnose a run's summary."""
from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _worked_then_generated,
    learner_check,
)

DIAGNOSE_CASES = [  # (summary, expected names, what the case tests)
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9), [],
     "a healthy run: nothing to report"),
    (dict(reward_mean=0.02, zero_spread_frac=0.95, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_wrong"], "groups all alike with reward near 0"),
    (dict(reward_mean=0.98, zero_spread_frac=0.8, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_right"], "groups all alike with reward near 1 (0.8 is already too many)"),
    (dict(reward_mean=0.3, zero_spread_frac=0.9, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_wrong"], "groups all alike, 30% of them right: under 0.5 is all wrong (not a 0.1 threshold)"),
    (dict(reward_mean=0.7, zero_spread_frac=0.9, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_right"], "groups all alike, 70% of them right: 0.5 or more is all right (not a 0.9 threshold)"),
    (dict(reward_mean=float("nan"), zero_spread_frac=0.3, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["diverged"], "a value that is NaN: the run diverged, and that comes first"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.5, kl=0.01, entropy_ratio=0.9), ["truncated"],
     "half the completions cut at the cap"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.1, kl=0.01, entropy_ratio=0.9), [],
     "a truncated share of exactly 0.1 is still fine (the flag is for more than 0.1)"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=1e-6, entropy_ratio=0.9), ["not_moving"],
     "KL near 0: the policy is not moving"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=0.5, entropy_ratio=0.3), ["collapsing"],
     "entropy at 30% of its start"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=40.0, entropy_ratio=0.9), ["kl_exploding"],
     "KL far above the ceiling: the policy has run away"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=10.0, entropy_ratio=0.9), [],
     "a KL of exactly the ceiling is still fine (the flag is for more than KL_CEILING)"),
    (dict(reward_mean=0.02, zero_spread_frac=0.9, truncated_frac=0.9, kl=1e-6, entropy_ratio=0.9),
     ["no_signal_all_wrong", "truncated", "not_moving"], "several at once, in DIAGNOSES' order"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=None, kl=None, entropy_ratio=None), [],
     "None (not recorded) decides nothing"),
]


@learner_check("(summary)", "the list of DIAGNOSES names the summary shows")
def check_diagnose(fn):
    """Check fn(summary) -> the list of DIAGNOSES names a run's summary shows (health.diagnose) on DIAGNOSE_CASES.
    Returns the function to use."""
    from utils.eval.health import diagnose
    try:
        fn(dict(DIAGNOSE_CASES[0][0]))
    except NotImplementedError:
        return _note("my_diagnose", diagnose)
    generated = _diagnose_cases(_generator("check_diagnose"))
    _worked_then_generated(lambda: _worked_diagnose(fn), lambda: _agree(
        "my_diagnose", lambda s: list(fn(s)), diagnose, generated, lambda s: f"my_diagnose({s})",
        "every rule that applies, each once, in DIAGNOSES' order (health.diagnose's docstring); 'diverged' first "
        "for any value that is NaN or inf (math.isfinite, not only isnan); None decides nothing; the limits are "
        "strict where the docstring says > or <."))
    _said_if_reference("my_diagnose", fn, diagnose, dict(DIAGNOSE_CASES[0][0]))
    print(f"OK: my_diagnose matches on {len(DIAGNOSE_CASES)} worked cases and {len(generated)} generated ones.")
    return fn


def _diagnose_cases(rng, n=60):
    """Generated summaries: each value drawn near and exactly at its limit, None (not recorded), NaN, +inf or -inf
    now and then, so that several rules apply at once."""
    from utils.eval.health import ENTROPY_RATIO, KL_CEILING, KL_FLOOR, TRUNCATED_CEILING, ZERO_SPREAD_CEILING

    nan, inf = float("nan"), float("inf")
    odd = [None, nan, inf, -inf]
    draws = {"reward_mean": [0.02, 0.3, 0.49, 0.5, 0.7, 0.98],
             "zero_spread_frac": [0.3, ZERO_SPREAD_CEILING - 0.01, ZERO_SPREAD_CEILING, 0.95],
             "truncated_frac": [0.0, 0.05, TRUNCATED_CEILING, 0.11, 0.5],
             "kl": [KL_FLOOR / 100, KL_FLOOR, 0.01, 0.5, KL_CEILING, 4 * KL_CEILING],
             "entropy_ratio": [0.3, ENTROPY_RATIO, 0.9]}
    return [({k: rng.choice(odd) if rng.random() < 0.08 else rng.choice(v) for k, v in draws.items()},)
            for _ in range(n)]


def _worked_diagnose(fn):
    """DIAGNOSE_CASES, each with its message."""
    for summary, want, what in DIAGNOSE_CASES:
        try:
            got = fn(dict(summary))
        except TypeError as e:
            raise ExerciseError(f"my_diagnose on {what} raised TypeError ({e}): a value may be None (not recorded); "
                                f"skip that rule") from None
        if list(got) != want:
            raise ExerciseError(f"my_diagnose on {what}:\n  summary  {summary}\n  expected {want}\n  got      "
                                f"{list(got)}\nRules and their order: health.diagnose's docstring.")
