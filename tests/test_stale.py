"""rollout.StaleRollout and importance_weights: a sampler some optimizer steps behind the policy, or in a lower
precision, and TRL's importance-sampling corrections of it (Lab 10); TRL's arm with no correction (recompute) and
DeepSeek-V3.2's off-policy sequence masking (off_policy_sequences, Batch.off_policy). TRL's own mask and loss against
ours: tests/test_trl_loss.py."""
import copy
import math

import pytest
import torch
from tolerance import tolerance

from utils.models.policy import completion_logprobs, load_policy
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import (
    CORRECTIONS,
    RECOMPUTE,
    Batch,
    GroupRollout,
    StaleRollout,
    StepCredit,
    importance_weights,
    off_policy_sequences,
)

CFG = dict(steps=4, batch_size=8, group_size=4, lr=1e-2, eval_every=0, eval_n=4, track_kl=False, seed=0)
PROMPTS, ANSWERS = ["12+34=", "5+6=", "7+8=", "1+1="], ["46", "11", "15", "2"]
STALE_KEYS = ("staleness", "stale_abs_log_ratio", "stale_kl", "stale_ratio_out", "is_weight_mean")


def half_right(completions, answer, **kw):
    return [float(i % 2) for i in range(len(completions))]  # every group has spread: nonzero advantages


def run(rollout, **cfg):
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, half_right, GRPOConfig(**(CFG | cfg)), progress=False,
                      rollout=rollout)
    return policy, hist


def strip(hist):
    return [{k: v for k, v in r.items() if "seconds" not in k and k not in STALE_KEYS} for r in hist]


# ---------------------------------------------------------------- importance_weights, worked by hand

L4 = math.log(4.0)


