"""What every lab's checks share: ExerciseError, the guard every check wears (learner_check) and the helpers that
compare a result with the reference."""
import functools
import os
import re
import sysconfig
import traceback
import warnings

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
    """An unwritten exercise (its stub raised NotImplementedError): a visible NOTE, and the reference to run on with;
    in graded mode (RLVR_LABS_GRADED=1) a failed exercise instead, so an autograder never scores the reference."""
    if graded():
        raise ExerciseError(f"{name} is not written yet: it still raises NotImplementedError. Graded mode "
                            f"({GRADED_ENV}=1) counts an unwritten exercise as failed instead of running on with the "
                            f"reference. Write it between the markers and re-run its cell.") from None
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


# ------------------------------------------------------------------------------------------------ graded mode
GRADED_ENV = "RLVR_LABS_GRADED"    # "1": an unwritten exercise fails (a course's autograder), no reference fallback
STUDENT_ENV = "RLVR_LABS_STUDENT"  # a student's id: seeds each check's generated cases, so each student gets their own


def graded():
    """True when the environment variable RLVR_LABS_GRADED is set to anything but "" or "0" (tools/grade.py sets it)."""
    return os.environ.get(GRADED_ENV, "").strip() not in ("", "0")


def student():
    """The student id in RLVR_LABS_STUDENT, or "" when unset (a learner on their own: everyone gets the same cases)."""
    return os.environ.get(STUDENT_ENV, "").strip()


def _generator(check):
    """A random.Random for check's generated cases, seeded from the student id and the check's name: the same cases
    on every run for one student, other cases for another (so no shared answer key of cases exists)."""
    import hashlib
    import random

    digest = hashlib.sha256(f"{student()}\0{check}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _worked_then_generated(worked, generated):
    """Run a check's two parts: the worked cases first (they explain), then the generated ones; with a student id
    set, the generated (per-student) cases first, so that a failure shows a case of that student's own."""
    for part in ((generated, worked) if student() else (worked, generated)):
        part()


def _same(got, want, atol=1e-5, rtol=1e-4):
    """Whether a learner's result equals the reference's: tensors and numbers to a tolerance (nan equals nan),
    lists, tuples, sets and dicts element by element, anything else by ==. A bool is not a number here."""
    if torch.is_tensor(want):
        if not torch.is_tensor(got):
            try:
                with warnings.catch_warnings():   # a list of tensors that need grad: converted, and told apart below
                    warnings.simplefilter("ignore")
                    got = torch.as_tensor(got)
            except Exception:  # noqa: BLE001 - not convertible: not the same
                return False
        got, want = got.detach().double(), want.detach().double()
        return got.shape == want.shape and bool(torch.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True))
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)):
        if not _is_number(got):
            return False
        g, w = float(got), float(want)
        return (g != g and w != w) or g == w or abs(g - w) <= atol + rtol * abs(w)
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(
            _same(g, w, atol, rtol) for g, w in zip(got, want))
    if isinstance(want, (set, frozenset)):
        return isinstance(got, (set, frozenset, list, tuple)) and set(got) == want
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(_same(got[k], want[k], atol, rtol) for k in want)
    return got == want


def _is_number(x):
    """A real number: an int or float (a bool is not one), a numpy number or a one-element tensor that is not bool."""
    import numbers

    if torch.is_tensor(x):
        return x.numel() == 1 and x.dtype != torch.bool
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and type(x).__name__ != "bool_"


def _show(x, n=300):
    """A value as a learner reads it: tensors and floats rounded to 4 places, lists as lists, cut to n characters."""
    def r(v):
        if torch.is_tensor(v):
            return r(v.detach().tolist())
        if isinstance(v, float):
            return round(v, 4)
        if isinstance(v, (list, tuple)):
            return type(v)(r(e) for e in v)
        return v
    return _short(r(x), n)


def _copy(args):
    """A fresh copy of a case's arguments, so neither the reference nor the learner's function sees the other's
    changes (tensors cloned, lists and dicts copied)."""
    import copy

    return copy.deepcopy(args)


def _agree(name, fn, reference, cases, describe, hint, same=_same, show=_show, raises=(ValueError,)):
    """Compare fn with the reference on generated cases, args tuples (small first). The first disagreement raises
    ExerciseError showing that case in describe(args)'s words, both results and the hint. Where the reference raises
    one of `raises` (a bad input it refuses), fn must raise it too. hint: a string, or hint(args, got, want) -> str."""
    for i, args in enumerate(cases):
        try:
            want, want_err = reference(*_copy(args)), None
        except raises as e:
            want, want_err = None, e
        try:
            got, got_err = fn(*_copy(args)), None
        except Exception as e:  # noqa: BLE001 - the learner's error is part of the verdict
            got, got_err = None, e
        if want_err is not None and isinstance(got_err, type(want_err)):
            continue
        if want_err is None and got_err is None and same(got, want):
            continue
        expected = (f"a {type(want_err).__name__} ({_short(str(want_err), 120)})" if want_err is not None
                    else show(want))
        if got_err is not None:
            mine = _learner_frames(got_err)
            where = f" (line {mine[-1].lineno} of {mine[-1].name})" if mine else ""
            obtained = f"it raised {type(got_err).__name__}: {_short(str(got_err), 160)}{where}"
        else:
            obtained = show(got)
        text = hint(args, got, want) if callable(hint) else hint
        raise ExerciseError(f"{name} disagrees with the reference on generated case {i + 1} of {len(cases)}: "
                            f"{describe(*args)}\n  expected {expected}\n  got      {obtained}"
                            + (f"\nHint: {text}" if text else ""))
    return len(cases)


def _graded_verdict(check, fn):
    """Run check(fn) in graded mode with its printout captured: (True, what it printed) when fn passes, (False, the
    check's message) when it does not. What an autograder records for one exercise (tools/grade.py)."""
    import contextlib
    import io

    before = os.environ.get(GRADED_ENV)
    os.environ[GRADED_ENV] = "1"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            check(fn)
        return True, out.getvalue().strip()
    except ExerciseError as e:
        return False, str(e)
    except Exception as e:  # noqa: BLE001 - a check that breaks on a submission is a failed exercise, said so
        return False, f"the check stopped on {type(e).__name__}: {_short(str(e), 300)}"
    finally:
        if before is None:
            os.environ.pop(GRADED_ENV, None)
        else:
            os.environ[GRADED_ENV] = before


def _passes(name, namespace):
    """True if namespace's my_<name> passes check_<name> in graded mode; else prints the check's message and returns
    False. The one call of an otter-grader test (tools/grade.py otter)."""
    from utils.notebook import exercises

    fn = namespace.get("my_" + name)
    if fn is None:
        print(f"my_{name} is not defined: the submission has no exercise cell for it")
        return False
    ok, message = _graded_verdict(getattr(exercises, "check_" + name), fn)
    if not ok:
        print(message)
    return ok
