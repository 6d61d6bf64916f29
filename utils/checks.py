"""Argument checks where a public function's input enters: a bad value fails here, with the function's and
the argument's names and what to pass instead, not deep inside numpy or torch (tests/test_properties.py
tries random bad values on every public function that takes no model, tests/test_properties_models.py
on those that take one)."""
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


def strings(where, name, x):
    """x as a list of non-empty strings, after checking: a list, tuple or other sequence of them, not empty.
    One string alone is refused (it is not a list of one: list("12+34=") would be six prompts)."""
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{where}: {name} must be a list of strings (one per problem), not one string "
                         f"({_short(x)}): wrap a single one as [{_short(x)}]")
    if isinstance(x, (dict, set)) or not hasattr(x, "__len__") or not hasattr(x, "__iter__"):
        raise ValueError(f"{where}: {name} must be a non-empty list of strings, got {_short(x)}")
    x = list(x)
    if not x:
        raise ValueError(f"{where}: {name} is empty: it must hold at least one string")
    for i, s in enumerate(x):
        if not isinstance(s, str) or not s:
            raise ValueError(f"{where}: {name}[{i}]={_short(s)} must be a non-empty string")
    return x


def sequence(where, name, x, length=None, of="prompts"):
    """x as a list, after checking: a list, tuple, array or other sequence (one string, a dict or a set is
    not), of `length` entries when given: one per entry of the argument named `of` (e.g. one answer per prompt),
    which the message names beside `name`."""
    if isinstance(x, (str, bytes, dict, set)) or not hasattr(x, "__len__") or not hasattr(x, "__iter__"):
        raise ValueError(f"{where}: {name} must be a list (one entry per problem), got {_short(x)}")
    x = list(x)
    if length is not None and len(x) != length:
        raise ValueError(f"{where}: {name} has {len(x)} entries and {of} has {length}: {name} must have one per "
                         f"entry of {of}")
    return x


def path(where, name, p, kind=None):
    """p as a str, after checking: a non-empty str or os.PathLike (a pathlib.Path); ValueError naming it otherwise.
    kind "file" or "folder": it must also be one, else FileNotFoundError naming it."""
    import os

    if not isinstance(p, (str, os.PathLike)) or not os.fspath(p):
        raise ValueError(f"{where}: {name}={_short(p)} must be a path (a non-empty str or pathlib.Path)")
    p = os.fspath(p)
    p = str(p) if isinstance(p, str) else p  # numpy's str as a plain one (Python 3.11's os.listdir gives bytes for it)
    if (kind == "file" and not os.path.isfile(p)) or (kind == "folder" and not os.path.isdir(p)):
        raise FileNotFoundError(f"{where}: {name}={_short(p)} is not a {kind}")
    return p


def flag(where, name, x):
    """x after checking that it is True or False (1, "yes" or None in its place would be taken silently)."""
    if not isinstance(x, bool):
        raise ValueError(f"{where}: {name} must be True or False, got {_short(x)}")
    return x


def model(where, name, m):
    """m after checking that it is a torch model (torch.nn.Module): a tokenizer, a name or None in its place
    fails here, naming the argument (load_policy returns (model, tokenizer), in that order)."""
    import torch
    if not isinstance(m, torch.nn.Module):
        raise ValueError(f"{where}: {name} must be a torch model (load_policy returns (model, tokenizer)), "
                         f"got {_short(m)}")
    return m


def tokenizer(where, name, tok):
    """tok after checking that it is a tokenizer (it encodes when called and has decode and pad_token_id)."""
    import torch
    if isinstance(tok, torch.nn.Module) or not callable(tok) or not hasattr(tok, "decode") or \
            not hasattr(tok, "pad_token_id"):
        raise ValueError(f"{where}: {name} must be a tokenizer (load_policy returns (model, tokenizer)), "
                         f"got {_short(tok)}")
    return tok


def function(where, name, fn, none=False):
    """fn after checking that it can be called (or is None, with none=True)."""
    if not (callable(fn) or (none and fn is None)):
        raise ValueError(f"{where}: {name} must be a function{' or None' if none else ''}, got {_short(fn)}")
    return fn


def _short(x, n=60):
    """repr(x), cut to n characters (a megabyte of text stays out of an error message)."""
    try:
        r = repr(x)
    except Exception:  # noqa: BLE001 - an object whose repr fails
        r = f"<{type(x).__name__}>"
    return r if len(r) <= n else r[: n - 3] + "..."


def reward_scores(fn, role, texts, answers, columns):
    """fn(texts, answers, **columns), checked where it enters: one finite number per completion, or a ValueError
    naming the function (its role: reward_fn, correct_fn), the completion and what came back; a function that
    cannot take these arguments (a parameter named like a column gets it twice) fails the same way, before the call."""
    import inspect

    name = f"{role} {getattr(fn, '__name__', type(fn).__name__)!r}"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or other callable without one: it is just called
        signature = None
    if signature is not None:
        try:
            signature.bind(texts, answers, **columns)
        except TypeError as e:
            raise ValueError(f"{name} cannot be called as {role}(completions, answer, **columns) with the columns "
                             f"{sorted(columns)}: {e}. Take **kwargs for the columns, and name no parameter like "
                             f"one of them") from None
    out = fn(texts, answers, **columns)
    if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or len(out) != len(texts):
        raise ValueError(f"{name} must return one number per completion: got {len(texts)} completions and "
                         f"{len(out) if hasattr(out, '__len__') else type(out).__name__} back")
    for i, v in enumerate(out.tolist() if hasattr(out, "tolist") else out):
        if not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"{name} returned {v!r} for completion {i} ({texts[i][:60]!r}, answer {answers[i]!r}): "
                             f"every score must be a finite number (a verifier never raises or returns None)")
    return out


def function_dict(where, name, d):
    """d as a dict {label: function} or None (eval_rewards), each value checked by function(); ValueError names it."""
    if d is not None and not isinstance(d, dict):
        raise ValueError(f"{where}: {name} must be a dict {{name: reward_fn}} or None, got {_short(d)}")
    for label, fn in (d or {}).items():
        function(where, f"{name}[{label!r}]", fn)
    return d