@pytest.mark.parametrize("mode, want", [
    ("token_truncate", [[3.0, 1.0, 0.0], [0.5, 1.0, 0.0]]),     # 4 -> 3; 0.5 kept (no lower bound)
    ("token_mask", [[0.0, 1.0, 0.0], [0.5, 1.0, 0.0]]),         # 4 > 3 -> 0
    ("sequence_truncate", [[3.0, 3.0, 0.0], [0.5, 0.5, 0.0]]),  # row 0: 4 * 1 -> 3; row 1: 0.5 * 1
    ("sequence_mask", [[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),
])
def test_importance_weights_by_hand(mode, want):
    log_ratio = torch.tensor([[L4, 0.0, 5.0], [-math.log(2.0), 0.0, 7.0]])  # the third token is padding
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    got = importance_weights(log_ratio, mask, mode, hi=3.0)
    assert torch.allclose(got, torch.tensor(want), atol=1e-6), (mode, got)


def test_importance_weights_lower_bound():
    """is_min: truncate raises a small ratio to it, mask drops it."""
    log_ratio, mask = torch.tensor([[-math.log(4.0), 0.0]]), torch.ones(1, 2)
    w = lambda mode, lo, hi: importance_weights(log_ratio, mask, mode, lo=lo, hi=hi)  # noqa: E731
    assert torch.allclose(w("token_truncate", 0.5, 2.0), torch.tensor([[0.5, 1.0]]))
    assert torch.allclose(w("token_mask", 0.5, 2.0), torch.tensor([[0.0, 1.0]]))
    assert torch.allclose(importance_weights(log_ratio, mask, "sequence_mask", lo=0.2, hi=None),
                          torch.tensor([[0.25, 0.25]]))
    with pytest.raises(ValueError, match="mode must be one of"):
        importance_weights(log_ratio, mask, "token")


def test_importance_weights_ignore_padding_and_refuse_inverted_bounds():
    """A log-ratio of -inf, inf or NaN on padding (a token the sampler never wrote) changes no weight: the row's
    other tokens keep theirs (issue 60: inf * 0 made the whole sequence's weight NaN). NaN on the mask, and bounds
    given in the wrong order, are errors that name them."""
    mask = torch.tensor([[1, 1, 0]])
    for pad in (math.inf, -math.inf, math.nan):
        log_ratio = torch.tensor([[L4, 0.0, pad]])
        assert torch.equal(importance_weights(log_ratio, mask, "token_truncate", hi=3.0),
                           torch.tensor([[3.0, 1.0, 0.0]]))
        assert torch.equal(importance_weights(log_ratio, mask, "sequence_mask", lo=0.5, hi=5.0),
                           torch.tensor([[4.0, 4.0, 0.0]]))
    with pytest.raises(ValueError, match="log_ratio holds NaN on the mask"):
        importance_weights(torch.tensor([[math.nan, 0.0]]), torch.ones(1, 2), "token_mask")
    with pytest.raises(ValueError, match=r"lo=3.0 must be <= hi=0.5"):
        importance_weights(torch.zeros(1, 2), torch.ones(1, 2), "token_truncate", lo=3.0, hi=0.5)


# ---------------------------------------------------------------- the sampler

def test_lag_zero_in_full_precision_is_the_on_policy_loop():
    """StaleRollout(lag=0) trains bit for bit what GroupRollout trains; it only adds its measurements, which say
    the sampler is the policy (log-ratios at the grouped forward's rounding, nothing outside the clip)."""
    pa, ha = run(GroupRollout())
    pb, hb = run(StaleRollout(lag=0))
    assert all(torch.equal(p, q) for p, q in zip(pa.parameters(), pb.parameters()))
    assert strip(ha) == strip(hb)
    assert [r["staleness"] for r in hb] == [0, 0, 0, 0]
    assert max(r["stale_abs_log_ratio"] for r in hb) < 1e-4
    assert max(r["stale_ratio_out"] for r in hb) == 0.0


def test_the_sampler_is_the_policy_of_lag_steps_ago():
    """Drive the rollout by hand, moving the policy between steps: step s's completions carry the log-probs of the
    policy's weights at step max(0, s - lag), not those of the policy now."""
    policy, tok = load_policy()
    policy = copy.deepcopy(policy)
    cfg = GRPOConfig(**CFG)
    draw = StaleRollout(lag=2).start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    seen, g = [], torch.Generator().manual_seed(1)
    for step in range(5):
        seen.append({k: v.clone() for k, v in policy.state_dict().items()})
        b = draw(step)
        ro = b.ro
        assert b.counts["staleness"] == min(step, 2)
        probe = copy.deepcopy(policy)
        for s, expect in ((max(0, step - 2), True), (step, step < 1)):
            probe.load_state_dict(seen[s])
            with torch.no_grad():
                lp, _ = completion_logprobs(probe, ro.prompt_ids, ro.prompt_mask, ro.completion_ids,
                                            ro.completion_mask, cfg.temperature)
            # the sampler's weights: its log-probs to rounding (a forward pass against the sampler's own); others: far
            gap = (lp * ro.completion_mask - ro.logprobs).abs().max().item()
            assert (gap <= tolerance(ro.logprobs)) == expect, (step, s, gap)
        with torch.no_grad():  # an "update": move every weight
            for p in policy.parameters():
                p.add_(0.02 * torch.randn(p.shape, generator=g))


def test_staleness_and_a_low_precision_sampler_show_in_the_record():
    """A sampler 2 steps behind is measurably off the policy from step 2 on; a bfloat16 sampler is off it even at
    lag 0 (the training-inference mismatch), and more than a float32 one."""
    _, h = run(StaleRollout(lag=2), steps=4)
    assert [r["staleness"] for r in h] == [0, 1, 2, 2]
    assert h[0]["stale_abs_log_ratio"] < 1e-4 < h[2]["stale_abs_log_ratio"]
    # the KL's k3 estimate is >= 0, about half the squared log-ratio for a small one, and 0 with no staleness
    assert abs(h[0]["stale_kl"]) < 1e-6 and 0 < h[2]["stale_kl"] < h[2]["stale_abs_log_ratio"]
    assert all(r["sample_seconds"] > 0 and r["measure_seconds"] > 0 for r in h)
    _, h16 = run(StaleRollout(lag=0, sampler_dtype="bfloat16"), steps=2)
    assert h16[0]["stale_abs_log_ratio"] > 1e-3


@pytest.mark.parametrize("mode", CORRECTIONS)
def test_a_correction_makes_the_policy_the_old_policy_and_weights_the_tokens(mode):
    """With a correction, ro.logprobs are the policy's own (the clip starts at ratio 1) and the importance weights
    are the sampler's ratio, so a full-precision sampler at lag 0 weighs every token about 1."""
    policy, tok = load_policy()
    policy = copy.deepcopy(policy)
    cfg = GRPOConfig(**CFG)
    b = StaleRollout(lag=0, correction=mode).start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)(0)
    ro = b.ro
    with torch.no_grad():
        lp, _ = completion_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                    cfg.temperature)
    m = ro.completion_mask.float()
    assert torch.equal(ro.logprobs, lp * m)
    assert b.weights.shape == m.shape and torch.equal(b.weights == 0, m == 0)
    assert torch.allclose(b.weights, m, atol=1e-3)
    assert abs(b.counts["is_weight_mean"] - 1.0) < 1e-3


