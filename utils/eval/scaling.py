"""How held-out accuracy grows with RL compute (Lab 07): the saturating curve of ScaleRL (arXiv 2510.13786),

    R(C) = R0 + (A - R0) / (1 + (C_mid / C) ** B)

with C the compute (here: completions sampled), R0 the accuracy before training, A the asymptote, C_mid the
compute at which half of the gain A - R0 is reached, and B the slope (how sharply it rises in log compute).
fit_sigmoid fits A, C_mid and B to measured points with R0 given; no optimiser library is needed: for each
(C_mid, B) on a grid the best A is a closed-form least-squares solution, and the grid is refined around the
best cell.
"""
import numpy as np

from utils import checks


def sigmoid(C, A, C_mid, B, R0):
    """R(C) for compute C >= 0 (an array or a number); R(0) = R0. C_mid and B > 0."""
    C = _compute("sigmoid", "C", C, dims=(0, 1))
    A, R0 = (checks.number("sigmoid", n, v) for n, v in (("A", A), ("R0", R0)))
    C_mid, B = (checks.number("sigmoid", n, v, lo=0, lo_open=True) for n, v in (("C_mid", C_mid), ("B", B)))
    return _sigmoid(C, A, C_mid, B, R0)


def _compute(where, name, C, dims, positive=False):
    """C as a float array after checking: finite compute (completions sampled), >= 0 (> 0 with positive=True)."""
    C = checks.array(where, name, C, dims=dims)
    if (C <= 0).any() if positive else (C < 0).any():
        raise ValueError(f"{where}: {name} must hold compute {'> 0' if positive else '>= 0'} (completions sampled)")
    return C


