"""Lab 07's checks (data and compute): the sweet spot, dynamic sampling's refill, the best asymptote."""
import torch

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _same,
    _worked_then_generated,
    learner_check,
)

SWEET_CASES = [  # (rates, lo, hi, the indices in the band, what the case tests)
    ([0.0, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0], 0.3, 0.7, [2, 3, 4], "both ends of the band are inside"),
    ([0.6, 0.1, 0.9, 0.5], 0.3, 0.7, [0, 3], "indices in the split's order, not sorted by rate"),
    ([1.0, 0.0, 1.0], 0.3, 0.7, ValueError, "nothing in the band: a ValueError saying what to do, not []"),
    ([0.5, 0.6], 0.7, 0.3, ValueError, "lo above hi: a ValueError, not []"),
    ([0.0, 0.0625, 1.0], 0.0, 0.0625, [0, 1], "a band that starts at 0"),
    ([0.2, 0.4, 0.8], 0.1, 0.9, [0, 1, 2], "another band: lo and hi are used, not 0.3 and 0.7"),
]


@learner_check("(rates, lo, hi)", "the indices of the prompts inside the band, a list of ints")
def check_sweet_spot(fn):
    """Check fn(rates, lo, hi) -> the indices of the prompts whose pass rate r has lo <= r <= hi, in order, on
    SWEET_CASES; like curation.sweet_spot it raises a ValueError when the band is empty or upside down (a filter
    that keeps nothing would train on nothing). Returns the function to use."""
    import numpy as np

    from utils.tasks.curation import sweet_spot
    try:
        fn(np.array([0.5]), 0.3, 0.7)
    except NotImplementedError:
        return _note("my_sweet_spot", sweet_spot)
    generated = _sweet_cases(_generator("check_sweet_spot"))
    _worked_then_generated(lambda: _worked_sweet(fn), lambda: _agree(
        "my_sweet_spot", _indices(fn), _indices(sweet_spot), generated,
        lambda rates, lo, hi: f"my_sweet_spot(rates={rates.tolist()}, lo={lo}, hi={hi})",
        "the indices i with lo <= rates[i] <= hi (both ends inside), in the split's order; ValueError when lo > hi "
        "or when no rate lies in the band."))
    _said_if_reference("my_sweet_spot", fn, sweet_spot, np.array(SWEET_CASES[0][0]), 0.3, 0.7)
    print(f"OK: my_sweet_spot matches on {len(SWEET_CASES)} worked cases and {len(generated)} generated ones.")
    return fn


def _indices(f):
    """f's result as a plain list (ints stay ints, a True/False mask stays bools, so it cannot pass for indices)."""
    import numpy as np

    def run(*args):
        out = np.asarray(f(*args))
        return [int(i) for i in out.tolist()] if out.dtype.kind in "iu" else out.tolist()
    return run


def _sweet_cases(rng, n=50):
    """Generated (rates, lo, hi), shortest first: 1-8 rates in eighths (exact in binary), bands in eighths with rates
    exactly on lo and hi, now and then an empty band or lo above hi (a ValueError)."""
    import numpy as np

    out = []
    for _ in range(n):
        rates = np.array([rng.randint(0, 8) / 8 for _ in range(rng.randint(1, 8))])
        lo, hi = sorted((rng.randint(0, 8) / 8, rng.randint(0, 8) / 8))
        if rng.random() < 0.1 and lo < hi:
            lo, hi = hi, lo
        out.append((rates, lo, hi))
    return sorted(out, key=lambda c: len(c[0]))


def _worked_sweet(fn):
    """SWEET_CASES, each with its message."""
    import numpy as np

    for rates, lo, hi, want, what in SWEET_CASES:
        if want is ValueError:
            try:
                got = fn(np.array(rates), lo, hi)
            except ValueError:
                continue
            raise ExerciseError(f"my_sweet_spot on {what}: rates {rates}, band [{lo}, {hi}]\n  expected a "
                                f"ValueError\n  got      {np.asarray(got).tolist()}\nRule: raise ValueError(...) "
                                f"with what to change when lo > hi or no prompt lies in the band.")
        got = fn(np.array(rates), lo, hi)
        got = np.asarray(got)
        if got.dtype == bool:
            raise ExerciseError(f"my_sweet_spot({rates}, {lo}, {hi}) returned a True/False mask {got.tolist()}; "
                                f"return the indices where it is True (np.flatnonzero(mask))")
        if got.tolist() != want:
            raise ExerciseError(f"my_sweet_spot on {what}: rates {rates}, band [{lo}, {hi}]\n  expected indices "
                                f"{want}\n  got      {got.tolist()}\nRule: the indices i with lo <= rates[i] <= hi.")


