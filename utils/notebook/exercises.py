"""Exercise checks. Each check runs the learner's function on small worked cases and
returns the function to use for the rest of the lab:

- not written yet (raises NotImplementedError): prints a visible note and returns the
  reference implementation, so the lab still runs top to bottom;
- wrong: raises ExerciseError saying what differs (shape or values, on a small case);
- right: prints a tick and returns the learner's function.
"""
import torch

from utils.rl import grpo


class ExerciseError(AssertionError):
    """A learner's function disagrees with the reference on a worked case."""


def _note(name, reference):
    print(f"NOTE: {name} is not written yet, so this lab uses the reference implementation "
          f"{reference.__module__}.{reference.__name__} and runs on. Write it and re-run this cell.")
    return reference


def _compare(name, case, got, want, atol=1e-5):
    got = torch.as_tensor(got, dtype=torch.float32) if not torch.is_tensor(got) else got.float()
    if got.shape != want.shape:
        raise ExerciseError(f"{name} on {case}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if not torch.allclose(got, want, atol=atol, rtol=1e-4):
        raise ExerciseError(f"{name} on {case}:\n  expected {want.tolist()}\n  got      {got.tolist()}")


def _run(name, fn, reference, cases):
    """Run fn on each case, a (description, args tuple, expected value: a number, list or tensor), and compare
    with _compare. Returns fn if every case matches, the reference if fn is not written yet."""
    try:
        for desc, args, want in cases:
            _compare(name, desc, fn(*args), torch.as_tensor(want, dtype=torch.float32))
    except NotImplementedError:
        return _note(name, reference)
    print(f"OK: {name} matches the reference on {len(cases)} worked cases.")
    return fn


def check_group_advantages(fn):
    """Check fn(rewards [N], group_size, scale_std=True, baseline='mean') -> advantages [N]."""
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # two groups of 4
    cases = [
        ("rewards [1,0,0,1 | 1,1,1,1], group 4, no std scaling",
         (r, 4, False, "mean"), [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]),
        ("the same, scaled by the group std (0.5 in the first group, 0 in the second)",
         (r, 4, True, "mean"), [0.5 / 0.5001, -0.5 / 0.5001, -0.5 / 0.5001, 0.5 / 0.5001, 0, 0, 0, 0]),
        ("rewards [1,0,0,0], group 2", (torch.tensor([1.0, 0.0, 0.0, 0.0]), 2, True, "mean"),
         [0.5 / 0.5001, -0.5 / 0.5001, 0, 0]),
    ]
    try:
        return _run("my_group_advantages", fn, grpo.group_advantages, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: subtract each group's mean; divide by the group's population std "
                            f"(unbiased=False) plus 1e-4 only when scale_std is True.") from None


def check_policy_loss(fn):
    """Check fn(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)
    -> loss, a scalar tensor (policy_loss's contract)."""
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.2]]))
    old = torch.log(torch.tensor([[0.25, 0.5], [0.9, 0.4]]))
    ref = torch.log(torch.tensor([[0.5, 0.25], [0.9, 0.2]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1], [1, 0]])
    # worked by hand: ratios [[2, 1], [1, 0.5]]; clip to [0.8, 1.2]:
    # row 0 (A=+1): min(2, 1.2) = 1.2 and 1 -> token losses -1.2, -1
    # row 1 (A=-1): min(-1, -1) = -1 -> loss 1 (second token masked)
    # grpo: mean(( -1.2 - 1) / 2, 1 / 1) = (-1.1 + 1) / 2 = -0.05
    # dapo: (-1.2 - 1 + 1) / 3 = -0.4
    cases = [("a 2-sequence batch, eps 0.2, beta 0, loss 'grpo'", (logp, old, ref, adv, mask, 0.2, 0.2, 0.0, "grpo", 2),
              -0.05),
             ("the same batch, loss 'dapo'", (logp, old, ref, adv, mask, 0.2, 0.2, 0.0, "dapo", 2), -0.4)]
    # with beta = 0.1 the KL term adds 0.1 * k3 per token; k3 worked by hand:
    # token (0,1): d = log(0.25/0.5) = -ln 2 -> 0.5 + ln 2 - 1 = 0.19315; others d = 0 -> 0
    cases.append(("the same batch, loss 'grpo', beta 0.1", (logp, old, ref, adv, mask, 0.2, 0.2, 0.1, "grpo", 2),
                  -0.05 + 0.1 * 0.1931472 / 2 / 2))
    cases.append(("asymmetric clipping eps_low 0.2, eps_high 0.5, loss 'dapo'",
                  (logp, old, ref, adv, mask, 0.2, 0.5, 0.0, "dapo", 2), (-1.5 - 1 + 1) / 3))

    def scalar(*a):
        loss = fn(*a)
        if not (torch.is_tensor(loss) and loss.numel() == 1):
            raise ExerciseError(f"my_policy_loss must return the loss as a scalar tensor (one number), "
                                f"got {type(loss).__name__}{'' if not torch.is_tensor(loss) else tuple(loss.shape)}")
        return loss.detach().reshape(())

    try:
        used = _run("my_policy_loss", scalar, grpo.policy_loss, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: ratio = exp(logp - old_logp); per token take "
                            f"-min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A) + beta*k3; then average "
                            f"with the mask as loss_type says.") from None
    return grpo.policy_loss if used is grpo.policy_loss else fn


