"""Lab 03's checks (the random-reward control): a random reward, the control check."""
from utils.notebook.exercises.common import ExerciseError, _note, learner_check


@learner_check("(p, seed)", "a reward function (completions, answer) -> one 0.0 or 1.0 per completion")
def check_random_reward(fn):
    """Check fn(p, seed) -> reward function paying 1.0 with probability p whatever the completion:
    the rate on 20,000 calls is within 0.015 of p, right and wrong outputs are paid alike, the same seed
    gives the same stream and another seed another one, successive calls draw fresh coins, and p outside
    [0, 1] raises ValueError. Returns the factory to use."""
    import numpy as np

    from utils.verifiers.spurious import random_reward

    try:
        fn(0.5, 0)
    except NotImplementedError:
        return _note("my_random_reward", random_reward)
    n = 20000
    for p in (0.0, 0.3, 1.0):
        got = np.asarray(fn(p, 1)(["66"] * n, [66] * n), dtype=float)
        if got.shape != (n,) or not np.isin(got, (0.0, 1.0)).all():
            raise ExerciseError(f"my_random_reward({p}, 1) should return a list of {n} values, each 0.0 or 1.0")
        if abs(got.mean() - p) > 0.015:
            raise ExerciseError(f"my_random_reward({p}, 1) paid {got.mean():.3f} of {n} completions; "
                                f"expected about {p}")
    right = np.asarray(fn(0.3, 2)(["66"] * n, [66] * n))
    wrong = np.asarray(fn(0.3, 2)(["67"] * n, [66] * n))
    if abs(right.mean() - wrong.mean()) > 0.02:
        raise ExerciseError(f"the reward must not depend on the output: right answers paid {right.mean():.3f}, "
                            f"wrong ones {wrong.mean():.3f}")
    if list(fn(0.5, 3)(["x"] * 50)) != list(fn(0.5, 3)(["x"] * 50)):
        raise ExerciseError("the same seed must give the same rewards: use np.random.default_rng(seed) inside")
    if list(fn(0.5, 3)(["x"] * 50)) == list(fn(0.5, 4)(["x"] * 50)):  # equal by chance: 1 in 2^50
        raise ExerciseError("seeds 3 and 4 gave the same 50 rewards: the seed must choose the stream "
                            "(np.random.default_rng(seed), not a fixed seed)")
    reward = fn(0.5, 3)
    if list(reward(["x"] * 50)) == list(reward(["x"] * 50)):
        raise ExerciseError("two calls of the same reward function paid the same 50 rewards: each call must draw "
                            "fresh coins from one stream. Create the generator once in my_random_reward, outside the "
                            "inner function, not on every call (and draw at random, not a fixed pattern).")
    for bad in (-0.1, 1.5):
        try:
            fn(bad, 0)
        except ValueError:
            continue
        raise ExerciseError(f"my_random_reward({bad}, 0) should raise ValueError: p is a probability")
    print("OK: my_random_reward pays at rate p, ignores the output, is seeded (one stream per seed, fresh coins "
          "on every call) and rejects a bad p.")
    return fn


@learner_check("(before, true_runs, random_runs, threshold)", "a dict with true_gain, random_gain, flagged and harmed")
def check_control_check(fn):
    """Check fn(before, true_runs, random_runs, threshold) -> dict with true_gain, random_gain, flagged (random
    gain > threshold) and harmed (random gain < -threshold) on worked cases, one per branch and both edges
    (runs are dicts with an 'after' report; gains are means over runs of pass@1 after minus before).
    A 'verdict' or 'message' key is allowed but not required."""
    from utils.eval.control import control_check

    def runs(*accs):
        return [{"config": {"steps": 1}, "after": {"pass@1": a}} for a in accs]
    before = {"pass@1": 0.25}  # values exact in binary floating point, so the threshold cases are exact
    # (description, true runs, random runs, threshold, (true_gain, random_gain, flagged, harmed)), worked by hand:
    cases = [("true +12.5 and +6.25 points (mean +9.375), random +3.125 and 0 (mean +1.5625)",
              runs(0.375, 0.3125), runs(0.28125, 0.25), 0.0625, (0.09375, 0.015625, False, False)),
             ("random +12.5 and +6.25 points (mean +9.375 > 6.25): flagged", runs(0.5), runs(0.375, 0.3125), 0.0625,
              (0.25, 0.09375, True, False)),
             ("random exactly at +threshold (+6.25 points): not above it", runs(0.5), runs(0.3125), 0.0625,
              (0.25, 0.0625, False, False)),
             ("random -12.5 points (< -6.25): it hurt, harmed", runs(0.5), runs(0.125), 0.0625,
              (0.25, -0.125, False, True)),
             ("random exactly at -threshold (-6.25 points): not below it", runs(0.5), runs(0.1875), 0.0625,
              (0.25, -0.0625, False, False)),
             ("random -12.5 and +6.25 points: the mean, -3.125, is within the threshold", runs(0.5),
              runs(0.125, 0.3125), 0.0625, (0.25, -0.03125, False, False))]
    try:
        fn(before, *cases[0][1:4])
    except NotImplementedError:
        return _note("my_control_check", control_check)
    keys = ("true_gain", "random_gain", "flagged", "harmed")
    for desc, t, r, th, want in cases:
        out = fn(before, t, r, th)
        missing = [k for k in keys if not isinstance(out, dict) or k not in out]
        if missing:
            raise ExerciseError(f"my_control_check must return a dict with the keys {list(keys)}; missing "
                                f"{missing}. 'harmed' is True when the random gain is below -threshold: training "
                                f"itself costs accuracy, so the control is not neutral and the comparison with the "
                                f"true reward is not like with like.")
        got = tuple(out[k] for k in keys)
        if not (abs(got[0] - want[0]) < 1e-9 and abs(got[1] - want[1]) < 1e-9 and bool(got[2]) == want[2]
                and bool(got[3]) == want[3]):
            raise ExerciseError(
                f"my_control_check on {desc} (threshold {th}):\n"
                f"  expected true_gain {want[0]}, random_gain {want[1]}, flagged {want[2]}, harmed {want[3]}\n"
                f"  got      true_gain {got[0]}, random_gain {got[1]}, flagged {got[2]}, harmed {got[3]}\n"
                f"Hint: gain = mean over runs of after['pass@1'] - before['pass@1']; flagged when the random gain is "
                f"strictly above +threshold, harmed when it is strictly below -threshold (exactly at either is "
                f"neither).")
    print(f"OK: my_control_check matches the reference on {len(cases)} worked cases.")
    return fn