FILL_CASES = [  # (rounds of rewards, G, n_groups, expected (kept, rounds used), what the case tests)
    ([[1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 0, 1]], 2, 3, ([(0, 1), (1, 0), (1, 2)], 2),
     "all-1 and all-0 groups are dropped; a second round fills the batch"),
    ([[0, 1, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]], 2, 3, ([(0, 0), (0, 1), (0, 2)], 1),
     "a full first round needs no second one"),
    ([[0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 1]], 2, 3, ([(0, 0), (0, 2), (1, 0)], 2),
     "stop as soon as the batch is full: the second round's later groups are not kept"),
    ([[1, 1, 1, 1], [0, 0, 0, 0]], 2, 2, ([], 2), "nothing informative: nothing kept, every round used"),
    ([[0.5, 0.5, 0.2, 0.7, 1, 1]], 2, 3, ([(0, 1)], 1), "rewards need not be 0/1: alike means equal"),
    ([[0, 0, 1, 0, 1, 1, 1, 1]], 4, 2, ([(0, 0)], 1), "groups of 4: one right of four is informative"),
]


@learner_check("(round_rewards, G, n_groups)", "(kept, rounds_used), kept a list of (round, group) pairs")
def check_fill_batch(fn):
    """Check fn(round_rewards, G, n_groups) -> (kept (round, group) pairs, rounds used), dynamic sampling's
    refill (rollout.fill_batch), on FILL_CASES. Returns the function to use."""
    from utils.rl.rollout import fill_batch
    try:
        fn([torch.tensor([0.0, 1.0])], 2, 1)
    except NotImplementedError:
        return _note("my_fill_batch", fill_batch)
    generated = _fill_cases(_generator("check_fill_batch"))
    _worked_then_generated(lambda: _worked_fill(fn), lambda: _agree(
        "my_fill_batch", _pairs(fn), _pairs(fill_batch), generated,
        lambda rr, G, n: f"my_fill_batch(round_rewards={[r.tolist() for r in rr]}, G={G}, n_groups={n})",
        "walk the rounds in order and each round's groups (G consecutive rewards) in order, keep each group whose "
        "rewards are not all equal (any values, not only 0 and 1), stop as soon as n_groups are kept; rounds_used "
        "is the rounds looked at (all of them when the batch is not full)."))
    _said_if_reference("my_fill_batch", fn, fill_batch, [torch.tensor(r, dtype=torch.float32)
                                                         for r in FILL_CASES[0][0]], 2, 3)
    print(f"OK: my_fill_batch matches dynamic sampling's refill on {len(FILL_CASES)} worked cases and "
          f"{len(generated)} generated ones.")
    return fn


def _pairs(f):
    """f's (kept, rounds_used) with kept as a list of (round, group) int pairs."""
    def run(*args):
        kept, used = f(*args)
        return [tuple(int(x) for x in pair) for pair in kept], used
    return run


def _fill_cases(rng, n=40):
    """Generated (round_rewards, G, n_groups), fewest rewards first: 1-4 rounds of 1-3 groups of 1-4, rewards 0/1 or
    other values (0.5, 0.7, equal non-0/1 values), batches filled in the first round, in a later one or never."""
    out = []
    for _ in range(n):
        G, groups = rng.randint(1, 4), rng.randint(1, 3)
        pool = rng.choice([[0.0, 1.0], [0.0, 1.0], [0.0, 0.5, 1.0], [0.2, 0.7]])
        rounds = [torch.tensor([rng.choice(pool) for _ in range(G * groups)]) for _ in range(rng.randint(1, 4))]
        out.append((rounds, G, rng.randint(1, 5)))
    return sorted(out, key=lambda c: sum(len(r) for r in c[0]))


def _worked_fill(fn):
    """FILL_CASES, each with its message."""
    for rounds, G, n, (want_kept, want_used), what in FILL_CASES:
        got = fn([torch.tensor(r, dtype=torch.float32) for r in rounds], G, n)
        try:
            kept, used = got
            kept = [tuple(int(x) for x in pair) for pair in kept]
        except (TypeError, ValueError):
            raise ExerciseError(f"my_fill_batch must return (kept, rounds_used) with kept a list of (round, group) "
                                f"pairs; got {got!r:.120}") from None
        if kept != want_kept or used != want_used:
            raise ExerciseError(f"my_fill_batch on {what}: rounds {rounds}, G={G}, n_groups={n}\n"
                                f"  expected kept {want_kept}, rounds used {want_used}\n"
                                f"  got      kept {kept}, rounds used {used}\nRule: walk the rounds in order, "
                                f"keep each group whose rewards are not all equal, stop once n_groups are kept.")