# ----------------------------------------------------------------------------------------- Lab 02

# Cases the shipped suite does not hold: a written verifier is also judged on these, so that
# fitting the suite case by case shows up as a lower score here.
HIDDEN_ARITHMETIC_CASES = [
    ("-12,345", -12345, 1.0), ("  7 ", 7, 1.0), ("100.", 100, 1.0), ("2,000", 2000, 1.0),
    ("7 7", 77, 0.0), ("77 78", 77, 0.0), ("1,00", 100, 0.0), ("+7", 7, 0.0), ("7..", 7, 0.0),
    ("0.", 0, 1.0), ("\u0667", 7, 0.0), ("12,3456", 123456, 0.0), ("--7", -7, 0.0), ("", 0, 0.0),
]


def _suite_errors(fn, cases):
    """[(case, got)] where fn(output, answer) disagrees with the label; an exception counts as an error."""
    bad = []
    for c in cases:
        try:
            got = float(fn(c["output"], c["answer"]))
        except Exception as e:  # a verifier must never raise: report it as a miss
            got = f"raised {type(e).__name__}: {e}"
        if got != c["label"]:
            bad.append((c, got))
    return bad


def check_careful_match(fn, min_coverage=0.95):
    """Check a learner's match(text, answer) -> 0.0/1.0 verifier on the adversarial suite and on
    hidden cases: no false positives anywhere (a wrong answer must never score 1), coverage at least
    min_coverage on each. Returns the function to use (the reference careful_match if not written)."""
    from utils.verifiers.arithmetic import careful_match, load_arithmetic_suite

    suite = load_arithmetic_suite()
    hidden = [{"id": f"hidden-{i}", "output": o, "answer": a, "label": label}
              for i, (o, a, label) in enumerate(HIDDEN_ARITHMETIC_CASES)]
    try:
        fn("66", 66)
    except NotImplementedError:
        return _note("my_careful_match", careful_match)
    for name, cases in (("the shipped suite", suite), ("hidden cases", hidden)):
        bad = _suite_errors(fn, cases)
        fp = [(c, g) for c, g in bad if c["label"] == 0.0 and g == 1.0]
        raised = [(c, g) for c, g in bad if isinstance(g, str)]  # a verifier must never raise
        coverage = 1 - len(bad) / len(cases)
        if fp or raised or coverage < min_coverage:
            shown = "\n".join(f"  {c['id']:12s} output {repr(c['output'])[:30]:32s} answer {c['answer']!r:8} "
                              f"label {c['label']}  got {g}" for c, g in (fp or raised or bad)[:6])
            raise ExerciseError(
                f"my_careful_match on {name}: coverage {coverage:.0%} (need >= {min_coverage:.0%}), "
                f"{len(fp)} false positive(s) (need 0), {len(raised)} exception(s) (need 0). "
                f"First disagreements:\n{shown}\n"
                f"Hint: start from strict_match's rules; accept '1,073' only with commas every three digits "
                f"and one final '.'; reject everything else, and never raise (check isinstance(text, str)).")
        print(f"OK: my_match on {name}: coverage {coverage:.0%}, no false positives ({len(cases)} cases).")
    return fn