def test_a_corrected_stale_run_trains_and_its_weights_reach_the_loss():
    """The loop multiplies the advantages by the weights: with every weight 0 (a mask that refuses every ratio)
    nothing trains; with the ordinary correction the policy moves."""
    base, _ = load_policy()
    p0, _ = run(StaleRollout(lag=1, correction="token_mask", is_max=1e-9, is_min=0.0))   # every ratio > 1e-9
    assert max((p - q).abs().max().item() for p, q in zip(p0.parameters(), base.parameters())) == 0.0
    p1, h1 = run(StaleRollout(lag=1, correction="token_truncate"))
    assert max((p - q).abs().max().item() for p, q in zip(p1.parameters(), base.parameters())) > 0
    assert all(0 < r["is_weight_mean"] <= 3.0 for r in h1)


# ---------------------------------------------------------------- TRL's no-correction arm and off-policy masking

def moved_draw(rollout, steps=3, seed=1):
    """Drive `rollout` by hand for `steps` steps, moving the policy between them (an "update": every weight nudged),
    so that a lagged sampler is off the policy. Returns (policy, cfg, the last Batch)."""
    policy, tok = load_policy()
    policy = copy.deepcopy(policy)
    cfg = GRPOConfig(**CFG)
    draw = rollout.start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    g = torch.Generator().manual_seed(seed)
    for step in range(steps):
        b = draw(step)
        with torch.no_grad():
            for p in policy.parameters():
                p.add_(0.02 * torch.randn(p.shape, generator=g))
    return policy, cfg, b


def policy_logprobs(policy, ro, cfg):
    with torch.no_grad():
        lp, _ = completion_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                    cfg.temperature)
    return lp


def test_recompute_takes_the_policys_log_probs_as_old_and_weighs_nothing():
    """TRL's vllm_importance_sampling_correction=False: the old log-probs are the policy's at batch time (the clip
    starts at ratio 1), no weight is applied (every token's is 1), and the sampler's distance is still measured."""
    policy, tok = load_policy()
    policy = copy.deepcopy(policy)
    cfg = GRPOConfig(**CFG)
    draw = StaleRollout(lag=1, correction=RECOMPUTE).start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    draw(0)
    with torch.no_grad():   # an "update" between the two draws, so the sampler of step 1 is behind
        for p in policy.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    b = draw(1)
    m = b.ro.completion_mask.float()
    assert torch.equal(b.ro.logprobs, policy_logprobs(policy, b.ro, cfg) * m)
    assert b.weights is None and "is_weight_mean" not in b.counts
    assert b.counts["staleness"] == 1 and b.counts["stale_abs_log_ratio"] > 1e-3   # the distance, ignored by the loss
    adv = torch.linspace(-1, 1, len(b.rewards))
    assert torch.equal(b.advantages(adv, cfg), adv)                          # weights of 1: the advantages as given