def _sigmoid(C, A, C_mid, B, R0):
    """sigmoid without the checks, for fit_sigmoid's grid (thousands of calls on arguments it has checked)."""
    C = np.asarray(C, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        s = np.where(C > 0, 1.0 / (1.0 + (C_mid / np.maximum(C, 1e-300)) ** B), 0.0)
    return R0 + (A - R0) * s


def best_asymptote(C, R, R0, C_mid, B):
    """For fixed C_mid and B, the A that minimises sum (sigmoid(C, A, C_mid, B, R0) - R)^2: the curve is
    R0 + (A - R0) * s with s = 1 / (1 + (C_mid / C) ** B), linear in A - R0, so A - R0 = s.(R - R0) / s.s.
    None when every s is 0. C [n] >= 0 and R [n]; C_mid and B > 0."""
    C = _compute("best_asymptote", "C", C, dims=1)
    R = checks.array("best_asymptote", "R", R, dims=1)
    if R.shape != C.shape:
        raise ValueError(f"best_asymptote: C has {len(C)} points and R {len(R)}: one accuracy per compute")
    R0 = checks.number("best_asymptote", "R0", R0)
    C_mid, B = (checks.number("best_asymptote", n, v, lo=0, lo_open=True) for n, v in (("C_mid", C_mid), ("B", B)))
    return _best_asymptote(C, R, R0, C_mid, B)


def _best_asymptote(C, R, R0, C_mid, B):
    """best_asymptote without the checks, for fit_sigmoid's grid."""
    C, R = np.asarray(C, dtype=float), np.asarray(R, dtype=float)
    s = 1.0 / (1.0 + (C_mid / C) ** B)               # [n]
    if s @ s == 0:
        return None
    return float(R0 + s @ (R - R0) / (s @ s))


def fit_sigmoid(C, R, R0, B_range=(0.3, 4.0), grid=60, rounds=3, best_A=best_asymptote):
    """Least-squares fit of A, C_mid, B to points (C [n] > 0, R [n]) with R0 fixed. Returns dict(A, C_mid, B,
    R0, rmse). C_mid is searched over [min(C) / 10, max(C) * 10] in log space, B over B_range; A is not bounded
    (an asymptote above 1 says the points do not pin it down). ValueError for fewer than 3 points (three
    parameters), unequal lengths, non-positive compute or non-finite values. best_A(C, R, R0, C_mid, B) gives A for
    a grid cell (best_asymptote; Lab 07's exercise plugs in here)."""
    C = checks.array("fit_sigmoid", "C", C, dims=1)
    R = checks.array("fit_sigmoid", "R", R, dims=1)
    R0 = checks.number("fit_sigmoid", "R0", R0)
    grid = checks.number("fit_sigmoid", "grid", grid, lo=2, hi=1000, integer=True)
    rounds = checks.number("fit_sigmoid", "rounds", rounds, lo=1, hi=20, integer=True)
    if not (isinstance(B_range, (list, tuple)) and len(B_range) == 2):
        raise ValueError(f"fit_sigmoid: B_range={checks._short(B_range)} must be (low, high)")
    B_range = tuple(checks.number("fit_sigmoid", "B_range", b, lo=0, lo_open=True) for b in B_range)
    if C.shape != R.shape or C.ndim != 1:
        raise ValueError(f"fit_sigmoid: C and R must be 1-D and of one length (got {C.shape} and {R.shape})")
    if C.size < 3:
        raise ValueError(f"fit_sigmoid: {C.size} points cannot fit 3 parameters (A, C_mid, B); give at least 3")
    if not (np.isfinite(C).all() and np.isfinite(R).all() and np.isfinite(R0)) or (C <= 0).any():
        raise ValueError("fit_sigmoid: compute must be finite and > 0, and accuracies finite")
    lo_m, hi_m = np.log(C.min() / 10), np.log(C.max() * 10)
    lo_b, hi_b = B_range
    checks.function("fit_sigmoid", "best_A", best_A)
    best_A = _best_asymptote if best_A is best_asymptote else best_A   # the same numbers, without the checks
    best = None
    for _ in range(rounds):
        for log_m in np.linspace(lo_m, hi_m, grid):
            for B in np.linspace(lo_b, hi_b, grid):
                A = best_A(C, R, R0, np.exp(log_m), B)
                if A is None:
                    continue
                err = float(np.mean((_sigmoid(C, A, np.exp(log_m), B, R0) - R) ** 2))
                if best is None or err < best[0]:
                    best = (err, A, log_m, B)
        dm, db = (hi_m - lo_m) / grid * 2, (hi_b - lo_b) / grid * 2
        lo_m, hi_m = best[2] - dm, best[2] + dm
        lo_b, hi_b = max(1e-3, best[3] - db), best[3] + db
    err, A, log_m, B = best
    return {"A": float(A), "C_mid": float(np.exp(log_m)), "B": float(B), "R0": float(R0), "rmse": float(np.sqrt(err))}


def predict(fit, C):
    """The fitted curve at compute C (fit: fit_sigmoid's dict)."""
    if not isinstance(fit, dict) or any(k not in fit for k in ("A", "C_mid", "B", "R0")):
        raise ValueError(f"predict: fit must be fit_sigmoid's dict with A, C_mid, B and R0, got {checks._short(fit)}")
    for k in ("A", "C_mid", "B", "R0"):
        checks.number("predict", f"fit[{k!r}]", fit[k], lo=0 if k in ("C_mid", "B") else None,
                      lo_open=k in ("C_mid", "B"))
    return sigmoid(C, fit["A"], fit["C_mid"], fit["B"], fit["R0"])


def forecasts(C, R, R0, best_A=best_asymptote):
    """Fit on the first half of a run (C <= max(C) / 2) and forecast the rest, three ways: ScaleRL's sigmoid, a
    straight line in log C (least squares), and 'nothing changes' (the first half's last point). A fitted curve
    earns its parameters only by beating the simple forecasts. Returns {name: {"pred": [m], "err": [m] (forecast -
    measured), "rmse": float}} for the m points of the second half, and "sigmoid_fit" (the first half's fit)."""
    C = _compute("forecasts", "C", C, dims=1, positive=True)           # [n]
    R = checks.array("forecasts", "R", R, dims=1)                   # [n]
    if R.shape != C.shape:
        raise ValueError(f"forecasts: C has {len(C)} points and R {len(R)}: one accuracy per compute")
    checks.number("forecasts", "R0", R0)
    checks.function("forecasts", "best_A", best_A)
    first = C <= C.max() / 2
    if first.sum() < 3 or (~first).sum() < 1:
        raise ValueError(f"forecasts: need 3 points in the first half of the compute range and 1 after it; got "
                         f"{int(first.sum())} and {int((~first).sum())}")
    fit = fit_sigmoid(C[first], R[first], R0, best_A=best_A)
    slope, icpt = np.polyfit(np.log(C[first]), R[first], 1)
    preds = {"sigmoid": predict(fit, C[~first]), "line in log C": icpt + slope * np.log(C[~first]),
             "nothing changes": np.full((~first).sum(), R[first][-1])}
    out = {}
    for name, pred in preds.items():
        err = pred - R[~first]
        out[name] = {"pred": pred, "err": err, "rmse": float(np.sqrt(np.mean(err ** 2)))}
    out["sigmoid_fit"] = fit
    return out
