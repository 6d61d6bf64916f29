"""What every lab's checks share: ExerciseError and the helpers that compare a result with the reference."""
import torch


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