def test_off_policy_sequences_by_hand():
    """Mean over each sequence's tokens of log pi_sampler - log pi_policy = -(mean log-ratio), against the threshold;
    padding (the third token) never counts, whatever it holds."""
    mask = torch.tensor([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 0]])
    for pad in (0.0, math.inf, -math.inf, math.nan):
        log_ratio = torch.tensor([[-0.6, -0.2, pad], [0.4, -0.2, pad], [-0.3, pad, pad], [pad, pad, pad]])
        # means 0.4, -0.1, 0.3, and 0 for a row with no token
        assert off_policy_sequences(log_ratio, mask, 0.3).tolist() == [True, False, False, False], pad
        assert off_policy_sequences(log_ratio, mask, 0.0).tolist() == [True, False, True, False], pad
        assert off_policy_sequences(log_ratio, mask, 0.5).tolist() == [False, False, False, False], pad
    with pytest.raises(ValueError, match="threshold=-0.1 must be a finite number >= 0"):
        off_policy_sequences(torch.zeros(1, 2), torch.ones(1, 2), -0.1)
    with pytest.raises(ValueError, match="log_ratio holds NaN on the mask"):
        off_policy_sequences(torch.tensor([[math.nan, 0.0]]), torch.ones(1, 2), 0.1)
    with pytest.raises(ValueError, match="mask must be a tensor of log_ratio's shape"):
        off_policy_sequences(torch.zeros(1, 2), torch.ones(2, 2), 0.1)
    with pytest.raises(ValueError, match=r"log_ratio must be a \[N, T\] float tensor"):
        off_policy_sequences(torch.zeros(2), torch.ones(2), 0.1)