def breaking_cases():
    """The reference answer to Lab 02's exercise: (output, answer, label) cases last_number_match judges wrongly."""
    return [("67 66", 66, 0.0), ("xx66yy", 66, 0.0), ("066", 66, 0.0), ("-0", 0, 0.0)]


def check_breaking_cases(fn, target=None, min_cases=3):
    """fn() -> list of (output, answer, label) triples that `target` (default: last_number_match)
    judges wrongly. Labels are checked against careful_match, the lab's best arithmetic judge.
    Returns the list of cases to use (the reference's if fn is not written)."""
    from utils.verifiers.arithmetic import careful_match, last_number_match

    target = target or last_number_match
    reference = breaking_cases()
    try:
        cases = list(fn())
    except NotImplementedError:
        print(f"NOTE: my_breaking_cases is not written yet, so this lab uses the reference {__name__}.breaking_cases "
              f"and runs on: {reference}. Write it and re-run this cell.")
        return reference
    problems = []
    for i, case in enumerate(cases):
        if not (isinstance(case, (tuple, list)) and len(case) == 3):
            problems.append(f"case {i}: {case!r} is not an (output, answer, label) triple")
            continue
        out, ans, label = case
        if careful_match(out, ans) != label:
            problems.append(f"case {i}: {out!r} for answer {ans!r} has label {label}, but careful_match says "
                            f"{careful_match(out, ans)} (if you think it is wrong, you broke careful_match too)")
        elif target(out, ans) == label:
            problems.append(f"case {i}: {target.__name__} judges {out!r} correctly ({label}): it does not break it")
    if len(cases) < min_cases or problems:
        raise ExerciseError(f"my_breaking_cases needs at least {min_cases} cases that {target.__name__} gets wrong; "
                            f"got {len(cases)}.\n  " + "\n  ".join(problems)
                            + "\nHint: last_number_match only looks at the last number in the text.")
    print(f"OK: all {len(cases)} cases break {target.__name__}.")
    return cases


# ----------------------------------------------------------------------------------------- Lab 03

def check_random_reward(fn):
    """Check fn(p, seed) -> reward function paying 1.0 with probability p whatever the completion:
    the rate on 20,000 calls is within 0.015 of p, right and wrong outputs are paid alike, the same seed
    gives the same stream, and p outside [0, 1] raises ValueError. Returns the factory to use."""
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
    for bad in (-0.1, 1.5):
        try:
            fn(bad, 0)
        except ValueError:
            continue
        raise ExerciseError(f"my_random_reward({bad}, 0) should raise ValueError: p is a probability")
    print("OK: my_random_reward pays at rate p, ignores the output, is seeded and rejects a bad p.")
    return fn


def check_control_check(fn):
    """Check fn(before, true_runs, random_runs, threshold) -> dict with true_gain, random_gain, flagged
    on worked cases (runs are dicts with an 'after' report; gains are means over runs of pass@1)."""
    from utils.eval.control import control_check

    def runs(*accs):
        return [{"config": {"steps": 1}, "after": {"pass@1": a}} for a in accs]
    before = {"pass@1": 0.25}  # values exact in binary floating point, so the threshold case is exact
    cases = [("true +12.5 and +6.25 points, random +3.125 and 0", runs(0.375, 0.3125), runs(0.28125, 0.25), 0.0625,
              (0.09375, 0.015625, False)),
             ("random +12.5 and +6.25 points: flagged", runs(0.5), runs(0.375, 0.3125), 0.0625, (0.25, 0.09375, True)),
             ("random exactly at the threshold (+6.25 points): not above it", runs(0.5), runs(0.3125), 0.0625,
              (0.25, 0.0625, False)),
             ("random -12.5 points (it hurt)", runs(0.5), runs(0.125), 0.0625, (0.25, -0.125, False))]
    try:
        fn(before, *cases[0][1:4])
    except NotImplementedError:
        return _note("my_control_check", control_check)
    for desc, t, r, th, (gt, gr, fl) in cases:
        out = fn(before, t, r, th)
        got = (out.get("true_gain"), out.get("random_gain"), out.get("flagged"))
        if not (abs(got[0] - gt) < 1e-9 and abs(got[1] - gr) < 1e-9 and bool(got[2]) == fl):
            raise ExerciseError(f"my_control_check on {desc}:\n  expected true_gain {gt:.2f}, random_gain {gr:.2f}, "
                                f"flagged {fl}\n  got      {got}\nHint: gain = mean over runs of after['pass@1'] - "
                                f"before['pass@1']; flag when the random gain is strictly above the threshold.")
    print(f"OK: my_control_check matches the reference on {len(cases)} worked cases.")
    return fn


