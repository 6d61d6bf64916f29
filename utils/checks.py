"""Argument checks where a public function's input enters: a bad value fails here, with the function's and
the argument's names and what to pass instead, not deep inside numpy or torch (tests/test_properties.py
tries random bad values on every public function that takes no model)."""
import math
import numbers


def number(where, name, x, lo=None, hi=None, integer=False, lo_open=False, hi_open=False):
    """x as a Python int (integer=True: an int or a numpy integer, not 3.0) or float, after checking: a real
    number (numpy scalars count, bools do not), finite, and within [lo, hi] (open at an end with lo_open /
    hi_open). ValueError naming `where` and `name` otherwise."""
    kind = "an integer" if integer else "a finite number"
    bounds = ""
    if lo is not None or hi is not None:
        bounds = " " + " and ".join(b for b in (
            f"{'>' if lo_open else '>='} {lo}" if lo is not None else "",
            f"{'<' if hi_open else '<='} {hi}" if hi is not None else "") if b)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):  # numpy's bool is not a Real either
        raise ValueError(f"{where}: {name}={_short(x)} must be {kind}{bounds}")
    if integer and not isinstance(x, numbers.Integral):  # 3.0 is not an integer argument (numpy's int64 is)
        raise ValueError(f"{where}: {name}={_short(x)} must be {kind}{bounds}")
    given, x = x, int(x) if integer else float(x)
    if (not integer and not math.isfinite(x)) or (lo is not None and (x < lo or (lo_open and x == lo))) or \
            (hi is not None and (x > hi or (hi_open and x == hi))):
        raise ValueError(f"{where}: {name}={_short(given)} must be {kind}{bounds}")
    return x


def tensor(where, name, x, dims=None, finite=True):
    """x as a tensor after checking its number of dimensions (dims: an int or a tuple of allowed ones) and,
    with finite=True, that no value is NaN or inf. A tensor is returned as it is (its dtype kept: checking
    changes no number); an array or a list of real numbers becomes a float32 tensor."""
    import numpy as np  # here, not at the top: the module serves the stdlib-only task helpers too
    import torch
    if isinstance(x, (str, bytes, bool)) or x is None or isinstance(x, (dict, set)):
        raise ValueError(f"{where}: {name} must be a tensor (or a list of numbers), got {_short(x)}")
    try:
        t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x, dtype=np.float32))
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{where}: {name} must be a tensor (or a list of numbers), got {_short(x)}") from None
    allowed = (dims,) if isinstance(dims, int) else dims
    if allowed is not None and t.dim() not in allowed:
        raise ValueError(f"{where}: {name} must have {' or '.join(map(str, allowed))} dimension(s), "
                         f"got shape {tuple(t.shape)}")
    if finite and not torch.isfinite(t).all():
        raise ValueError(f"{where}: {name} holds NaN or inf: every value must be finite")
    return t


def array(where, name, x, dims=None, finite=True):
    """x as a float64 numpy array (from a tensor, array or list of real numbers), checked as tensor() does."""
    import numpy as np

    if isinstance(x, (str, bytes, bool)) or x is None or isinstance(x, (dict, set)):
        raise ValueError(f"{where}: {name} must be a list or array of numbers, got {_short(x)}")
    try:
        a = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} must be a list or array of numbers, got {_short(x)}") from None
    allowed = (dims,) if isinstance(dims, int) else dims
    if allowed is not None and a.ndim not in allowed:
        raise ValueError(f"{where}: {name} must have {' or '.join(map(str, allowed))} dimension(s), "
                         f"got shape {a.shape}")
    if finite and not np.isfinite(a).all():
        raise ValueError(f"{where}: {name} holds NaN or inf: every value must be finite")
    return a


def same_shape(where, **tensors):
    """ValueError unless every tensor has the same shape, naming each with its shape."""
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"{where}: " + ", ".join(f"{k} {s}" for k, s in shapes.items()) + " must have one shape")


def _short(x, n=60):
    """repr(x), cut to n characters (a megabyte of text stays out of an error message)."""
    try:
        r = repr(x)
    except Exception:  # noqa: BLE001 - an object whose repr fails
        r = f"<{type(x).__name__}>"
    return r if len(r) <= n else r[: n - 3] + "..."
