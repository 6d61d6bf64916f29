"""utils.eval.health: expected zero-spread share, the health check, the entropy-reward fit."""
import math

import numpy as np
import pytest

from utils.eval.health import (
    ENTROPY_RATIO,
    KL_CEILING,
    STD_FLOOR,
    expected_zero_spread,
    fit_entropy_reward,
    health_check,
)


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
    """Start at 0.5 nats (the first 5 steps): the floor is ENTROPY_RATIO * 0.5 = 0.25; the last 5 sit at 0.02."""
    out = health_check([rec()] * 5 + [rec(std=0.05, ent=0.02, kl=12.0)] * 5)
    assert ENTROPY_RATIO == 0.5 and out["entropy_floor"] == pytest.approx(0.25)
    assert not out["ok"] and out["failed"] == ["spread", "entropy", "kl"] and len(out["flags"]) == 3
    text = " ".join(out["flags"])
    assert f"< {STD_FLOOR}" in text and "< 0.250 = 0.5 x the first steps' 0.500" in text and f"> {KL_CEILING}" in text


def test_health_check_entropy_floor_is_relative_to_the_first_steps():
    """The same end entropy, 0.3 nats, is a collapse from 0.8 (floor 0.4) and not from 0.5 (floor 0.25)."""
    assert health_check([rec(ent=0.8)] * 5 + [rec(ent=0.3)] * 5)["failed"] == ["entropy"]
    assert health_check([rec(ent=0.5)] * 5 + [rec(ent=0.3)] * 5)["ok"]
    # just either side of the floor: 0.249 flags, 0.251 does not (start 0.5)
    assert health_check([rec()] * 5 + [rec(ent=0.249)] * 5)["failed"] == ["entropy"]
    assert health_check([rec()] * 5 + [rec(ent=0.251)] * 5)["ok"]
    # the start is the mean of the first 5 steps, (0.9 + 4 * 0.4) / 5 = 0.5, so one high first step does not decide
    out = health_check([rec(ent=0.9)] + [rec(ent=0.4)] * 4 + [rec(ent=0.3)] * 5)
    assert out["entropy_floor"] == pytest.approx(0.25) and out["ok"]
    # window 2: start (0.9 + 0.4) / 2 = 0.65, floor 0.325, end 0.3: flagged
    assert health_check([rec(ent=0.9)] + [rec(ent=0.4)] * 4 + [rec(ent=0.3)] * 5, window=2)["failed"] == ["entropy"]


def test_health_check_averages_the_last_window_only():
    """Early collapse-like steps are outside the window; the last 5 average entropy (4*.5 + 0)/5 = .4,
    above the floor 0.25 (half the first 5 steps' 0.5); the last step alone (0.0) is under it."""
    hist = [rec()] * 5 + [rec(ent=0.0)] * 20 + [rec()] * 4 + [rec(ent=0.0)]
    out = health_check(hist, window=5)
    assert out["values"]["entropy"] == pytest.approx(0.4) and out["ok"]
    assert not health_check(hist, window=1)["ok"]


def test_health_check_custom_thresholds():
    assert health_check([rec(ent=0.5)] * 2, entropy_ratio=0.99)["ok"]
    assert health_check([rec(ent=0.5)] * 5 + [rec(ent=0.45)] * 5, entropy_ratio=0.95)["failed"] == ["entropy"]
    assert health_check([rec(kl=50.0)], kl_ceiling=100.0)["ok"]
    for bad in (0, 1, 1.5, "half"):
        with pytest.raises(ValueError, match="entropy_ratio"):
            health_check([rec()], entropy_ratio=bad)


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
    assert health_check([rec()] * 5 + [rec(std=0.05, ent=0.02, kl=12.0)] * 5)["failed"] == ["spread", "entropy", "kl"]
    assert health_check([rec()] * 5 + [rec(ent=0.02)] * 5)["failed"] == ["entropy"]
    assert health_check([rec()])["failed"] == []
    assert health_check([rec(ent=0.02)])["failed"] == [], "a run that starts low has not collapsed by itself"


def test_masked_token_entropy_hand_values():
    import torch

    from utils.eval.health import token_entropy
    # uniform over 4 tokens: ln 4; a peaked distribution: ~0; the third position is masked out
    logits = torch.tensor([[[0.0, 0, 0, 0], [100.0, 0, 0, 0], [0.0, 0, 0, 0]]])     # [1, 3, 4]
    mask = torch.tensor([[1, 1, 0]])
    assert token_entropy(logits, mask).item() == pytest.approx(math.log(4) / 2, abs=1e-6)
    # p = (.75, .25) from logits (ln 3, 0): H = -(.75 ln .75 + .25 ln .25) = 0.562335
    two = torch.tensor([[[math.log(3), 0.0]]])
    assert token_entropy(two, torch.ones(1, 1)).item() == pytest.approx(0.562335, abs=1e-6)
    assert token_entropy(two, torch.zeros(1, 1)).item() == 0.0   # empty mask: 0, not nan