# ----------------------------------------------------------------------------------------- Lab 04

def check_token_entropy(fn):
    """Check fn(logits [N, T, V], mask [N, T]) -> mean entropy in nats over the masked positions."""
    import math

    from utils.eval.health import token_entropy
    uniform_peaked = torch.tensor([[[0.0, 0, 0, 0], [100.0, 0, 0, 0], [0.0, 0, 0, 0]]])   # [1, 3, 4]
    cases = [
        ("one uniform position over 4 tokens (ln 4 = 1.3863)", (uniform_peaked[:, :1], torch.ones(1, 1)),
         math.log(4)),
        ("uniform, then peaked, then a masked position: (ln 4 + 0) / 2", (uniform_peaked, torch.tensor([[1, 1, 0]])),
         math.log(4) / 2),
        ("p = (.75, .25) from logits (ln 3, 0): -(.75 ln .75 + .25 ln .25)", (torch.tensor([[[math.log(3), 0.0]]]),
                                                                              torch.ones(1, 1)), 0.562335),
        ("two rows, row 2 fully masked", (torch.tensor([[[0.0, 0.0]], [[5.0, -5.0]]]), torch.tensor([[1], [0]])),
         math.log(2)),
    ]
    try:
        return _run("my_token_entropy", fn, token_entropy, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: log_softmax over the last axis, H = -(p * log p).sum(-1) per position, "
                            f"then average over positions where mask is 1 (divide by mask.sum()).") from None


def check_health_check(fn):
    """Check fn(history, window=5) -> set of failed check names ("spread", "entropy", "kl") against
    utils.eval.health.health_check on worked histories, and a ValueError for an empty history or a
    missing metric. Returns the function to use."""
    from utils.eval.health import ENTROPY_RATIO, KL_CEILING, STD_FLOOR, health_check

    def reference(history, window=5):
        return set(health_check(history, window=window)["failed"])

    def rec(std=0.3, ent=0.5, kl=0.1):
        return {"group_reward_std": std, "entropy": ent, "kl": kl}
    low = ENTROPY_RATIO * 0.5 * 0.9                                      # under the floor of a run started at 0.5
    cases = [("a healthy run", [rec()] * 8),
             (f"entropy 0.5 -> {low:.3f} at the end", [rec()] * 8 + [rec(ent=low)] * 5),
             (f"group std {STD_FLOOR / 2} and KL {KL_CEILING * 2}",
              [rec()] * 5 + [rec(std=STD_FLOOR / 2, kl=KL_CEILING * 2)] * 5),
             ("entropy low in the middle, fine in the last 5 steps", [rec()] * 5 + [rec(ent=0.0)] * 10 + [rec()] * 5),
             ("one bad step among the last 5 (mean entropy 0.4)", [rec()] * 9 + [rec(ent=0.0)]),
             ("a run that started at 0.3 nats and ends at 0.2 (floor 0.15)", [rec(ent=0.3)] * 5 + [rec(ent=0.2)] * 5),
             ("a run that started at 1.0 nats and ends at 0.4 (floor 0.5)", [rec(ent=1.0)] * 5 + [rec(ent=0.4)] * 5),
             ("a first step of 1.1 nats, then 0.35 (start: the first 5 steps' mean 0.5, floor 0.25)",
              [rec(ent=1.1)] + [rec(ent=0.35)] * 9)]
    try:
        fn(cases[0][1])
    except NotImplementedError:
        return _note("my_health_check", reference)
    for desc, hist in cases:
        got, want = fn(hist), reference(hist)
        if set(got or ()) != want:
            raise ExerciseError(f"my_health_check on {desc}: expected {sorted(want) or 'no flags'}, got {got}\n"
                                f"Hint: average each metric over the last `window` steps, then compare with "
                                f"STD_FLOOR={STD_FLOOR}, ENTROPY_RATIO={ENTROPY_RATIO} x the mean entropy of the first "
                                f"`window` steps, and KL_CEILING={KL_CEILING}.")
    for desc, bad in (("an empty history", []),
                      ("a history without 'kl'", [{"group_reward_std": 0.3, "entropy": 0.5}])):
        try:
            fn(bad)
        except ValueError:
            continue
        except Exception as e:
            raise ExerciseError(f"my_health_check on {desc} raised {type(e).__name__}: {e}; raise a ValueError "
                                f"that names what is missing instead") from None
        raise ExerciseError(f"my_health_check on {desc} should raise ValueError naming what is missing")
    print(f"OK: my_health_check agrees with the reference on {len(cases)} histories and rejects bad input.")
    return fn