FIT_CASES = [  # (C, R, R0, C_mid, B, what the case tests): the expected A is best_asymptote's
    ([100.0, 1000.0, 10000.0], [0.3, 0.45, 0.6], 0.2, 1000.0, 1.0, "points near a curve of slope 1"),
    ([64.0, 640.0, 6400.0], [0.4, 0.4, 0.4], 0.4, 640.0, 2.0, "no gain at all: A = R0"),
    ([50.0, 200.0, 800.0, 3200.0], [0.35, 0.5, 0.55, 0.7], 0.3, 400.0, 0.5, "a shallow slope, R0 = 0.3"),
    ([10.0, 20.0], [0.9, 0.1], 0.5, 15.0, 3.0, "a fall below R0: A may be below R0"),
    ([100.0, 1000.0], [0.5, 0.9], 0.2, 10000.0, 1.0,
     "a steep rise far below C_mid: A above 1 (least squares knows no ceiling; do not clip it)"),
]


@learner_check("(C, R, R0, C_mid, B)", "the asymptote A, one number")
def check_best_asymptote(fn):
    """Check fn(C, R, R0, C_mid, B) -> the least-squares asymptote A of the sigmoid at fixed C_mid and B
    (scaling.best_asymptote) on FIT_CASES. Returns the function to use."""
    import numpy as np

    from utils.eval.scaling import best_asymptote
    try:
        fn(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]), 0.0, 2.0, 1.0)
    except NotImplementedError:
        return _note("my_best_asymptote", best_asymptote)
    generated = _fit_cases(_generator("check_best_asymptote"))
    _worked_then_generated(lambda: _worked_fit(fn), lambda: _agree(
        "my_best_asymptote", fn, best_asymptote, generated,
        lambda C, R, R0, C_mid, B: f"my_best_asymptote(C={C.tolist()}, R={R.tolist()}, R0={R0}, C_mid={C_mid}, B={B})",
        "with s = 1 / (1 + (C_mid / C) ** B) the curve is R0 + (A - R0) * s, a line in A - R0 through the origin: "
        "A - R0 = sum(s * (R - R0)) / sum(s * s). Return one number; do not clip it.",
        same=lambda got, want: _same(got, want, atol=1e-6, rtol=1e-6)))
    C, R, R0, C_mid, B, _ = FIT_CASES[0]
    _said_if_reference("my_best_asymptote", fn, best_asymptote, np.array(C), np.array(R), R0, C_mid, B)
    print(f"OK: my_best_asymptote matches the least-squares asymptote on {len(FIT_CASES)} worked cases and "
          f"{len(generated)} generated ones.")
    return fn


def _fit_cases(rng, n=40):
    """Generated (C, R, R0, C_mid, B), fewest points first: 2-6 computes from 10 to 10^4 (in any order), accuracies in
    [0, 1], R0 up to 0.5, C_mid anywhere in that range and beyond, slopes 0.5 to 3."""
    import numpy as np

    out = []
    for _ in range(n):
        k = rng.randint(2, 6)
        C = np.array([round(10 ** rng.uniform(1, 4), 1) for _ in range(k)])
        R = np.array([round(rng.uniform(0, 1), 3) for _ in range(k)])
        out.append((C, R, round(rng.uniform(0, 0.5), 3), round(10 ** rng.uniform(0.5, 4.5), 1),
                    rng.choice([0.5, 1.0, 2.0, 3.0])))
    return sorted(out, key=lambda c: len(c[0]))


def _worked_fit(fn):
    """FIT_CASES, each with its message."""
    import numpy as np

    from utils.eval.scaling import best_asymptote, sigmoid

    for C, R, R0, C_mid, B, what in FIT_CASES:
        want = best_asymptote(C, R, R0, C_mid, B)
        got = fn(np.array(C), np.array(R), R0, C_mid, B)
        try:
            float(got)
        except (TypeError, ValueError):
            raise ExerciseError(f"my_best_asymptote on {what} returned {got!r:.80}; return one number, the "
                                f"asymptote A") from None
        if not np.isfinite(float(got)) or abs(float(got) - want) > 1e-6:
            err = lambda A: float(np.sum((sigmoid(C, A, C_mid, B, R0) - np.array(R)) ** 2))  # noqa: E731
            extra = "" if not np.isfinite(float(got)) else (
                f" (squared error {err(float(got)):.5f} vs {err(want):.5f} at the best A)")
            raise ExerciseError(f"my_best_asymptote on {what}: C={C}, R={R}, R0={R0}, C_mid={C_mid}, B={B}\n"
                                f"  expected A = {want:.6f}\n  got        {got!r}{extra}\nHint: with "
                                f"s = 1 / (1 + (C_mid / C) ** B) the curve is R0 + (A - R0) * s, a line in A - R0 "
                                f"through the origin: A - R0 = sum(s * (R - R0)) / sum(s * s).")
