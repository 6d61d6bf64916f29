"""Lab 03's checks (the random-reward control): a random reward, the control check."""
import numpy as np

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _worked_then_generated,
    learner_check,
)


def answer_random_reward(p, seed=0):
    """The exercise's answer, as the solution notebook writes it: what an unwritten my_random_reward falls back to,
    so that the lab trains the runs its solution trains (and the test suite's run cache, which keys a function by
    its code, computes them once for both). The library's spurious.random_reward is the same coin with the
    verifier contract around it (a bare string or chat messages as one completion, anything else as none)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    rng = np.random.default_rng(seed)
    def reward(completions, answer=None, **kwargs):
        return (rng.random(len(completions)) < p).astype(float).tolist()
    return reward


@learner_check("(p, seed)", "a reward function (completions, answer) -> one 0.0 or 1.0 per completion")
def check_random_reward(fn):
    """Check fn(p, seed) -> reward function paying 1.0 with probability p whatever the completion:
    the rate on 20,000 calls is within 0.015 of p, right and wrong outputs are paid alike, the same seed
    gives the same stream and another seed another one, successive calls draw fresh coins, and p outside
    [0, 1] raises ValueError. Returns the factory to use."""
    try:
        fn(0.5, 0)
    except NotImplementedError:
        return _note("my_random_reward", answer_random_reward)
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
    _streams(fn, _generator("check_random_reward"))
    print("OK: my_random_reward pays at rate p, ignores the output, is seeded (one stream per seed, fresh coins "
          "on every call, rewards drawn interleaved kept apart) and rejects a bad p.")
    return fn


def _streams(fn, rng, n=64):
    """Generated seeds: two reward functions drawn interleaved each give the stream they give alone (no shared
    global generator), and a seed's later calls are not another seed's earlier ones (no seed + call count)."""
    for _ in range(3):
        p = rng.choice([0.3, 0.5, 0.7])
        s1 = rng.randint(0, 10**6)
        s2 = s1 + rng.choice([1, 2, 17])
        x = ["x"] * n
        a, b = fn(p, s1), fn(p, s2)
        mixed = [list(a(x)), list(b(x)), list(a(x)), list(b(x))]          # a, b, a, b
        a, b = fn(p, s1), fn(p, s2)
        alone = [list(a(x)), list(a(x))] + [list(b(x)), list(b(x))]     # a, a, then b, b
        if mixed[0::2] != alone[:2] or mixed[1::2] != alone[2:]:
            raise ExerciseError(f"my_random_reward({p}, {s1}) and my_random_reward({p}, {s2}), drawn in turns "
                                f"(a, b, a, b, {n} completions a call), gave other rewards than each drawn alone: the "
                                f"two reward functions share one generator (np.random.seed and np.random.random, or "
                                f"the random module, are global). Give each its own: rng = np.random.default_rng(seed) "
                                f"inside my_random_reward, used by its inner function.")
        calls = fn(p, s1)
        later = [list(calls(x)) for _ in range(4)]                  # calls 1-4 of seed s1
        for j in (1, 2, 3):
            if later[j] == list(fn(p, s1 + j)(x)):
                raise ExerciseError(f"call {j + 1} of my_random_reward({p}, {s1}) paid the same {n} rewards as the "
                                    f"first call of my_random_reward({p}, {s1 + j}): each call re-seeds from the seed "
                                    f"and a call count, so seeds' streams overlap. Create one generator per reward "
                                    f"function, seeded once, and keep drawing from it.")


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
    _worked_then_generated(lambda: _worked_control(fn, before, cases, keys), lambda: _agree(
        "my_control_check", _four(fn), _four(control_check), _control_cases(_generator("check_control_check")),
        _describe_control, CONTROL_HINT))
    print(f"OK: my_control_check matches the reference on {len(cases)} worked cases and the generated ones.")
    return fn


CONTROL_HINT = ("gain = the mean over ALL runs of after['pass@1'] - before['pass@1']; flagged when the random gain is "
                "strictly above +threshold, harmed when it is strictly below -threshold (exactly at either is "
                "neither).")


def _four(f):
    """f's result reduced to the four keys the exercise asks for (bools and floats as Python's own)."""
    def run(*args):
        out = f(*args)
        if not isinstance(out, dict):
            return out
        conv = {"flagged": lambda v: bool(v) if type(v).__name__ in ("bool", "bool_") else v,
                "harmed": lambda v: bool(v) if type(v).__name__ in ("bool", "bool_") else v}
        return {k: conv.get(k, lambda v: v)(out.get(k, "<missing>")) for k in
                ("true_gain", "random_gain", "flagged", "harmed")}
    return run


def _control_cases(rng, n=40):
    """Generated (before, true_runs, random_runs, threshold) cases, fewest runs first: one to five runs of each
    condition (more than two, so that only the mean over all runs is right), accuracies in 64ths (exact in binary
    floating point), and random gains that land exactly on +threshold or -threshold."""
    def runs(accs):
        return [{"config": {"steps": 1}, "after": {"pass@1": a}} for a in accs]
    out = []
    for _ in range(n):
        before, th = rng.randint(16, 48) / 64, rng.randint(1, 8) / 64
        nt, nr = rng.randint(1, 5), rng.randint(1, 5)
        true = [before + rng.randint(-8, 16) / 64 for _ in range(nt)]
        if rng.random() < 0.3:                                   # every run's gain exactly +-threshold
            rand = [before + rng.choice([-1, 1]) * th] * nr
        else:
            rand = [before + rng.randint(-12, 12) / 64 for _ in range(nr)]
        out.append(({"pass@1": before}, runs(true), runs(rand), th))
    return sorted(out, key=lambda c: len(c[1]) + len(c[2]))


def _describe_control(before, true_runs, random_runs, threshold):
    """A generated control case in words."""
    acc = lambda rs: [r["after"]["pass@1"] for r in rs]  # noqa: E731
    return (f"before pass@1 {before['pass@1']}, true runs' pass@1 after {acc(true_runs)}, random runs' "
            f"{acc(random_runs)}, threshold {threshold}")


def _worked_control(fn, before, cases, keys):
    """The worked control cases, each with its message."""
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