# ----------------------------------------------------------------------------------------- Lab 05

def check_pass_at_k(fn):
    """Check fn(n, c, k) -> unbiased pass@k: equal to exact enumeration over all k-subsets for n <= 8,
    exactly 1.0 when n - c < k, finite and in [0, 1] for n = 1024, ValueError for k > n, negative
    counts and c > n. Returns the function to use."""
    import itertools
    import math

    from utils.eval.metrics import pass_at_k

    try:
        fn(4, 1, 2)
    except NotImplementedError:
        return _note("my_pass_at_k", pass_at_k)
    for n in range(1, 9):
        for c in range(n + 1):
            samples = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                want = sum(any(samples[i] for i in s) for s in subsets) / len(subsets)
                got = fn(n, c, k)
                if not abs(float(got) - want) < 1e-9:
                    raise ExerciseError(f"my_pass_at_k(n={n}, c={c}, k={k}): expected {want:.6f} (the share of the "
                                        f"{len(subsets)} {k}-subsets with a correct sample), got {got}\nHint: "
                                        f"1 - C(n-c, k) / C(n, k) = 1 - prod over i from n-c+1 to n of (1 - k/i).")
    for c, k in ((1000, 100), (1, 1), (5, 512), (1023, 2), (0, 1024), (3, 1022)):
        try:
            got = float(fn(1024, c, k))
        except (OverflowError, ZeroDivisionError) as e:
            got = f"{type(e).__name__}: {e}"
        if (isinstance(got, str) or not (math.isfinite(got) and 0.0 <= got <= 1.0)
                or abs(got - pass_at_k(1024, c, k)) > 1e-9):
            raise ExerciseError(f"my_pass_at_k(1024, {c}, {k}) = {got}; expected {pass_at_k(1024, c, k)}. "
                                f"With n = 1024 the binomials reach 10^306, the edge of float64: use the product form, "
                                f"never C(n, k) itself.")
    if fn(1024, 1000, 100) != 1.0:
        raise ExerciseError("my_pass_at_k(1024, 1000, 100) must be exactly 1.0: "
                            "with n - c < k every subset has a correct sample")
    for bad in ((4, 1, 5), (4, -1, 2), (4, 5, 2), (4, 1, 0)):
        try:
            fn(*bad)
        except ValueError:
            continue
        raise ExerciseError(f"my_pass_at_k{bad} should raise ValueError (k must be 1..n, counts 0..n)")
    print("OK: my_pass_at_k matches exact enumeration for n <= 8, is exact at n - c < k, stable at n = 1024, "
          "and rejects bad counts.")
    return fn