def test_the_mask_drops_exactly_the_far_sequences_with_a_negative_advantage():
    """Batch.advantages: a sequence marked off-policy loses its advantage only where it is negative; the rest keep
    theirs; importance weights multiply after the mask; per-token advantages are masked token by token."""
    from types import SimpleNamespace

    ro = SimpleNamespace(completion_ids=torch.zeros(4, 2, dtype=torch.long))
    far = torch.tensor([True, True, False, False])
    adv = torch.tensor([-1.5, 0.5, -0.5, 1.5])
    b = Batch(ro, torch.zeros(4), None, {}, off_policy=far)
    assert b.advantages(adv, None).tolist() == [0.0, 0.5, -0.5, 1.5]      # only row 0: far and negative
    assert b.counts["opsm_dropped_frac"] == 0.25
    w = torch.tensor([[2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [2.0, 1.0]])
    b = Batch(ro, torch.zeros(4), None, {}, weights=w, off_policy=far)
    assert b.advantages(adv, None).tolist() == [[0.0, 0.0], [1.0, 0.5], [-1.0, -0.5], [3.0, 1.5]]
    # per-step credit (StepRollout's): advantages [N, T], masked token by token. Step rewards in groups of 2 rows,
    # outcome_weight 0, no std scaling: each group's steps score 0 once and 1 three times (mean 0.75), so r~ is -0.75
    # or 0.25 and a token gets the sum of r~ from its step on (grpo.process_advantages)
    rewards = torch.tensor([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    steps, cfg = StepCredit(rewards, torch.ones(4, 2, dtype=bool), 0.0), SimpleNamespace(group_size=2, scale_std=False)
    plain = Batch(ro, torch.zeros(4), None, {}, steps=steps).advantages(adv, cfg)
    assert plain.tolist() == [[-0.5, 0.25], [0.5, 0.25], [-0.5, -0.75], [0.5, 0.25]]
    b = Batch(ro, torch.zeros(4), None, {}, steps=steps, off_policy=far)   # row 0's negative token goes; row 2 is near
    assert b.advantages(adv, cfg).tolist() == [[0.0, 0.25], [0.5, 0.25], [-0.5, -0.75], [0.5, 0.25]]
    assert b.counts["opsm_dropped_frac"] == 0.25
    b = Batch(ro, torch.zeros(4), None, {})
    assert torch.equal(b.advantages(adv, None), adv) and "opsm_dropped_frac" not in b.counts    # no mask: as given


@pytest.mark.parametrize("correction", [None, RECOMPUTE, "token_truncate"])
def test_stale_rollout_marks_the_sequences_past_the_threshold_against_the_sampler(correction):
    """The mask reads the sampler's log-probs and the policy's at batch time, with any correction or none: the marks
    are off_policy_sequences(log pi_policy - log pi_sampler) of the batch, and the record has their share."""
    thr = 0.0
    policy, cfg, b = moved_draw(StaleRollout(lag=2, correction=correction, off_policy_mask_threshold=thr))
    _, _, ref = moved_draw(StaleRollout(lag=2))        # the same run uncorrected: ro.logprobs are the sampler's
    assert torch.equal(b.ro.completion_ids, ref.ro.completion_ids)
    m = ref.ro.completion_mask.float()
    want = off_policy_sequences((policy_logprobs(policy, ref.ro, cfg) - ref.ro.logprobs) * m, m, thr)
    assert torch.equal(b.off_policy, want) and want.any() and (~want).any()
    assert b.counts["opsm_over_frac"] == pytest.approx(want.float().mean().item())
    assert ref.off_policy is None and "opsm_over_frac" not in ref.counts


def test_a_threshold_no_sequence_reaches_trains_as_without_it():
    """A mask that marks nothing changes nothing: the same run bit for bit (the record gains its opsm numbers);
    a threshold of 0 at lag 1 drops some sequences, and the run trains."""
    pa, ha = run(StaleRollout(lag=1))
    pb, hb = run(StaleRollout(lag=1, off_policy_mask_threshold=1e6))
    assert all(torch.equal(p, q) for p, q in zip(pa.parameters(), pb.parameters()))
    assert [{k: v for k, v in r.items() if not k.startswith("opsm")} for r in strip(hb)] == strip(ha)
    assert all(r["opsm_over_frac"] == 0.0 and r["opsm_dropped_frac"] == 0.0 for r in hb)
    pc, hc = run(StaleRollout(lag=1, off_policy_mask_threshold=0.0))
    assert any(r["opsm_dropped_frac"] > 0 for r in hc) and all(math.isfinite(r["loss"]) for r in hc)
    assert not all(torch.equal(p, q) for p, q in zip(pa.parameters(), pc.parameters()))


def test_recompute_trains_and_takes_vespo():
    """The no-correction arm applies no weight, so VESPO (refused with importance weights) takes it."""
    base, _ = load_policy()
    p, h = run(StaleRollout(lag=1, correction=RECOMPUTE), loss_type="vespo", steps=2)
    assert len(h) == 2 and max((a - c).abs().max().item() for a, c in zip(p.parameters(), base.parameters())) > 0


@pytest.mark.parametrize("kw, cfg, match", [
    (dict(lag=-1), {}, "lag"),
    (dict(off_policy_mask_threshold=-0.5), {}, "off_policy_mask_threshold=-0.5 must be a finite number >= 0"),
    (dict(off_policy_mask_threshold="high"), {}, "off_policy_mask_threshold"),
    (dict(correction="recompute "), {}, "correction must be None or one of"),
    (dict(lag=1.5), {}, "lag"),
    (dict(sampler_dtype="bf8"), {}, "sampler_dtype must be one of"),
    (dict(correction="token"), {}, "correction must be None or one of"),
    (dict(correction="token_mask", is_min=2.0, is_max=1.0), {}, "is_min"),
    (dict(correction="token_mask", is_max=0), {}, "is_max"),
    (dict(correction="token_truncate"), dict(loss_type="vespo"), "vespo"),
])
def test_bad_settings_are_refused_by_name(kw, cfg, match):
    policy, tok = load_policy()
    with pytest.raises(ValueError, match=match):
        StaleRollout(**kw).start(policy, tok, PROMPTS, ANSWERS, half_right, GRPOConfig(**(CFG | cfg)))


def test_a_correction_with_a_kl_term_weights_only_the_policy_term():
    """As trl 1.16's _compute_loss: the importance weights multiply the policy term, and beta * KL is added unweighted.
    The loop puts the weights on the advantages, so with beta > 0 a correction trains, and the KL is recorded as
    usual."""
    _, h = run(StaleRollout(lag=1, correction="token_truncate"), beta=0.04, track_kl=True, steps=3)
    assert len(h) == 3 and all(math.isfinite(r["loss"]) and r["kl"] >= 0 for r in h)
