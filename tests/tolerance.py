"""How close two implementations of one floating-point computation must agree (ours against transformers,
against TRL, the CUDA path against the CPU's, a fast path against a slow one).

Two implementations that do the same sums in another order, or through another matrix-multiply kernel, agree
only to rounding, and which kernel runs depends on the CPU: MKL, oneDNN and ATen pick AVX-512, AVX2 or SSE code
by the machine's instruction sets (docs/TESTING.md, "Every CPU"). So a test that compares two implementations
compares within a tolerance derived from the dtype and the magnitudes, and a test that runs the same code twice
(determinism, the run cache, resuming) may compare bit for bit.

Measured (tools/isa.py's probe, 2026-11-28): the lean decoder's logits and transformers' differ by at most
2.2 units in the last place of the largest logit across MKL's AVX-512, AVX2, SSE4.2 and compatible paths on an
AMD EPYC with AVX-512, at 1 and 2 threads. ULPS = 64 leaves a margin of about 30; a real bug moves a logit by far
more (tests/test_tolerance.py: a position off by one, a pad key not masked).
"""
import torch

ULPS = 64


def tolerance(reference, ulps=ULPS, dtype=None):
    """The absolute tolerance for `reference` (a float tensor): `ulps` units in the last place of its largest
    magnitude (at least of 1.0, so that values near zero get the same absolute slack as values near one), in
    `dtype`'s units (default: reference's own; float32 for integers)."""
    dtype = dtype or (reference.dtype if reference.is_floating_point() else torch.float32)
    eps = torch.finfo(dtype).eps
    finite = reference[torch.isfinite(reference)]
    scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    return ulps * eps * scale


def assert_near(ours, theirs, what="values", ulps=ULPS, dtype=None):
    """ours and theirs agree to rounding: the same shape, infinities and NaNs in the same places, and the finite
    values within tolerance(theirs, ulps), counted in float32's units unless dtype says otherwise (dtype=torch.float64
    for two float64 computations). The message says by how much and where they part."""
    ours, theirs = torch.as_tensor(ours), torch.as_tensor(theirs)
    assert ours.shape == theirs.shape, f"{what}: shapes {tuple(ours.shape)} and {tuple(theirs.shape)}"
    ours, theirs, narrow = _same_dtype(ours, theirs, dtype)
    special = ~torch.isfinite(theirs)
    assert torch.equal(~torch.isfinite(ours), special) and torch.equal(ours[special].nan_to_num(),
                                                                       theirs[special].nan_to_num()), \
        f"{what}: the infinities and NaNs are not in the same places"
    diff = (ours - theirs).abs().masked_fill(special, 0)
    tol = tolerance(theirs, ulps, narrow)
    worst = diff.max().item() if diff.numel() else 0.0
    where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)) if diff.numel() else ()
    assert worst <= tol, (f"{what}: differ by {worst:.3g} at {where}, more than {ulps} units in the last place of "
                          f"the largest magnitude ({tol:.3g})")


def assert_near_norm(ours, theirs, what="gradient", ulps=1024, dtype=None):
    """A gradient (or any long sum of products) agrees to rounding in norm: ||ours - theirs|| at most `ulps`
    units in the last place of ||theirs||. The default, 1024 (1.2e-4 relative in float32), allows for a
    backward pass's longer chains of sums; a wrong mask or a missing term moves the norm by percents. The eps is
    float32's unless dtype says otherwise."""
    ours, theirs, narrow = _same_dtype(ours, theirs, dtype)
    eps = torch.finfo(narrow).eps
    gap, size = (ours - theirs).norm().item(), theirs.norm().item()
    floor = eps / 10  # a gradient that is zero on both sides: 1.2e-8 in float32
    assert gap <= ulps * eps * size + floor, f"{what}: differ by {gap:.3g} in norm against a norm of {size:.3g}"


def _same_dtype(a, b, dtype):
    """(a, b, units): a and b detached on the CPU in float64 (so the subtraction adds no rounding of its own), and
    the dtype whose rounding the tolerance counts: `dtype`, or float32, the precision the course computes in (a
    float64 tensor may hold a float32 result: its dtype does not say how it was computed)."""
    return a.detach().cpu().double(), b.detach().cpu().double(), dtype or torch.float32


def assert_same_draws(ours, theirs, gaps, tol, what="samples", flips=1):
    """Two samplers that draw the same random numbers from distributions equal to rounding write the same tokens,
    except where a draw falls within rounding of a boundary between two tokens.

    ours, theirs: token ids [N, T] (padding included). gaps: [N, T], at each step of `theirs` how far its draw was
    from writing another token, in the units of tol (for greedy decoding: the top-two logit gap; for sampling,
    unknown: pass None). A row may part from `theirs` only at a step whose gap is within tol (greedy), or, where
    the gaps are unknown, in at most `flips` rows (a flip needs a uniform within ~1e-6 of a boundary: expected
    far below one in a few thousand draws, so more than one is a bug, not rounding). Returns the rows that agree.
    """
    assert ours.shape == theirs.shape, f"{what}: shapes {tuple(ours.shape)} and {tuple(theirs.shape)}"
    differ = (ours != theirs)
    rows = differ.any(1)
    if gaps is None:
        assert int(rows.sum()) <= flips, f"{what}: {int(rows.sum())} rows differ, more than rounding explains"
    else:
        first = differ.float().argmax(1)  # the first step where a row parts
        for r in rows.nonzero().flatten().tolist():
            g = float(gaps[r, first[r]])
            assert g <= tol, (f"{what}: row {r} parts at step {int(first[r])}, where the top two were {g:.3g} apart "
                              f"(more than rounding, {tol:.3g})")
    return ~rows
