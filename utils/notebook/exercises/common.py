"""What every lab's checks share: ExerciseError, the guard every check wears (learner_check) and the helpers that
compare a result with the reference."""
import functools
import os
import re
import sysconfig
import traceback

import torch


class ExerciseError(AssertionError):
    """A learner's function disagrees with the reference on a worked case."""


_LIBRARY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # utils/
_INSTALLED = tuple({os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _learner_frames(err):
    """The traceback entries of err that are the learner's code (a notebook cell, a test), not the library's, the
    standard library's or an installed package's."""
    return [f for f in traceback.extract_tb(err.__traceback__)
            if not os.path.realpath(f.filename).startswith((_LIBRARY + os.sep,) + _INSTALLED)]


def learner_check(takes, returns):
    """A check's guard: check(fn) with fn the learner's my_<name>, called as my_<name>(takes) and expected to return
    `returns`. A fn that is not a function, that cannot be called that way, that raises, or whose result the check
    cannot read fails with one ExerciseError saying what to fix, never a traceback from deep inside the check."""
    def wrap(check):
        name = "my_" + check.__name__.removeprefix("check_")

        @functools.wraps(check)
        def guarded(fn, *args, **kwargs):
            if not callable(fn):
                raise ExerciseError(f"{check.__name__} takes your function itself: {check.__name__}({name}), with "
                                    f"{name}{takes} -> {returns}; got {_short(repr(fn))}, which is not a function"
                                    + (" (did you call it? pass it without the parentheses)" if fn is not None else
                                       " (did the cell that defines it run, and does it end with a return?)"))
            try:
                return check(fn, *args, **kwargs)
            except ExerciseError:
                raise
            except Exception as e:  # noqa: BLE001 - the point: a learner's error becomes one clear message
                raise ExerciseError(_what_to_fix(name, takes, returns, e)) from None
        return guarded
    return wrap


def _what_to_fix(name, takes, returns, err):
    """The message for an error that escaped a check: raised in the learner's code, a call with the wrong arguments,
    or a result the check could not read."""
    said = f"{type(err).__name__}: {_short(str(err), 200)}"
    mine = _learner_frames(err)
    if isinstance(err, TypeError) and re.search(r"positional argument|keyword argument|takes \d+|required",
                                                 str(err)) and not mine[1:]:
        return (f"{name} could not be called as {name}{takes}: {said}. Give it exactly these arguments and return "
                f"{returns}.")
    if mine:
        where = mine[-1]
        line = f" (line {where.lineno} of {where.name}: {where.line.strip()!r})" if where.line else \
            f" (line {where.lineno} of {where.name})"
        return (f"{name} raised {said}{line}. Fix that error: the check calls {name}{takes} on small worked cases "
                f"and expects {returns}.")
    return f"{name} returned a result the check cannot read ({said}): it must return {returns}."


def _short(x, n=80):
    """repr(x) (a str as it is), cut to n characters."""
    try:
        r = x if isinstance(x, str) else repr(x)
    except Exception:  # noqa: BLE001 - an object whose repr fails
        r = f"<{type(x).__name__}>"
    return r if len(r) <= n else r[: n - 3] + "..."


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


def _calls_reference(fn, reference, *args):
    """True if fn(*args) runs the reference's own code, directly or through anything it calls."""
    import sys

    code, seen = getattr(reference, "__code__", None), []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code is code:
            seen.append(True)
    old = sys.getprofile()
    sys.setprofile(watch)
    try:
        fn(*args)
    except Exception:  # noqa: BLE001, S110 - only whether the reference ran matters here
        pass
    finally:
        sys.setprofile(old)
    return bool(seen)


def _said_if_reference(name, fn, reference, *args):
    """The course's policy: calling the library's reference passes the check (it is right), and the check says so,
    since the exercise is to write the rule yourself. Prints a NOTE when fn(*args) runs the reference."""
    if fn is not reference and _calls_reference(fn, reference, *args):
        print(f"NOTE: {name} calls the library's {reference.__module__}.{reference.__name__}. That passes (the "
              f"reference is right), but the exercise is to write the rule yourself.")


def _run(name, fn, reference, cases):
    """Run fn on each case, a (description, args tuple, expected value: a number, list or tensor), and compare
    with _compare. Returns fn if every case matches, the reference if fn is not written yet."""
    try:
        for desc, args, want in cases:
            _compare(name, desc, fn(*args), torch.as_tensor(want, dtype=torch.float32))
    except NotImplementedError:
        return _note(name, reference)
    _said_if_reference(name, fn, reference, *cases[0][1])
    print(f"OK: {name} matches the reference on {len(cases)} worked cases.")
    return fn


def _first_match(got, variants, want):
    """The first (name, message) in variants, {(name, message): value}, whose value got matches where want differs:
    a plausible mistake the learner's result is recognised as. None if there is none."""
    got = torch.as_tensor(got, dtype=torch.float32) if not torch.is_tensor(got) else got.detach().float()
    for key, value in variants.items():
        value = torch.as_tensor(value, dtype=torch.float32)
        if value.shape == got.shape == want.shape and torch.allclose(got, value, atol=1e-5, rtol=1e-4, equal_nan=True) \
                and not torch.allclose(want, value, atol=1e-5, rtol=1e-4, equal_nan=True):
            return key
    return None
