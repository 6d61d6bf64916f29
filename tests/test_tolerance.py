"""tests/tolerance.py, the tolerance every two-implementation test compares within: values worked out by hand,
and the slack it allows is far below what a real bug moves (the shipped model's logits with a position off by
one, or a pad key not masked)."""
import pytest
import torch
from tolerance import ULPS, assert_near, assert_near_norm, assert_same_draws, tolerance

from utils.models.policy import encode_prompts, position_ids_from_mask

EPS = torch.finfo(torch.float32).eps


def test_tolerance_by_hand():
    assert tolerance(torch.tensor([0.5, -0.25])) == ULPS * EPS                # below 1: one's ulps
    assert tolerance(torch.tensor([3.0, -10.0])) == ULPS * EPS * 10.0          # the largest magnitude
    assert tolerance(torch.tensor([float("-inf"), 2.0])) == ULPS * EPS * 2.0   # infinities left out
    assert tolerance(torch.tensor([1.0], dtype=torch.float64)) == ULPS * torch.finfo(torch.float64).eps
    assert tolerance(torch.tensor([8.0]), ulps=2) == 2 * EPS * 8.0


def test_assert_near_passes_rounding_and_refuses_more():
    x = torch.tensor([10.0, -3.0, float("-inf")])
    assert_near(x + torch.tensor([10 * EPS * 10, 0.0, 0.0]), x)                # 10 ulps of 10
    with pytest.raises(AssertionError, match=r"differ by .* at \(0,\)"):
        assert_near(x + torch.tensor([100 * EPS * 10, 0.0, 0.0]), x)         # 100 ulps: more than rounding
    with pytest.raises(AssertionError, match="infinities and NaNs"):
        assert_near(torch.tensor([10.0, -3.0, 0.0]), x)
    with pytest.raises(AssertionError, match="infinities and NaNs"):
        assert_near(torch.tensor([10.0, -3.0, float("inf")]), x)              # +inf where -inf was
    with pytest.raises(AssertionError, match="shapes"):
        assert_near(x[:2], x)


def test_assert_near_norm():
    y = torch.ones(100)
    assert_near_norm(y + 1e-6, y)                                              # 1e-5 against a norm of 10
    with pytest.raises(AssertionError, match="in norm"):
        assert_near_norm(y + 1e-3, y)


def test_same_draws_greedy_parts_only_at_a_near_tie():
    theirs = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    ours = torch.tensor([[1, 2, 3], [4, 0, 0], [7, 8, 9]])                    # row 1 parts at step 1
    gaps = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1e-7, 1.0], [1.0, 1.0, 1.0]])
    assert assert_same_draws(ours, theirs, gaps, 1e-6).tolist() == [True, False, True]
    gaps[1, 1] = 0.5                                                           # a clear winner: a bug
    with pytest.raises(AssertionError, match="row 1 parts at step 1"):
        assert_same_draws(ours, theirs, gaps, 1e-6)


def test_same_draws_sampling_allows_one_flip():
    theirs = torch.zeros(4, 3, dtype=torch.long)
    ours = theirs.clone()
    ours[2, 1] = 5
    assert assert_same_draws(ours, theirs, None, 0.0).tolist() == [True, True, False, True]
    ours[3, 0] = 5
    with pytest.raises(AssertionError, match="2 rows differ"):
        assert_same_draws(ours, theirs, None, 0.0)


def test_real_bugs_move_logits_far_beyond_the_tolerance(shipped):
    """What the tolerance must still catch, on the shipped model: left-padded prompts scored with positions off by
    one, or with the pad keys not masked, move the logits by far more than 64 ulps."""
    model, tok = shipped
    ids, mask = encode_prompts(tok, ["12+3=", "100-1=", "5+5="])
    pos = position_ids_from_mask(mask)
    with torch.no_grad():
        right = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
        shifted = model(input_ids=ids, attention_mask=mask, position_ids=pos + 1).logits[:, -1]
        unmasked = model(input_ids=ids, attention_mask=torch.ones_like(mask), position_ids=pos).logits[:, -1]
    tol = tolerance(right)
    assert (shifted - right).abs().max() > 100 * tol
    assert (unmasked - right).abs().max() > 100 * tol
    for wrong in (shifted, unmasked):
        with pytest.raises(AssertionError):
            assert_near(wrong, right)


def test_float64_units_when_asked():
    x = torch.tensor([1.0], dtype=torch.float64)
    assert_near(x + 1e-9, x)                                     # float32's units by default: 64 ulps = 7.6e-6
    assert_near(x + 10 * torch.finfo(torch.float64).eps, x, dtype=torch.float64)
    with pytest.raises(AssertionError):
        assert_near(x + 1e-9, x, dtype=torch.float64)            # fine in float32's units, not in float64's
    with pytest.raises(AssertionError):
        assert_near_norm(x + 1e-9, x, dtype=torch.float64)