def test_health_check_flags_truncation_only_when_recorded_and_over_the_ceiling():
    """truncated_frac averaged over the last 5 steps: (0.2 * 3 + 0 * 2) / 5 = 0.12 > 0.1 is flagged; 0.1 is not
    (the ceiling itself passes); a history that does not record it (TRL's without clipped_ratio) is not judged."""
    from utils.eval.health import TRUNCATED_CEILING
    assert TRUNCATED_CEILING == 0.1
    cut = [rec() | {"truncated_frac": t} for t in (0.0, 0.0, 0.2, 0.2, 0.2)]
    out = health_check([rec()] * 5 + cut)
    assert out["failed"] == ["truncated"] and out["values"]["truncated_frac"] == pytest.approx(0.12)
    assert "12% of them hit max_new_tokens" in out["flags"][0] and "raise max_new_tokens" in out["flags"][0]
    at = health_check([rec() | {"truncated_frac": 0.1}] * 10)
    assert at["ok"] and at["values"]["truncated_frac"] == pytest.approx(0.1)
    assert "truncated_frac" not in health_check([rec()] * 10)["values"]
    partly = health_check([rec() | {"truncated_frac": 0.9}] * 9 + [rec()])   # the last step lacks it
    assert partly["ok"]
    assert health_check([rec()] * 5 + cut, truncated_ceiling=0.15)["ok"]


def test_summarize_by_hand():
    from utils.eval.health import summarize
    hist = [{"reward_mean": r, "zero_spread_frac": z, "truncated_frac": None, "kl": k, "entropy": e}
            for r, z, k, e in [(0.1, 0.5, 0.0, 2.0), (0.2, 0.4, 0.01, 2.0), (0.3, 0.3, 0.02, 1.0),
                               (0.4, 0.2, None, 0.5)]]
    s = summarize(hist, window=2)
    assert abs(s["reward_mean"] - 0.35) < 1e-9 and abs(s["zero_spread_frac"] - 0.25) < 1e-9
    assert s["truncated_frac"] is None and abs(s["kl"] - 0.02) < 1e-9   # None rows skipped
    assert abs(s["entropy_ratio"] - 0.75 / 2.0) < 1e-9                   # last two over first two
    with pytest.raises(ValueError, match="non-empty list"):
        summarize([])


def test_diagnose_rules_by_hand():
    from utils.eval.health import DIAGNOSES, diagnose
    ok = dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9)
    assert diagnose(ok) == []
    assert diagnose({**ok, "zero_spread_frac": 0.8, "reward_mean": 0.49}) == ["no_signal_all_wrong"]
    assert diagnose({**ok, "zero_spread_frac": 0.8, "reward_mean": 0.5}) == ["no_signal_all_right"]
    assert diagnose({**ok, "zero_spread_frac": 0.79, "reward_mean": 0.0}) == []
    assert diagnose({**ok, "truncated_frac": 0.11}) == ["truncated"] and diagnose({**ok, "truncated_frac": 0.1}) == []
    assert diagnose({**ok, "kl": 9e-5}) == ["not_moving"] and diagnose({**ok, "kl": 1e-4}) == []
    assert diagnose({**ok, "entropy_ratio": 0.49}) == ["collapsing"]
    assert diagnose({**ok, "kl": 10.5}) == ["kl_exploding"] and diagnose({**ok, "kl": 10.0}) == []
    assert diagnose({k: None for k in ok}) == []
    every = diagnose(dict(reward_mean=0.0, zero_spread_frac=1.0, truncated_frac=1.0, kl=0.0, entropy_ratio=0.1))
    assert every == ["no_signal_all_wrong", "truncated", "not_moving", "collapsing"]
    assert set(every) | {"no_signal_all_right", "diverged", "kl_exploding"} == set(DIAGNOSES)
    assert diagnose({**ok, "kl": 50.0, "entropy_ratio": 0.1}) == ["kl_exploding", "collapsing"]
    from utils.eval.health import TRL_SIGNALS
    from utils.rl.trl_trainer import TRL_KEYS
    assert set(TRL_SIGNALS) == set(DIAGNOSES)
    named = {k.strip().split(" ")[0] for v in TRL_SIGNALS.values() for k in v.split(",")}
    assert named - {"completions/mean_length"} <= set(TRL_KEYS), named - set(TRL_KEYS)   # keys TRL really logs
    assert diagnose({**ok, "kl": float("nan")}) == ["diverged"]
