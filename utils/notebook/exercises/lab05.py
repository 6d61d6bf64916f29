"""Lab 05's check (pass@k): the unbiased pass@k estimator."""
from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _is_number,
    _note,
    _worked_then_generated,
    learner_check,
)


@learner_check("(n, c, k)", "pass@k, a number in [0, 1]")
def check_pass_at_k(fn):
    """Check fn(n, c, k) -> unbiased pass@k: equal to exact enumeration over all k-subsets for n <= 8,
    exactly 1.0 when n - c < k, finite and in [0, 1] for n = 1024, ValueError for k > n, negative
    counts and c > n. Returns the function to use."""
    from utils.eval.metrics import pass_at_k

    try:
        fn(4, 1, 2)
    except NotImplementedError:
        return _note("my_pass_at_k", pass_at_k)
    generated = _pass_cases(_generator("check_pass_at_k"))
    _worked_then_generated(lambda: _worked_pass(fn), lambda: _agree(
        "my_pass_at_k", fn, pass_at_k, generated, lambda n, c, k: f"my_pass_at_k(n={n}, c={c}, k={k})",
        "1 - C(n-c, k) / C(n, k) = 1 - prod over i from n-c+1 to n of (1 - k/i) as a float, exactly 1.0 when "
        "n - c < k, ValueError when k is not in 1..n or c not in 0..n.",
        same=lambda got, want: _is_number(got) and abs(float(got) - want) <= 1e-9))
    print(f"OK: my_pass_at_k matches exact enumeration for n <= 8, is exact at n - c < k, stable at n = 1024, "
          f"rejects bad counts, and matches the reference on {len(generated)} generated (n, c, k).")
    return fn


def _pass_cases(rng, n=60):
    """Generated (n, c, k), smallest n first: n from 1 to 3000, c from 0 to n, k from 1 to n (n - c < k among them, and
    binomials too large for a float64 among the rest), and now and then a count out of range (k = 0, k > n, c > n,
    c < 0: a ValueError)."""
    import math

    out = []
    for _ in range(n):
        size = int(math.exp(rng.uniform(0, math.log(3000))))
        c, k = rng.randint(0, size), rng.randint(1, size)
        if rng.random() < 0.3:                   # binomials past float64's range: C(n, k) > 1.8e308 from n ~ 1030
            size = rng.randint(1100, 3000)
            k = size // 2 + rng.randint(-50, 50)
            c = rng.randint(0, size - k)
        bad = rng.random()
        if bad < 0.04:
            k = 0
        elif bad < 0.08:
            k = size + rng.randint(1, 3)
        elif bad < 0.12:
            c = size + 1
        elif bad < 0.15:
            c = -1
        out.append((size, c, k))
    return sorted(out)


def _worked_pass(fn):
    """Exact enumeration for n <= 8, n = 1024, the exact 1.0 and the bad counts, each with its message."""
    import itertools
    import math

    from utils.eval.metrics import pass_at_k

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
