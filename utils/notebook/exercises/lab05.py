"""Lab 05's check (pass@k): the unbiased pass@k estimator."""
from utils.notebook.exercises.common import ExerciseError, _note, learner_check


@learner_check("(n, c, k)", "pass@k, a number in [0, 1]")
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
