"""utils.health: expected zero-spread share, the health check, the entropy-reward fit."""
import math

import numpy as np
import pytest

from utils.health import ENTROPY_FLOOR, KL_CEILING, STD_FLOOR, expected_zero_spread, fit_entropy_reward, health_check


def test_expected_zero_spread_hand_values():
    assert expected_zero_spread(0.5, 2) == pytest.approx(0.5)          # .25 + .25
    assert expected_zero_spread(0.0, 8) == 1.0 and expected_zero_spread(1.0, 8) == 1.0
    assert expected_zero_spread(0.3, 8) == pytest.approx(0.3 ** 8 + 0.7 ** 8)   # 0.0577136
    assert expected_zero_spread(0.3, 8) == pytest.approx(0.0577136, abs=1e-7)
    np.testing.assert_allclose(expected_zero_spread([0.5, 0.0], 2), [0.5, 1.0])


@pytest.mark.parametrize("p,g", [(-0.1, 8), (1.5, 8), (float("nan"), 8), (0.5, 0), (0.5, 2.0)])
def test_expected_zero_spread_bad_input(p, g):
    with pytest.raises(ValueError):
        expected_zero_spread(p, g)


def rec(std=0.3, ent=0.5, kl=0.1):
    return {"group_reward_std": std, "entropy": ent, "kl": kl}


def test_health_check_healthy_run_has_no_flags():
    out = health_check([rec()] * 10)
    assert out["ok"] and out["flags"] == []
    assert out["values"] == pytest.approx({"group_reward_std": 0.3, "entropy": 0.5, "kl": 0.1})


def test_health_check_flags_each_failure_with_its_threshold():
    out = health_check([rec(std=0.05, ent=0.02, kl=12.0)] * 5)
    assert not out["ok"] and len(out["flags"]) == 3
    text = " ".join(out["flags"])
    assert f"< {STD_FLOOR}" in text and f"< {ENTROPY_FLOOR}" in text and f"> {KL_CEILING}" in text


def test_health_check_averages_the_last_window_only():
    """Early collapse-like steps are outside the window; the last 5 average entropy (4*.5 + 0)/5 = .4."""
    hist = [rec(ent=0.0)] * 20 + [rec()] * 4 + [rec(ent=0.0)]
    out = health_check(hist, window=5)
    assert out["values"]["entropy"] == pytest.approx(0.4) and out["ok"]
    assert not health_check(hist, window=1)["ok"]


def test_health_check_custom_thresholds():
    assert not health_check([rec(ent=0.5)], entropy_floor=0.6)["ok"]
    assert health_check([rec(kl=50.0)], kl_ceiling=100.0)["ok"]


def test_health_check_bad_input_names_what_is_missing():
    with pytest.raises(ValueError, match="non-empty history"):
        health_check([])
    with pytest.raises(ValueError, match="non-empty history"):
        health_check(None)
    with pytest.raises(ValueError, match=r"lacks \['kl'\].*track_kl"):
        health_check([{"group_reward_std": 0.3, "entropy": 0.5, "kl": None}])
    with pytest.raises(ValueError, match=r"lacks \['entropy', 'group_reward_std'\]"):
        health_check([{"kl": 0.1}])
    with pytest.raises(ValueError, match="window"):
        health_check([rec()], window=0)


def test_fit_entropy_reward_recovers_hand_case():
    """H = 0 and ln 2 give exp(H) = 1 and 2; R = .7 and .2 lie on R = -0.5 exp(H) + 1.2."""
    a, b = fit_entropy_reward([0.0, math.log(2)], [0.7, 0.2])
    assert a == pytest.approx(0.5) and b == pytest.approx(1.2)


def test_fit_entropy_reward_least_squares_on_noisy_points():
    rng = np.random.default_rng(0)
    h = rng.uniform(0.05, 0.8, 200)
    r = -0.4 * np.exp(h) + 1.0 + rng.normal(0, 0.01, 200)
    a, b = fit_entropy_reward(h, r)
    assert a == pytest.approx(0.4, abs=0.02) and b == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("h,r", [([0.1], [0.5]), ([0.1, 0.2], [0.5]), ([0.3, 0.3], [0.1, 0.2]),
                                 ([0.1, float("nan")], [0.1, 0.2])])
def test_fit_entropy_reward_bad_input(h, r):
    with pytest.raises(ValueError):
        fit_entropy_reward(h, r)


def test_health_check_names_the_failed_checks():
    assert health_check([rec(std=0.05, ent=0.02, kl=12.0)])["failed"] == ["spread", "entropy", "kl"]
    assert health_check([rec(ent=0.02)])["failed"] == ["entropy"]
    assert health_check([rec()])["failed"] == []


def test_masked_token_entropy_hand_values():
    import torch
    from utils.health import masked_token_entropy
    # uniform over 4 tokens: ln 4; a peaked distribution: ~0; the third position is masked out
    logits = torch.tensor([[[0.0, 0, 0, 0], [100.0, 0, 0, 0], [0.0, 0, 0, 0]]])     # [1, 3, 4]
    mask = torch.tensor([[1, 1, 0]])
    assert masked_token_entropy(logits, mask).item() == pytest.approx(math.log(4) / 2, abs=1e-6)
    # p = (.75, .25) from logits (ln 3, 0): H = -(.75 ln .75 + .25 ln .25) = 0.562335
    two = torch.tensor([[[math.log(3), 0.0]]])
    assert masked_token_entropy(two, torch.ones(1, 1)).item() == pytest.approx(0.562335, abs=1e-6)
    assert masked_token_entropy(two, torch.zeros(1, 1)).item() == 0.0   # empty mask: 0, not nan
